"""SaslAuthenticate, the ACL APIs and the SCRAM credential APIs (Kafka's message specs).

CreateAcls/DescribeAcls/DeleteAcls start at v1: v0 predates pattern types and
no current client sends it.
"""
from pylog.core.protocol.facts import Acl, Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import BYTES, INT8, INT16, INT32, INT64, STRING

_NULL = dict(nullable="0+", default=None)

SASL_AUTHENTICATE = Api(36, "SaslAuthenticate", "0-2", "2+",
    request=[F("auth_bytes", BYTES)],
    response=[
        F("error_code", INT16),
        F("error_message", STRING, **_NULL),
        F("auth_bytes", BYTES),
        F("session_lifetime_ms", INT64, "1+", default=0),
    ],
)

# an ACL filter: DescribeAcls' request, and each of DeleteAcls' filters
_ACL_FILTER = [
    F("resource_type_filter", INT8),
    F("resource_name_filter", STRING, **_NULL),
    F("pattern_type_filter", INT8, default=3),
    F("principal_filter", STRING, **_NULL),
    F("host_filter", STRING, **_NULL),
    F("operation", INT8),
    F("permission_type", INT8),
]

DESCRIBE_ACLS = Api(29, "DescribeAcls", "1-3", "2+",
    request=_ACL_FILTER,
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, **_NULL),
        F("resources", [
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("pattern_type", INT8, default=3),
            F("acls", [
                F("principal", STRING),
                F("host", STRING),
                F("operation", INT8),
                F("permission_type", INT8),
            ]),
        ]),
    ],
)

CREATE_ACLS = Api(30, "CreateAcls", "1-3", "2+",
    request=[
        F("creations", [
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("resource_pattern_type", INT8, default=3),
            F("principal", STRING),
            F("host", STRING),
            F("operation", INT8),
            F("permission_type", INT8),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("results", [
            F("error_code", INT16),
            F("error_message", STRING, **_NULL),
        ]),
    ],
)

DELETE_ACLS = Api(31, "DeleteAcls", "1-3", "2+",
    request=[
        F("filters", _ACL_FILTER),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("filter_results", [
            F("error_code", INT16),
            F("error_message", STRING, **_NULL),
            F("matching_acls", [
                F("error_code", INT16),
                F("error_message", STRING, **_NULL),
                F("resource_type", INT8),
                F("resource_name", STRING),
                F("pattern_type", INT8, default=3),
                F("principal", STRING),
                F("host", STRING),
                F("operation", INT8),
                F("permission_type", INT8),
            ]),
        ]),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS = Api(50, "DescribeUserScramCredentials", "0", "0+",
    request=[F("users", [F("name", STRING)], nullable="0+")],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, **_NULL),
        F("results", [
            F("user", STRING),
            F("error_code", INT16),
            F("error_message", STRING, **_NULL),
            F("credential_infos", [
                F("mechanism", INT8),
                F("iterations", INT32),
            ]),
        ]),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS = Api(51, "AlterUserScramCredentials", "0", "0+",
    request=[
        F("deletions", [F("name", STRING), F("mechanism", INT8)]),
        F("upsertions", [
            F("name", STRING),
            F("mechanism", INT8),
            F("iterations", INT32),
            F("salt", BYTES),
            F("salted_password", BYTES),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("results", [
            F("user", STRING),
            F("error_code", INT16),
            F("error_message", STRING, **_NULL),
        ]),
    ],
)

APIS = [SASL_AUTHENTICATE, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS, DESCRIBE_USER_SCRAM_CREDENTIALS,
        ALTER_USER_SCRAM_CREDENTIALS]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
SASL_AUTHENTICATE.facts = Facts(open=True)
DESCRIBE_ACLS.facts = DESCRIBE_USER_SCRAM_CREDENTIALS.facts = Facts(acl=Acl("DESCRIBE", "CLUSTER"))
CREATE_ACLS.facts = DELETE_ACLS.facts = ALTER_USER_SCRAM_CREDENTIALS.facts = Facts(acl=Acl("ALTER", "CLUSTER"))
