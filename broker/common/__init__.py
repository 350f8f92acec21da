"""Shared low-level pieces of the broker: JSON state files, the timers of the coordinators, request-body readers."""
