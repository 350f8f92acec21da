"""Typed definitions of Kafka's broker, topic and client properties.

Names, types and defaults are Kafka's (4.x). Values arrive as strings (from
.properties files, -X flags, CreateTopics configs) and are converted and
validated here once, so the rest of the code reads typed values.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# imported on first use (PEP 562), as pylog.core.client: a client command needs its own configs,
# not the broker's and topics' tables
_WHERE = {
    "BROKER_CONFIGS": "broker", "CONSUMER_CONFIGS": "client", "PRODUCER_CONFIGS": "client",
    "BOOLEAN": "definitions", "CLASS": "definitions", "COMPRESSION_TYPES": "definitions",
    "CONFIG_TYPE_IDS": "definitions", "DOUBLE": "definitions", "INT": "definitions", "INT_MAX": "definitions",
    "LIST": "definitions", "LONG": "definitions", "LONG_MAX": "definitions", "PASSWORD": "definitions",
    "SHORT": "definitions", "STRING": "definitions", "Config": "definitions", "ConfigDef": "definitions",
    "ConfigError": "definitions", "ConfigSet": "definitions", "at_least": "definitions",
    "between": "definitions", "definition": "definitions", "one_of": "definitions",
    "split_list": "definitions", "BROKER_SECURITY_CONFIGS": "security", "SSL_CONFIGS": "security",
    "TOPIC_CONFIGS": "topic", "topic_defaults_from_broker": "topic",
}

if TYPE_CHECKING:
    from pylog.core.config.broker import BROKER_CONFIGS
    from pylog.core.config.client import CONSUMER_CONFIGS, PRODUCER_CONFIGS
    from pylog.core.config.definitions import (
        BOOLEAN, CLASS, COMPRESSION_TYPES, CONFIG_TYPE_IDS, DOUBLE, INT, INT_MAX, LIST, LONG, LONG_MAX, PASSWORD, SHORT,
        STRING, Config, ConfigDef, ConfigError, ConfigSet, at_least, between, definition, one_of, split_list,
    )
    from pylog.core.config.security import BROKER_SECURITY_CONFIGS, SSL_CONFIGS
    from pylog.core.config.topic import TOPIC_CONFIGS, topic_defaults_from_broker


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BOOLEAN", "BROKER_CONFIGS", "BROKER_SECURITY_CONFIGS", "CLASS", "COMPRESSION_TYPES", "CONFIG_TYPE_IDS",
    "CONSUMER_CONFIGS", "DOUBLE", "INT", "INT_MAX", "LIST", "LONG", "LONG_MAX", "PASSWORD", "PRODUCER_CONFIGS",
    "SHORT", "SSL_CONFIGS", "STRING", "TOPIC_CONFIGS", "Config", "ConfigDef", "ConfigError", "ConfigSet", "at_least", "definition",
    "between", "one_of", "split_list", "topic_defaults_from_broker",
]
