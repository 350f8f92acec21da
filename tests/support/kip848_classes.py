"""Kafka's KIP-848 message classes, by API key."""
from __future__ import annotations


KEYS = (68, 69)
