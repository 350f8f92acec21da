"""ACLs and StandardAuthorizer's decision rules, without storage or I/O.

Enum values are Kafka's wire/record codes (ResourceType, PatternType,
AclOperation, AclPermissionType). `AclAuthorizer.authorize` decides as Kafka's
StandardAuthorizer: super users pass; a matching DENY wins over any ALLOW;
ALLOW of READ/WRITE/DELETE/ALTER implies DESCRIBE and ALLOW of ALTER_CONFIGS
implies DESCRIBE_CONFIGS; a resource with no ACL at all is allowed only when
`allow.everyone.if.no.acl.found` is true.
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

_IMPLIES_DESCRIBE = {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
_IMPLIES_DESCRIBE_CONFIGS = {AclOperation.ALTER_CONFIGS}


def parse_enum(cls, text: str | int):
    """Kafka's names, case and '-'/'_' insensitive (`transactional-id`, `Describe`)."""
    if isinstance(text, int):
        return cls(text)
    key = str(text).strip().upper().replace("-", "_")
    if key == "TRANSACTIONALID":
        key = "TRANSACTIONAL_ID"
    try:
        return cls[key]
    except KeyError:
        names = ", ".join(m.name for m in cls if m.name not in ("UNKNOWN", "ANY", "MATCH"))
        raise ValueError(f"unknown {cls.__name__} {text!r} (one of {names})") from None


def _strict(cls, value):
    return cls(value)


def _or_unknown(cls, value):
    """cls(value), or UNKNOWN for a code this version does not know (validate() then refuses it)."""
    try:
        return cls(value)
    except ValueError:
        return cls.UNKNOWN


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (AccessControlEntryRecord)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType
    id: uuid.UUID = field(default_factory=uuid.uuid4, compare=False)

    def validate(self) -> str | None:
        """Why Kafka would refuse to create this binding, or None."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return "Resource type must be concrete"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return "Pattern type must be LITERAL or PREFIXED"
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return "Operation must be concrete"
        if self.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return "Permission type must be ALLOW or DENY"
        if not self.resource_name:
            return "Resource name must not be empty"
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return "The only valid name for the CLUSTER resource is kafka-cluster"
        if ":" not in self.principal:
            return f"Could not parse principal from `{self.principal}` (no colon is present separating " \
                   "the principal type from the principal name)"
        return None


@dataclass(frozen=True)
class AclFilter:
    """A DescribeAcls / DeleteAcls filter: None fields match anything."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def validate(self) -> str | None:
        """Why Kafka would refuse this filter (a code it does not know), or None."""
        for value, cls in ((self.resource_type, ResourceType), (self.pattern_type, PatternType),
                           (self.operation, AclOperation), (self.permission, AclPermissionType)):
            if value == cls.UNKNOWN:
                return f"Invalid {cls.__name__} in the filter"
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is not None and not _pattern_covers(b, self.resource_name):
                return False
        else:
            if self.pattern_type != PatternType.ANY and self.pattern_type != b.pattern_type:
                return False
            if self.resource_name is not None and self.resource_name != b.resource_name:
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != b.operation:
            return False
        if self.permission != AclPermissionType.ANY and self.permission != b.permission:
            return False
        return True



# ---- the dict form of the ACL APIs (CreateAcls creations, DescribeAcls/DeleteAcls ACLs,
# the filters) and of the broker's security state file: written and read only here
def binding_to_wire(b: AclBinding, pattern_key: str = "pattern_type") -> dict:
    """The binding as the ACL APIs carry it (CreateAcls names the pattern `resource_pattern_type`)."""
    return {"resource_type": int(b.resource_type), "resource_name": b.resource_name, pattern_key: int(b.pattern_type),
            "principal": b.principal, "host": b.host, "operation": int(b.operation),
            "permission_type": int(b.permission)}


def binding_from_wire(d: dict, pattern_key: str = "pattern_type", lenient: bool = False) -> AclBinding:
    """The binding in `d` (binding_to_wire's form); `lenient`: unknown codes become UNKNOWN
    instead of raising ValueError, as a broker answers a request that carries them."""
    code = _or_unknown if lenient else _strict
    return AclBinding(code(ResourceType, d["resource_type"]), d["resource_name"] or "",
                      code(PatternType, d.get(pattern_key, PatternType.LITERAL)), d["principal"] or "",
                      d["host"] or "", code(AclOperation, d["operation"]),
                      code(AclPermissionType, d["permission_type"]))


def filter_to_wire(f: AclFilter) -> dict:
    """The filter as DescribeAcls and DeleteAcls carry it."""
    return {"resource_type_filter": int(f.resource_type), "resource_name_filter": f.resource_name,
            "pattern_type_filter": int(f.pattern_type), "principal_filter": f.principal, "host_filter": f.host,
            "operation": int(f.operation), "permission_type": int(f.permission)}


def filter_from_wire(d: dict) -> AclFilter:
    """The filter in a DescribeAcls request or DeleteAcls filter; unknown codes become UNKNOWN."""
    return AclFilter(
        _or_unknown(ResourceType, d.get("resource_type_filter", ResourceType.ANY)), d.get("resource_name_filter"),
        _or_unknown(PatternType, d.get("pattern_type_filter", PatternType.LITERAL)), d.get("principal_filter"),
        d.get("host_filter"), _or_unknown(AclOperation, d.get("operation", AclOperation.ANY)),
        _or_unknown(AclPermissionType, d.get("permission_type", AclPermissionType.ANY)))

def _pattern_covers(b: AclBinding, name: str) -> bool:
    if b.pattern_type == PatternType.LITERAL:
        return b.resource_name == name or b.resource_name == WILDCARD
    if b.pattern_type == PatternType.PREFIXED:
        return name.startswith(b.resource_name)
    return False


@dataclass(frozen=True)
class Action:
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


class AclAuthorizer:
    """The decision half of StandardAuthorizer over a set of bindings."""

    def __init__(self, bindings=(), super_users=(), allow_everyone_if_no_acl_found: bool = False):
        self.super_users = set(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        self.replace(bindings)

    def replace(self, bindings) -> None:
        by_type: dict[ResourceType, list[AclBinding]] = {}
        for b in bindings:
            by_type.setdefault(b.resource_type, []).append(b)
        self._by_type = by_type

    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        found = False
        allowed = False
        for b in self._by_type.get(rtype, ()):
            if not _pattern_covers(b, name):
                continue
            found = True
            if b.principal != principal and b.principal != WILDCARD_PRINCIPAL:
                continue
            if b.host != WILDCARD and b.host != host:
                continue
            if b.permission == AclPermissionType.DENY:
                if b.operation in (AclOperation.ALL, op):
                    return False
            elif not allowed and (b.operation in (AclOperation.ALL, op)
                                  or (op == AclOperation.DESCRIBE and b.operation in _IMPLIES_DESCRIBE)
                                  or (op == AclOperation.DESCRIBE_CONFIGS
                                      and b.operation in _IMPLIES_DESCRIBE_CONFIGS)):
                allowed = True
        if allowed:
            return True
        return not found and self.allow_if_no_acl

    def authorize_any(self, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
        """Kafka's authorizeByResourceType: is `op` allowed on at least one resource of the type?

        Used for idempotent producers (WRITE on any topic)."""
        if principal in self.super_users:
            return True
        bindings = self._by_type.get(rtype, ())
        for b in bindings:
            if (b.permission == AclPermissionType.ALLOW and b.operation in (AclOperation.ALL, op)
                    and b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (WILDCARD, host)):
                if not self._denied_for(b, principal, host, op):
                    return True
        return self.allow_if_no_acl and not bindings

    def _denied_for(self, allow: AclBinding, principal: str, host: str, op: AclOperation) -> bool:
        for b in self._by_type.get(allow.resource_type, ()):
            if (b.permission == AclPermissionType.DENY and b.operation in (AclOperation.ALL, op)
                    and b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (WILDCARD, host)):
                if b.pattern_type == PatternType.LITERAL and b.resource_name == WILDCARD:
                    return True
                if b.pattern_type == PatternType.LITERAL and b.resource_name == allow.resource_name \
                        and allow.pattern_type == PatternType.LITERAL:
                    return True
                if b.pattern_type == PatternType.PREFIXED and allow.resource_name.startswith(b.resource_name):
                    return True
        return False

    def authorized_operations(self, principal: str, host: str, rtype: ResourceType, name: str,
                              ops) -> int:
        """Bit field of allowed operations, as `*_authorized_operations` in responses."""
        bits = 0
        for op in ops:
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << int(op)
        return bits
