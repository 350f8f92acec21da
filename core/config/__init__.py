"""Typed definitions of Kafka's broker, topic and client properties.

Names, types and defaults are Kafka's (4.x). Values arrive as strings (from
.properties files, -X flags, CreateTopics configs) and are converted and
validated here once, so the rest of the code reads typed values.
"""
from __future__ import annotations

from pylog.core.config.broker import BROKER_CONFIGS
from pylog.core.config.client import CONSUMER_CONFIGS, PRODUCER_CONFIGS
from pylog.core.config.definitions import (
    BOOLEAN, CLASS, COMPRESSION_TYPES, CONFIG_TYPE_IDS, DOUBLE, INT, INT_MAX, LIST, LONG, LONG_MAX, PASSWORD, SHORT,
    STRING, Config, ConfigDef, ConfigError, ConfigSet, at_least, between, definition, one_of, split_list,
)
from pylog.core.config.security import BROKER_SECURITY_CONFIGS, SSL_CONFIGS
from pylog.core.config.topic import TOPIC_CONFIGS, topic_defaults_from_broker

__all__ = [
    "BOOLEAN", "BROKER_CONFIGS", "BROKER_SECURITY_CONFIGS", "CLASS", "COMPRESSION_TYPES", "CONFIG_TYPE_IDS",
    "CONSUMER_CONFIGS", "DOUBLE", "INT", "INT_MAX", "LIST", "LONG", "LONG_MAX", "PASSWORD", "PRODUCER_CONFIGS",
    "SHORT", "SSL_CONFIGS", "STRING", "TOPIC_CONFIGS", "Config", "ConfigDef", "ConfigError", "ConfigSet", "at_least", "definition",
    "between", "one_of", "split_list", "topic_defaults_from_broker",
]
