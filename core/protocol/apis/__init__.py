"""Every declared API, keyed by api key."""
from pylog.core.protocol.apis import configs, fetch, meta, produce, topics

_MODULES = [meta, produce, fetch, topics, configs]
try:  # declared in later modules; absent ones are simply not registered
    from pylog.core.protocol.apis import groups
    _MODULES.append(groups)
except ImportError:  # pragma: no cover
    pass
try:
    from pylog.core.protocol.apis import txn
    _MODULES.append(txn)
except ImportError:  # pragma: no cover
    pass

SCHEMAS = {}
for _m in _MODULES:
    for _api in _m.APIS:
        assert _api.key not in SCHEMAS, _api
        SCHEMAS[_api.key] = _api
SCHEMAS = dict(sorted(SCHEMAS.items()))

API_KEYS = {api.name: key for key, api in SCHEMAS.items()}
API_NAMES = {key: api.name for key, api in SCHEMAS.items()}

__all__ = ["SCHEMAS", "API_KEYS", "API_NAMES"]
