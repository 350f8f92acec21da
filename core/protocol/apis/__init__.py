"""Every declared API, keyed by api key."""
from pylog.core.protocol.apis import (
    cluster, configs, consumer_groups, fetch, groups, meta, produce, quotas, reassign, security, share_groups,
    share_state, streams_groups, tokens, topics, txn,
)

SCHEMAS = {}
for _m in (meta, produce, fetch, topics, configs, groups, consumer_groups, txn, security, quotas, reassign,
           share_groups, cluster, tokens, share_state, streams_groups):
    for _api in _m.APIS:
        assert _api.key not in SCHEMAS, _api
        SCHEMAS[_api.key] = _api
SCHEMAS = dict(sorted(SCHEMAS.items()))

API_KEYS = {api.name: key for key, api in SCHEMAS.items()}
API_NAMES = {key: api.name for key, api in SCHEMAS.items()}

__all__ = ["SCHEMAS", "API_KEYS", "API_NAMES"]
