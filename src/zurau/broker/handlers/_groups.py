"""Helpers shared by the group-coordinator handlers (JoinGroup ... ConsumerGroupDescribe).

A request field that exists only from some version on is read as
``req["group_instance_id"] if version >= 5 else None``: the codec gives the fields a version
lacks their zero value (e.g. "" for a string that is nullable only in the versions that have it),
where the coordinator expects None.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import GROUP, Op, allowed
from zurau.broker.handlers._feature_gates import feature_gate_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.service import GroupCoordinatorService
from zurau.protocol.acl import AclOperation
from zurau.protocol.errors import GroupAuthorizationFailedError, KafkaError

# Bit set of the ACL operations on a group (READ, DELETE, DESCRIBE): with no authorizer every one
# is allowed, as Kafka reports.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
OPERATIONS_OMITTED = -(2**31)


def coordinator(ctx: RequestContext) -> GroupCoordinatorService:
    return ctx.groups


def group_error(ctx: RequestContext, group_id: str, op: AclOperation = Op.READ) -> KafkaError | None:
    """UNSUPPORTED_VERSION when the API's feature level is not finalized
    (:mod:`~zurau.broker.handlers._feature_gates`), then GROUP_AUTHORIZATION_FAILED when the
    principal may not do ``op`` on the group (checked before the group, as Kafka does), else the
    coordinator's error for the group (not coordinator, loading)."""
    gated = feature_gate_error(ctx)
    if gated is not None:
        return gated
    if not allowed(ctx, op, GROUP, group_id):
        return GroupAuthorizationFailedError("Group authorization failed.")
    return ctx.groups.coordinator_error(group_id)


def client_host(ctx: RequestContext) -> str:
    """The peer's address as Kafka reports it ("/127.0.0.1")."""
    host = ctx.peer.rsplit(":", 1)[0] if ":" in ctx.peer else ctx.peer
    return "/" + host


def client_id(ctx: RequestContext) -> str:
    return ctx.client_id or ""


def group_operations(ctx: RequestContext, group_id: str, requested: bool) -> int:
    """The ``authorized_operations`` bit set of a group for the request's principal."""
    if not requested:
        return OPERATIONS_OMITTED
    if ctx.services.authorizer is None:
        return GROUP_OPERATIONS
    return sum(1 << op for op in (Op.READ, Op.DELETE, Op.DESCRIBE) if allowed(ctx, op, GROUP, group_id, log=False))
