"""ShareAcknowledge (KIP-932, v1): a share consumer acknowledges records without fetching.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`). The request checks are
ShareFetch's (group id, READ on the group, member id). The share session must exist: epoch 0 is
INVALID_SHARE_SESSION_EPOCH (a session is opened only by a ShareFetch), an unknown session
SHARE_SESSION_NOT_FOUND, a wrong epoch INVALID_SHARE_SESSION_EPOCH; epoch -1 closes the session
after acknowledging, releasing what the member still holds on its partitions (a consumer's
close). Each partition of the request gets an error code: the acknowledgement's (INVALID_RECORD_STATE
for records the member does not hold, INVALID_REQUEST for a malformed batch), or
UNKNOWN_TOPIC_ID / TOPIC_AUTHORIZATION_FAILED / NOT_LEADER_OR_FOLLOWER (with the current leader).
An acknowledgement is answered once written by the share coordinator.
"""

from __future__ import annotations

import uuid
from typing import Any

from zurau.broker.handlers._share import (
    TopicIdPartition,
    ack_batches,
    current_leader,
    manager,
    node_endpoints,
    partition_errors,
    request_error,
    top_level,
)
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidShareSessionEpochError, KafkaError
from zurau.protocol.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from zurau.replication.share.share_partition import AcknowledgeResult
from zurau.replication.share.share_session import FINAL_EPOCH, INITIAL_EPOCH

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
MIN_VERSION = 1
MAX_VERSION = 1
ENABLED_BY = "group.share.enable"


async def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    group_id = req.get("group_id") or ""
    member_id = req.get("member_id") or ""
    epoch = req["share_session_epoch"]
    err = request_error(ctx, group_id, member_id, bool(req.get("is_renew_ack")))
    if err is not None:
        return top_level(err)
    try:
        m = manager(ctx)
        if epoch == INITIAL_EPOCH:
            raise InvalidShareSessionEpochError("ShareAcknowledge cannot open a share session (epoch 0).")
        session = m.sessions.continue_session(group_id, member_id, epoch, ctx.clock.now_ms())
    except KafkaError as e:
        return top_level(e)

    acks: dict[TopicIdPartition, list[tuple[int, int, list[int]]]] = {}
    for t in req.get("topics") or []:
        for p in t.get("partitions") or []:
            acks.setdefault((t["topic_id"], p["partition_index"]), []).extend(
                ack_batches(p.get("acknowledgement_batches") or [])
            )
    errors = partition_errors(ctx, acks)
    results: dict[TopicIdPartition, AcknowledgeResult] = {
        tp: AcknowledgeResult(e.code, str(e) or None) for tp, e in errors.items()
    }
    good = {tp: b for tp, b in acks.items() if tp not in errors and b}
    if good:
        results.update(await m.acknowledge(group_id, member_id, good))
    for tp in acks:
        results.setdefault(tp, AcknowledgeResult())
    if epoch == FINAL_EPOCH:
        await m.release_member(group_id, member_id, list(session.partitions))
        m.sessions.remove(group_id, member_id)

    by_topic: dict[uuid.UUID, list[Any]] = {}
    leaders: list[int] = []
    for (tid, index), r in results.items():
        leader = current_leader(ctx, tid, index, r.error_code)
        leaders.append(leader["leader_id"])
        by_topic.setdefault(tid, []).append(
            {
                "partition_index": index,
                "error_code": r.error_code,
                "error_message": r.error_message,
                "current_leader": leader,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": m.lock_duration_ms(group_id),
        "responses": [{"topic_id": tid, "partitions": parts} for tid, parts in by_topic.items()],
        "node_endpoints": node_endpoints(ctx, leaders),  # type: ignore[typeddict-item]
    }
