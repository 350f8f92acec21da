"""The broker node: lifecycle of every component, settings, timers, producer-id allocation."""
