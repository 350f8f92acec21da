"""Client quotas: DescribeClientQuotas and AlterClientQuotas (KIP-546, Kafka's message specs)."""
from pylog.core.protocol.facts import Acl, Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import BOOL, FLOAT64, INT8, INT16, INT32, STRING

_NULL = dict(nullable="0+", default=None)

# an entity: one (type, name) per component; a null name is the type's default entity
_ENTITY = [
    F("entity_type", STRING),
    F("entity_name", STRING, **_NULL),
]

DESCRIBE_CLIENT_QUOTAS = Api(48, "DescribeClientQuotas", "0-1", "1+",
    request=[
        F("components", [
            F("entity_type", STRING),
            F("match_type", INT8),  # 0 exact name, 1 default entity, 2 any specified name
            F("match", STRING, **_NULL),
        ]),
        F("strict", BOOL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, **_NULL),
        F("entries", [
            F("entity", _ENTITY),
            F("values", [
                F("key", STRING),
                F("value", FLOAT64),
            ]),
        ], **_NULL),
    ],
)

ALTER_CLIENT_QUOTAS = Api(49, "AlterClientQuotas", "0-1", "1+",
    request=[
        F("entries", [
            F("entity", _ENTITY),
            F("ops", [
                F("key", STRING),
                F("value", FLOAT64),
                F("remove", BOOL),
            ]),
        ]),
        F("validate_only", BOOL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("entries", [
            F("error_code", INT16),
            F("error_message", STRING, **_NULL),
            F("entity", _ENTITY),
        ]),
    ],
)

APIS = [DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
DESCRIBE_CLIENT_QUOTAS.facts = Facts(acl=Acl("DESCRIBE_CONFIGS", "CLUSTER"))
ALTER_CLIENT_QUOTAS.facts = Facts(acl=Acl("ALTER_CONFIGS", "CLUSTER"))
