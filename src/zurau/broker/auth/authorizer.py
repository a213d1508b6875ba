"""Kafka's StandardAuthorizer: ACL checks against the bindings in the metadata image.

Enabled by ``authorizer.class.name`` (``org.apache.kafka.metadata.authorizer.StandardAuthorizer``,
or ``kafka.security.authorizer.AclAuthorizer``, accepted as the same); with it unset the broker
holds no authorizer at all (``BrokerServices.authorizer is None``) and handlers skip every check.

A request for ``operation`` on ``(resource type, name)`` by ``principal`` from ``host`` is decided:

1. a principal listed in ``super.users`` (``User:a;User:b``) is always allowed;
2. the bindings that apply to the resource are those of its type that are LITERAL with its name
   or ``*``, or PREFIXED with a prefix of its name; of those, the ones whose principal is the
   principal or ``User:*`` and whose host is the host or ``*`` are considered;
3. a considered DENY binding for the operation (or ALL) denies: deny always wins;
4. else a considered ALLOW binding for the operation, ALL, or an operation implying it (READ,
   WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
5. else, when no binding at all applies to the resource (whatever its principal or host), the
   answer is ``allow.everyone.if.no.acl.found``; otherwise the request is denied.

**Before the initial load** (Kafka's ``AuthorizerNotReadyException``): an authorizer made with
``loaded=False`` answers from no ACL set at all until :meth:`StandardAuthorizer.complete_initial_load`
is called, once the node's metadata image has caught up with the quorum. Meanwhile only super
users are allowed; everyone else is denied whatever ``allow.everyone.if.no.acl.found`` says (an
image still being replayed, empty after a restart without a snapshot or as old as the node's last
snapshot, must neither allow nor deny from its ACLs). This matters on the controller listener,
which a cluster node serves before it has caught up: the nodes' own principals must be super
users there, as in Kafka's KRaft mode.

The index of bindings is rebuilt when the image's ACL mapping object changes (images share it
while no ACL changes), so a check costs a few dictionary lookups. Every denial that the caller
wants logged is one INFO line on the ``zurau.authorizer`` logger: principal, host, operation,
resource and API (Kafka's authorizer log; filtering Metadata's topic list is not logged).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from zurau.config import BrokerConfig
from zurau.protocol.acl import (
    IMPLIED_BY,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

audit_log = logging.getLogger("zurau.authorizer")

_NO_IMPLIED: frozenset[AclOperation] = frozenset()


@dataclass(frozen=True, slots=True)
class _Index:
    """Bindings by (type, literal name) and, per type, by prefix."""

    literal: dict[tuple[ResourceType, str], tuple[AclBinding, ...]]
    prefixed: dict[ResourceType, dict[str, tuple[AclBinding, ...]]]

    @classmethod
    def build(cls, acls: Mapping[uuid.UUID, AclBinding]) -> _Index:
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        for b in acls.values():
            if b.pattern_type == PatternType.PREFIXED:
                prefixed.setdefault(b.resource_type, {}).setdefault(b.resource_name, []).append(b)
            else:
                literal.setdefault((b.resource_type, b.resource_name), []).append(b)
        return cls(
            {k: tuple(v) for k, v in literal.items()},
            {t: {p: tuple(v) for p, v in by.items()} for t, by in prefixed.items()},
        )

    def applying_to(self, rtype: ResourceType, name: str) -> list[AclBinding]:
        out = list(self.literal.get((rtype, name), ()))
        if name != WILDCARD:
            out += self.literal.get((rtype, WILDCARD), ())
        prefixes = self.prefixed.get(rtype)
        if prefixes:
            if len(prefixes) <= len(name):
                for prefix, bindings in prefixes.items():
                    if name.startswith(prefix):
                        out += bindings
            else:
                for end in range(1, len(name) + 1):
                    out += prefixes.get(name[:end], ())
        return out


class StandardAuthorizer:
    """Decides ACL checks (see the module docstring); thread-unsafe, used on the event loop."""

    def __init__(
        self,
        acls: Callable[[], Mapping[uuid.UUID, AclBinding]],
        super_users: frozenset[str] = frozenset(),
        allow_everyone_if_no_acl: bool = False,
        *,
        loaded: bool = True,
    ) -> None:
        """``loaded=False``: the image ``acls`` reads from has not caught up yet; only super users
        are allowed until :meth:`complete_initial_load` (see the module docstring)."""
        self._acls = acls
        self.super_users = super_users
        self.allow_everyone_if_no_acl = allow_everyone_if_no_acl
        self._source: Mapping[uuid.UUID, AclBinding] | None = None
        self._index = _Index({}, {})
        self._loaded = loaded

    @classmethod
    def from_config(
        cls, config: BrokerConfig, acls: Callable[[], Mapping[uuid.UUID, AclBinding]], *, loaded: bool = True
    ) -> StandardAuthorizer | None:
        """The configured authorizer, or None when ``authorizer.class.name`` is empty."""
        if not config.get("authorizer.class.name"):
            return None
        raw = config.get("super.users") or ""
        supers = frozenset(p.strip() for p in raw.split(";") if p.strip())
        return cls(acls, supers, bool(config.get("allow.everyone.if.no.acl.found")), loaded=loaded)

    @property
    def loaded(self) -> bool:
        """True once the ACLs are those of an image that has caught up (see the module docstring)."""
        return self._loaded

    def complete_initial_load(self) -> None:
        """The metadata image has caught up: decide from its ACLs from now on (Kafka's
        ``StandardAuthorizer.completeInitialLoad``). Idempotent."""
        self._loaded = True

    def _current(self) -> _Index:
        acls = self._acls()
        if acls is not self._source:
            self._index = _Index.build(acls)
            self._source = acls
        return self._index

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        rtype: ResourceType,
        name: str,
        api: str = "",
        log_denied: bool = True,
    ) -> bool:
        """True when ``principal`` from ``host`` may do ``operation`` on the resource."""
        if principal in self.super_users:
            return True
        if not self._loaded:
            if log_denied:
                audit_log.info(
                    "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s%s "
                    "(the authorizer has not loaded the ACLs yet)",
                    principal, operation.name, host, rtype.name, name, f" for request = {api}" if api else "",
                )
            return False
        candidates = self._current().applying_to(rtype, name)
        allowed = False
        implying = IMPLIED_BY.get(operation, _NO_IMPLIED)
        for b in candidates:
            if b.principal != principal and (b.principal != WILDCARD_PRINCIPAL or not principal.startswith("User:")):
                continue
            if b.host != WILDCARD and b.host != host:
                continue
            op = b.operation
            if b.permission == AclPermissionType.DENY:
                if op == operation or op == AclOperation.ALL:
                    allowed = False
                    break
            elif not allowed and (op == operation or op == AclOperation.ALL or op in implying):
                allowed = True
        else:
            if allowed or (not candidates and self.allow_everyone_if_no_acl):
                return True
        if log_denied:
            audit_log.info(
                "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s%s",
                principal, operation.name, host, rtype.name, name, f" for request = {api}" if api else "",
            )
        return False

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, rtype: ResourceType
    ) -> bool:
        """True when some resource of ``rtype`` could be allowed for ``operation`` (Kafka's
        ``authorizeByResourceType``): a super user, or an ALLOW binding for the principal and host
        on any name with no DENY of the same operation on ``*`` or on every name (a PREFIXED
        deny of the empty prefix does not exist, so only LITERAL ``*`` denies all)."""
        if principal in self.super_users:
            return True
        if not self._loaded:
            return False
        index = self._current()

        def applies(b: AclBinding) -> bool:
            principal_ok = b.principal == principal or (b.principal == WILDCARD_PRINCIPAL and principal.startswith("User:"))
            return principal_ok and (b.host == WILDCARD or b.host == host) and (
                b.operation == operation or b.operation == AclOperation.ALL
            )

        for b in index.literal.get((rtype, WILDCARD), ()):
            if b.permission == AclPermissionType.DENY and applies(b):
                return False
        bindings = [b for (t, _), bs in index.literal.items() if t == rtype for b in bs]
        bindings += [b for bs in index.prefixed.get(rtype, {}).values() for b in bs]
        if any(b.permission == AclPermissionType.ALLOW and applies(b) for b in bindings):
            return True
        return not bindings and self.allow_everyone_if_no_acl


def peer_host(peer: str) -> str:
    """The IP of an ``ip:port`` peer string (IPv6 addresses contain colons: split on the last)."""
    host, sep, _ = peer.rpartition(":")
    return host if sep else peer


__all__ = ["StandardAuthorizer", "audit_log", "peer_host"]
