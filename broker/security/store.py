"""Durable SCRAM credentials and ACLs of one broker.

Kafka keeps both as KRaft metadata records (UserScramCredentialRecord,
AccessControlEntryRecord); pylog has no metadata log, so it keeps the same
records' fields in one JSON file in the first log dir, `security.json`,
replaced atomically on every change (temp file, fsync, rename): a crash
leaves the old or the new state. Bytes are base64.
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import replace

from pylog.core.security import scram
from pylog.core.security.acl import AclBinding, binding_from_wire, binding_to_wire
from pylog.broker.common.json_state import JsonStateFile

FILE_NAME = "security.json"
FORMAT_VERSION = 1


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


class SecurityStore(JsonStateFile):
    """SCRAM credentials keyed by (user, mechanism name) and the ACL bindings, persisted together."""

    FILE_NAME = FILE_NAME
    WHAT = "security state"

    def __init__(self, log_dir: str):
        super().__init__(log_dir)
        self.credentials: dict[tuple[str, str], scram.ScramCredential] = {}
        self.acls: list[AclBinding] = []
        self.load()

    # ---- persistence -----------------------------------------------------
    def _apply(self, doc: dict) -> None:
        creds = {}
        for r in doc.get("user_scram_credentials", []):
            mech = scram.MECHANISMS_BY_TYPE[r["mechanism"]]
            creds[(r["name"], mech.name)] = scram.ScramCredential(
                base64.b64decode(r["salt"]), base64.b64decode(r["stored_key"]),
                base64.b64decode(r["server_key"]), int(r["iterations"]))
        acls = [replace(binding_from_wire(r), id=uuid.UUID(r["id"])) for r in doc.get("access_control_entries", [])]
        self.credentials, self.acls = creds, acls

    def _save(self) -> None:
        doc = {
            "version": FORMAT_VERSION,
            "user_scram_credentials": [
                {"name": name, "mechanism": scram.MECHANISMS[mech].type, "salt": _b64(c.salt),
                 "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key), "iterations": c.iterations}
                for (name, mech), c in sorted(self.credentials.items())
            ],
            "access_control_entries": [
                {"id": str(b.id), **binding_to_wire(b)} for b in self.acls
            ],
        }
        self._write(doc)

    # ---- SCRAM -----------------------------------------------------------
    def credential(self, user: str, mechanism: str) -> scram.ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def change_credentials(self, upserts: dict, deletions: list) -> None:
        """Apply {(user, mech): credential} and [(user, mech)] in one durable step."""
        with self._lock:
            new = dict(self.credentials)
            for key in deletions:
                new.pop(key, None)
            new.update(upserts)
            self._replace("credentials", new)

    # ---- ACLs ------------------------------------------------------------
    def change_acls(self, add: list[AclBinding], remove: list[AclBinding]) -> None:
        with self._lock:
            gone = {id(b) for b in remove}
            have = {b for b in self.acls}
            new = [b for b in self.acls if id(b) not in gone] + [b for b in add if b not in have]
            self._replace("acls", new)

    def _replace(self, attr: str, new) -> None:
        """Install `new` as self.<attr> and save; a failed write leaves the old value in place."""
        old = getattr(self, attr)
        setattr(self, attr, new)
        try:
            self._save()
        except OSError:
            setattr(self, attr, old)
            raise


def parse_add_scram(text: str) -> tuple[str, str, scram.ScramCredential]:
    """`SCRAM-SHA-256=[name=admin,password=secret]` (kafka-storage format --add-scram).

    Also `[name=..,salt="..",saltedpassword="..",iterations=..]` with the salt and
    the salted password in base64, as kafka-storage takes them."""
    mech_name, eq, rest = text.strip().partition("=")
    if not eq or not rest.startswith("[") or not rest.endswith("]"):
        raise ValueError(f"--add-scram: expected MECHANISM=[name=USER,password=PASSWORD], got {text!r}")
    try:
        mech = scram.mechanism(mech_name.strip())
    except scram.ScramError as e:
        raise ValueError(f"--add-scram: {e}") from None
    fields: dict[str, str] = {}
    for part in _split_fields(rest[1:-1]):
        k, eq, v = part.partition("=")
        if not eq:
            raise ValueError(f"--add-scram: expected key=value, got {part!r}")
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] == '"':
            v = v[1:-1]
        fields[k.strip().lower()] = v
    name = fields.get("name")
    if not name:
        raise ValueError("--add-scram: name= is missing")
    iterations = int(fields.get("iterations", scram.DEFAULT_ITERATIONS))
    try:
        if "password" in fields:
            salt = fields["salt"].encode() if "salt" in fields else None
            cred = scram.make_credential(mech, fields["password"], iterations, salt)
        elif "saltedpassword" in fields and "salt" in fields:
            scram.check_iterations(mech, iterations)
            cred = scram.salted_credential(mech, base64.b64decode(fields["saltedpassword"], validate=True),
                                           base64.b64decode(fields["salt"], validate=True), iterations)
        else:
            raise ValueError("--add-scram: password= (or salt= and saltedpassword=) is missing")
    except (scram.ScramError, base64.binascii.Error) as e:
        raise ValueError(f"--add-scram: {e}") from None
    return name, mech.name, cred


def _split_fields(text: str) -> list[str]:
    out, cur, quoted = [], [], False
    for c in text:
        if c == '"':
            quoted = not quoted
        if c == "," and not quoted:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if cur:
        out.append("".join(cur))
    return [p for p in out if p.strip()]
