"""Typed definitions of Kafka's broker, topic and client properties.

Names, types and defaults are Kafka's (4.x). Values arrive as strings (from
.properties files, -X flags, CreateTopics configs) and are converted and
validated here once, so the rest of the code reads typed values.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pylog.core.lazy_exports import lazy_getattr

# imported on first use (PEP 562), as pylog.core.client: a client command needs its own configs,
# not the broker's and topics' tables
_MODULES = {  # module: the names it gives the package
    "broker": "BROKER_CONFIGS",
    "client": "CONSUMER_CONFIGS PRODUCER_CONFIGS",
    "definitions": (
        "BOOLEAN CLASS COMPRESSION_TYPES CONFIG_TYPE_IDS DOUBLE INT INT_MAX LIST LONG "
        "LONG_MAX PASSWORD SHORT STRING Config ConfigDef ConfigError ConfigSet at_least "
        "between definition one_of split_list"),
    "security": "BROKER_SECURITY_CONFIGS SSL_CONFIGS",
    "topic": "TOPIC_CONFIGS topic_defaults_from_broker",
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


__getattr__ = lazy_getattr(__name__, _MODULES)


__all__ = [
    "BOOLEAN", "BROKER_CONFIGS", "BROKER_SECURITY_CONFIGS", "CLASS", "COMPRESSION_TYPES", "CONFIG_TYPE_IDS",
    "CONSUMER_CONFIGS", "DOUBLE", "INT", "INT_MAX", "LIST", "LONG", "LONG_MAX", "PASSWORD", "PRODUCER_CONFIGS",
    "SHORT", "SSL_CONFIGS", "STRING", "TOPIC_CONFIGS", "Config", "ConfigDef", "ConfigError", "ConfigSet", "at_least", "definition",
    "between", "one_of", "split_list", "topic_defaults_from_broker",
]
