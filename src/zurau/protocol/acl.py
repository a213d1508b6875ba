"""The ACL model of Kafka's authorizer: resource types, pattern types, operations, permissions,
bindings and binding filters, with their wire ids.

A binding is ``(resource type, resource name, pattern type, principal, host, operation,
permission)``; a filter has the same shape, where ANY (and a null name, principal or host)
matches anything. Ids are Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``), so they go on the wire and into ``AccessControlEntryRecord`` unchanged.

Matching rules (Kafka's ``AclBindingFilter.matches``):

* a LITERAL or PREFIXED filter matches bindings of that pattern type whose name equals the
  filter's; ANY matches any pattern type with an equal name; MATCH matches the bindings that
  apply to a resource of that name: LITERAL with the name or ``*``, PREFIXED with a prefix of it;
* principal, host: a null filter field matches anything, otherwise the value must be equal.

This module is pure (no I/O); the CLI, the client, the controller and the broker's authorizer
all share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"  # a literal resource name, principal name or host that matches every one
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the only name a CLUSTER resource has


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
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


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Operations an ALLOW entry for the key also grants (Kafka: READ, WRITE, DELETE and ALTER imply
# DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS). ALL grants and denies every operation.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}


def enum_value(cls: type[IntEnum], value: int) -> IntEnum:
    """``cls(value)``, or the enum's UNKNOWN for an id it lacks (a newer peer's value)."""
    try:
        return cls(value)
    except ValueError:
        return cls(0)


def parse_principal(principal: str) -> tuple[str, str]:
    """``Type:name`` -> (type, name); ValueError as Kafka words it when there is no colon."""
    kind, sep, name = principal.partition(":")
    if not sep:
        raise ValueError(
            f"Could not parse principal from `{principal}` (no colon is present separating the "
            "principal type from the principal name)"
        )
    return kind, name


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL entry on one resource pattern (every field concrete: no ANY/MATCH/UNKNOWN)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A filter over bindings (DescribeAcls, DeleteAcls); None fields match anything."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def unknown_field(self) -> str | None:
        """The name of the first field holding UNKNOWN (such a filter matches nothing), else None."""
        for name, value in (
            ("resource type", self.resource_type),
            ("pattern type", self.pattern_type),
            ("operation", self.operation),
            ("permission type", self.permission),
        ):
            if value == 0:
                return name
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if not self._matches_pattern(b):
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != b.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == b.permission

    def _matches_pattern(self, b: AclBinding) -> bool:
        pt, name = self.pattern_type, self.resource_name
        if pt == PatternType.MATCH:
            if name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.resource_name in (name, WILDCARD)
            return b.pattern_type == PatternType.PREFIXED and name.startswith(b.resource_name)
        if pt != PatternType.ANY and pt != b.pattern_type:
            return False
        return name is None or name == b.resource_name


__all__ = [
    "CLUSTER_NAME",
    "IMPLIED_BY",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "enum_value",
    "parse_principal",
]
