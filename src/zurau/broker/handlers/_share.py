"""What ShareFetch and ShareAcknowledge (KIP-932) share: request checks, the share-partition
manager, acknowledgement batches, per-partition leader hints and the response's node endpoints."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from zurau.broker.handlers._authz import GROUP, TOPIC, Op, allowed, allowed_names
from zurau.broker.handlers._feature_gates import feature_gate_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import (
    GroupAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    NotLeaderOrFollowerError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)
from zurau.replication.share.share_partition_manager import SharePartitionManager

TopicIdPartition = tuple[uuid.UUID, int]
AckBatch = tuple[int, int, list[int]]


def manager(ctx: RequestContext) -> SharePartitionManager:
    m = getattr(ctx.services, "share_partitions", None)
    if m is None:
        raise InvalidRequestError("share groups are not served by this broker")
    return m


def top_level(err: KafkaError) -> Any:
    """A ShareFetch or ShareAcknowledge answer with only a request-level error (the two
    responses have the same top-level fields)."""
    return {
        "throttle_time_ms": 0,
        "error_code": err.code,
        "error_message": str(err) or None,
        "acquisition_lock_timeout_ms": 0,
        "responses": [],
        "node_endpoints": [],
    }


def request_error(
    ctx: RequestContext, group_id: str | None, member_id: str | None, renew_ack: bool = False
) -> KafkaError | None:
    """The request-level error before any session work: READ on the group (Kafka checks it
    first), then a group id and a member id that are present, and no renew acknowledgement (v2,
    not served); first of all the share.version gate (:mod:`~zurau.broker.handlers._feature_gates`)."""
    gated = feature_gate_error(ctx)
    if gated is not None:
        return gated
    if not group_id:
        return InvalidRequestError("The group id must not be empty.")
    if not allowed(ctx, Op.READ, GROUP, group_id):
        return GroupAuthorizationFailedError("Group authorization failed.")
    if not member_id:
        return InvalidRequestError("The member id must not be empty.")
    if renew_ack:
        return InvalidRequestError("Renew acknowledgements are not supported.")
    return None


def partition_errors(
    ctx: RequestContext, tps: Iterable[TopicIdPartition]
) -> dict[TopicIdPartition, KafkaError]:
    """UNKNOWN_TOPIC_ID for topics the metadata does not know, TOPIC_AUTHORIZATION_FAILED for
    topics the principal may not READ (Kafka answers an unauthorized topic id as unknown only
    when it cannot describe it; here READ decides both, the stricter reading)."""
    image = ctx.image
    out: dict[TopicIdPartition, KafkaError] = {}
    names: dict[uuid.UUID, str] = {}
    for tid, p in tps:
        t = image.by_id(tid)
        if t is None or p not in t.partitions:
            out[(tid, p)] = UnknownTopicIdError(f"unknown topic id {tid} or partition {p}")
        else:
            names[tid] = t.name
    if ctx.services.authorizer is not None and names:
        ok = allowed_names(ctx, Op.READ, TOPIC, set(names.values()))
        for tid, p in tps:
            if tid in names and names[tid] not in ok:
                out[(tid, p)] = TopicAuthorizationFailedError("Topic authorization failed.")
    return out


def ack_batches(batches: Iterable[Any]) -> list[AckBatch]:
    return [(b["first_offset"], b["last_offset"], list(b["acknowledge_types"])) for b in batches]


def current_leader(ctx: RequestContext, tid: uuid.UUID, p: int, err: int) -> dict[str, int]:
    """The partition's leader as this broker's metadata has it, for a NOT_LEADER_OR_FOLLOWER
    (or fenced) answer; -1/-1 otherwise."""
    if err != NotLeaderOrFollowerError.code:
        return {"leader_id": -1, "leader_epoch": -1}
    t = ctx.image.by_id(tid)
    reg = None if t is None else t.partitions.get(p)
    if reg is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": reg.leader, "leader_epoch": reg.leader_epoch}


def node_endpoints(ctx: RequestContext, leaders: Iterable[int]) -> list[dict[str, Any]]:
    """The endpoints (on the request's listener) of the brokers named as current leaders."""
    out = []
    image = ctx.image
    for b in sorted({b for b in leaders if b >= 0}):
        ep = image.endpoint(b, ctx.listener) if ctx.listener else None
        if ep is not None:
            out.append({"node_id": b, "host": ep[0], "port": ep[1], "rack": None})
    return out
