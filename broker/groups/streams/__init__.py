"""Streams groups (KIP-1071): the broker assigns Kafka Streams tasks."""
