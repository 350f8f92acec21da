"""Helpers the tests share: broker, Kafka, Spark and client fixtures, waiting, subprocess helpers."""
