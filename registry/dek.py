"""The DEK registry (`/dek-registry/v1`): key encryption keys (KEKs) and the data encryption keys
(DEKs) they wrap, which confluent-kafka's field-encryption rule executor creates and reads.

The registry never sees a key in the clear: a KEK is a name and where its key lives (`kmsType`,
`kmsKeyId`, e.g. the client-side `local-kms`); a DEK is stored as the client encrypted it with
its KEK (`encryptedKeyMaterial`). Shared KEKs (the registry asking the KMS to make DEKs) are not
offered: the registry holds no KMS credentials. Records live in their own compacted topic,
`_dek_registry_keys`, read from the start and applied in offset order like `_schemas`:

  {"keytype":"KEK","name":N,"magic":0}                                   -> the KEK's JSON
  {"keytype":"DEK","kekName":K,"subject":S,"version":V,"algorithm":A,"magic":0} -> the DEK's JSON
"""
from __future__ import annotations

import json
import threading
import time

from pylog.registry import errors as E

TOPIC = "_dek_registry_keys"
KEY_NOT_FOUND = 40470
KEY_EXISTS = 40972
INVALID_KEY = 42271
ALGORITHMS = ("AES128_GCM", "AES256_GCM", "AES256_SIV")


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class DekState:
    """What `_dek_registry_keys` says, applied record by record (no I/O)."""

    def __init__(self):
        self.keks: dict[str, dict] = {}
        self.deks: dict[tuple[str, str, str], dict[int, dict]] = {}
        self.applied = -1

    def apply(self, offset: int, raw_key, raw_value) -> None:
        self.applied = max(self.applied, offset)
        try:
            key = json.loads(bytes(raw_key)) if raw_key is not None else None
            value = json.loads(bytes(raw_value)) if raw_value is not None else None
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(key, dict):
            return
        if key.get("keytype") == "KEK" and isinstance(key.get("name"), str):
            if value is None:
                self.keks.pop(key["name"], None)
            else:
                self.keks.setdefault(key["name"], value)  # the first record for a name wins
        elif key.get("keytype") == "DEK":
            slot = self.deks.setdefault((key.get("kekName"), key.get("subject"), key.get("algorithm")), {})
            version = int(key.get("version", 1))
            if value is None:
                slot.pop(version, None)
            else:
                slot.setdefault(version, value)


def _not_found(what: str) -> E.RestError:
    return E.RestError(404, KEY_NOT_FOUND, f"Key '{what}' not found")


class DekRegistry:
    def __init__(self, store):
        self.store = store
        self.state = store.state
        self.lock = threading.Lock()

    def kek(self, name: str, deleted: bool = False) -> dict:
        k = self.state.keks.get(name)
        if k is None or (k.get("deleted") and not deleted):
            raise _not_found(name)
        return k

    def create_kek(self, body) -> dict:
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body.get("kmsType") \
                or not body.get("kmsKeyId"):
            raise E.RestError(422, INVALID_KEY, "Invalid key: a KEK needs a name, a kmsType and a kmsKeyId")
        if body.get("shared"):
            raise E.RestError(422, INVALID_KEY, "Invalid key: shared KEKs are not offered (the registry holds no "
                                                "KMS credentials); let the client wrap its DEKs")
        kek = {"name": body["name"], "kmsType": body["kmsType"], "kmsKeyId": body["kmsKeyId"],
               "kmsProps": body.get("kmsProps") or {}, "doc": body.get("doc"), "shared": False,
               "ts": int(time.time() * 1000), "deleted": False}
        with self.lock:
            old = self.state.keks.get(kek["name"])
            if old is None:
                self.store.write(_dumps({"keytype": "KEK", "name": kek["name"], "magic": 0}), _dumps(kek))
                old = self.state.keks[kek["name"]]
        if (old["kmsType"], old["kmsKeyId"]) != (kek["kmsType"], kek["kmsKeyId"]):
            raise E.RestError(409, KEY_EXISTS, f"Key '{kek['name']}' already exists")
        return old

    def dek(self, kek_name: str, subject: str, version, algorithm: str | None, deleted: bool = False) -> dict:
        self.kek(kek_name, True)
        versions = self.state.deks.get((kek_name, subject, algorithm or "AES256_GCM")) or {}
        live = {v: d for v, d in versions.items() if deleted or not d.get("deleted")}
        if not live:
            raise _not_found(f"{kek_name}/{subject}")
        v = max(live) if version in ("latest", "-1", -1) else _int(version)
        if v not in live:
            raise _not_found(f"{kek_name}/{subject}/{version}")
        return live[v]

    def create_dek(self, kek_name: str, subject: str | None, body) -> dict:
        self.kek(kek_name)
        if not isinstance(body, dict):
            raise E.RestError(422, INVALID_KEY, "Invalid key: the request needs a JSON object")
        subject = subject or body.get("subject")
        algorithm = body.get("algorithm") or "AES256_GCM"
        version = _int(body.get("version") or 1)
        if not isinstance(subject, str) or algorithm not in ALGORITHMS or not body.get("encryptedKeyMaterial"):
            raise E.RestError(422, INVALID_KEY, "Invalid key: a DEK needs a subject, an algorithm among "
                                                f"{', '.join(ALGORITHMS)} and its encryptedKeyMaterial")
        dek = {"kekName": kek_name, "subject": subject, "version": version, "algorithm": algorithm,
               "encryptedKeyMaterial": body["encryptedKeyMaterial"], "ts": int(time.time() * 1000),
               "deleted": False}
        key = {"keytype": "DEK", "kekName": kek_name, "subject": subject, "version": version,
               "algorithm": algorithm, "magic": 0}
        with self.lock:
            if version in (self.state.deks.get((kek_name, subject, algorithm)) or {}):
                raise E.RestError(409, KEY_EXISTS, f"Key '{kek_name}/{subject}/{version}' already exists")
            self.store.write(_dumps(key), _dumps(dek))
            got = self.state.deks[(kek_name, subject, algorithm)][version]
        if got["encryptedKeyMaterial"] != dek["encryptedKeyMaterial"]:
            raise E.RestError(409, KEY_EXISTS, f"Key '{kek_name}/{subject}/{version}' already exists")
        return got


def _int(v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise E.RestError(422, INVALID_KEY, f"Invalid version {v!r}") from None


def _flag(q, name: str) -> bool:
    return (q.get(name) or "").lower() == "true"


def _get_kek(reg, m, q, body):
    return 200, reg.dek.kek(m["name"], _flag(q, "deleted"))


def _post_kek(reg, m, q, body):
    return 200, reg.dek.create_kek(body)


def _list_keks(reg, m, q, body):
    return 200, sorted(n for n, k in reg.dek.state.keks.items() if _flag(q, "deleted") or not k.get("deleted"))


def _get_dek(reg, m, q, body):
    return 200, reg.dek.dek(m["name"], m["subject"], m.get("version", "latest"), q.get("algorithm"),
                            _flag(q, "deleted"))


def _post_dek(reg, m, q, body):
    return 200, reg.dek.create_dek(m["name"], m.get("subject"), body)


ROUTES = [
    ("GET", "/dek-registry/v1/keks", _list_keks, False),
    ("POST", "/dek-registry/v1/keks", _post_kek, True),
    ("GET", "/dek-registry/v1/keks/{name}", _get_kek, False),
    ("POST", "/dek-registry/v1/keks/{name}/deks", _post_dek, True),
    ("POST", "/dek-registry/v1/keks/{name}/deks/{subject}", _post_dek, True),
    ("GET", "/dek-registry/v1/keks/{name}/deks/{subject}", _get_dek, False),
    ("GET", "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}", _get_dek, False),
]
