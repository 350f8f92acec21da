"""The delegation token APIs (KIP-48): create, renew, expire and describe (Kafka's message specs).

Every version below 1 was removed in Kafka 4; v2 is the first flexible one, v3 adds the
owner a token is created for (KIP-373) and the requester beside it.
"""
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import BYTES, INT16, INT32, INT64, STRING

_PRINCIPAL = [F("principal_type", STRING), F("principal_name", STRING)]

CREATE_DELEGATION_TOKEN = Api(38, "CreateDelegationToken", "1-3", "2+",
    request=[
        F("owner_principal_type", STRING, "3+", nullable="3+", default=None),
        F("owner_principal_name", STRING, "3+", nullable="3+", default=None),
        F("renewers", _PRINCIPAL),
        F("max_lifetime_ms", INT64),
    ],
    response=[
        F("error_code", INT16),
        *_PRINCIPAL,
        F("token_requester_principal_type", STRING, "3+", default=""),
        F("token_requester_principal_name", STRING, "3+", default=""),
        F("issue_timestamp_ms", INT64),
        F("expiry_timestamp_ms", INT64),
        F("max_timestamp_ms", INT64),
        F("token_id", STRING),
        F("hmac", BYTES),
        F("throttle_time_ms", INT32),
    ],
)

_HMAC_PERIOD = lambda period: [F("hmac", BYTES), F(period, INT64)]  # noqa: E731
_EXPIRY_ANSWER = [F("error_code", INT16), F("expiry_timestamp_ms", INT64), F("throttle_time_ms", INT32)]

RENEW_DELEGATION_TOKEN = Api(39, "RenewDelegationToken", "1-2", "2+",
    request=_HMAC_PERIOD("renew_period_ms"), response=_EXPIRY_ANSWER)

EXPIRE_DELEGATION_TOKEN = Api(40, "ExpireDelegationToken", "1-2", "2+",
    request=_HMAC_PERIOD("expiry_time_period_ms"), response=_EXPIRY_ANSWER)

DESCRIBE_DELEGATION_TOKEN = Api(41, "DescribeDelegationToken", "1-3", "2+",
    request=[F("owners", _PRINCIPAL, nullable="0+", default=None)],
    response=[
        F("error_code", INT16),
        F("tokens", [
            *_PRINCIPAL,
            F("token_requester_principal_type", STRING, "3+", default=""),
            F("token_requester_principal_name", STRING, "3+", default=""),
            F("issue_timestamp", INT64),
            F("expiry_timestamp", INT64),
            F("max_timestamp", INT64),
            F("token_id", STRING),
            F("hmac", BYTES),
            F("renewers", _PRINCIPAL),
        ]),
        F("throttle_time_ms", INT32),
    ],
)

APIS = [CREATE_DELEGATION_TOKEN, RENEW_DELEGATION_TOKEN, EXPIRE_DELEGATION_TOKEN, DESCRIBE_DELEGATION_TOKEN]
