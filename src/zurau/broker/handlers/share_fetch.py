"""ShareFetch (KIP-932, v1-v2): a share consumer's fetch, with acknowledgements piggybacked.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`). Steps, as Kafka's
``KafkaApis.handleShareFetchRequest``:

1. Request checks: a group id (INVALID_REQUEST), READ on the group (GROUP_AUTHORIZATION_FAILED),
   a member id (INVALID_REQUEST). These and the share-session errors are top-level answers with
   no partitions.
2. The share session (:mod:`zurau.replication.share.share_session`): epoch 0 opens one
   (acknowledgements then are INVALID_REQUEST), n > 0 continues it, -1 closes it. The request's
   partitions are added to the session and its forgotten partitions removed.
3. Acknowledgements of the request's partitions are applied and written durably; each such
   partition's ``acknowledge_error_code`` says how it went.
4. Unless closing (epoch -1): records are acquired for the member from every partition of its
   session, up to ``max_records`` and about ``max_bytes`` (capped at ``fetch.max.bytes``) in all.
   When nothing was acquired the request waits up to ``max_wait_ms`` for new data on those
   partitions (or for locks that expire there), then tries again. ``max_records`` or
   ``max_bytes`` 0 (or less) acquires nothing and answers at once (Kafka: no records either, its
   share fetch failing on a zero byte budget; librdkafka's ``fetch.max.bytes=0`` relies on it).
5. On epoch -1 the member's acquired records on the session's partitions are released and the
   session is removed.

A partition appears in the answer if it has records, an error, or an acknowledgement result; its
records are empty, never null, when it has none (Kafka 4.1+: non-nullable from v1).
Per-partition errors: UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED, NOT_LEADER_OR_FOLLOWER (with
the current leader and its endpoint), the share coordinator's errors. v2 (KIP-1222 renew
acknowledgements and record-limit acquire mode) is answered as v1: ``is_renew_ack`` requests are
INVALID_REQUEST, and the acquire mode is taken as batch-optimized.
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
from zurau.protocol.errors import InvalidRequestError, KafkaError
from zurau.protocol.messages import ShareFetchRequest, ShareFetchResponse
from zurau.replication.share.share_partition import AcknowledgeResult
from zurau.replication.share.share_partition_manager import FetchedSharePartition
from zurau.replication.share.share_session import FINAL_EPOCH, INITIAL_EPOCH

API_KEY = ApiKey.SHARE_FETCH
MIN_VERSION = 1  # v0 was Kafka 4.0's early access, never released to clients
MAX_VERSION = 1
ENABLED_BY = "group.share.enable"


async def handle(ctx: RequestContext, req: ShareFetchRequest) -> ShareFetchResponse:
    group_id = req.get("group_id") or ""
    member_id = req.get("member_id") or ""
    epoch = req["share_session_epoch"]
    err = request_error(ctx, group_id, member_id, bool(req.get("is_renew_ack")))
    if err is not None:
        return top_level(err)
    try:
        m = manager(ctx)
    except KafkaError as e:
        return top_level(e)

    requested: list[TopicIdPartition] = []
    acks: dict[TopicIdPartition, list[tuple[int, int, list[int]]]] = {}
    for t in req.get("topics") or []:
        for p in t.get("partitions") or []:
            tp = (t["topic_id"], p["partition_index"])
            requested.append(tp)
            batches = p.get("acknowledgement_batches") or []
            if batches:
                acks.setdefault(tp, []).extend(ack_batches(batches))
    forgotten = [
        (t["topic_id"], p) for t in req.get("forgotten_topics_data") or [] for p in t.get("partitions") or []
    ]

    now = ctx.clock.now_ms()
    try:
        if epoch == INITIAL_EPOCH:
            if acks:
                raise InvalidRequestError(
                    "A ShareFetch that opens a share session cannot acknowledge records."
                )
            session = m.sessions.open(group_id, member_id, now)
        else:
            session = m.sessions.continue_session(group_id, member_id, epoch, now)
    except KafkaError as e:
        return top_level(e)
    session.update(requested, forgotten)

    errors = partition_errors(ctx, set(requested) | set(session.partitions))
    ack_results: dict[TopicIdPartition, AcknowledgeResult] = {
        tp: AcknowledgeResult(errors[tp].code, str(errors[tp]) or None) for tp in acks if tp in errors
    }
    good_acks = {tp: b for tp, b in acks.items() if tp not in errors}
    if good_acks:
        ack_results.update(await m.acknowledge(group_id, member_id, good_acks))

    fetched: dict[TopicIdPartition, FetchedSharePartition] = {}
    if epoch == FINAL_EPOCH:
        await m.release_member(group_id, member_id, list(session.partitions))
        m.sessions.remove(group_id, member_id)
    elif req["max_records"] > 0 and req["max_bytes"] > 0:
        fetchable = [tp for tp in session.partitions if tp not in errors]
        fetched = await _fetch(ctx, group_id, member_id, fetchable, req)
    for tp in session.partitions:
        if tp in errors and tp not in acks:
            fetched[tp] = FetchedSharePartition(error=errors[tp])
    return _response(ctx, m.lock_duration_ms(group_id), fetched, ack_results)


async def _fetch(
    ctx: RequestContext, group_id: str, member_id: str, tps: list[TopicIdPartition], req: ShareFetchRequest
) -> dict[TopicIdPartition, FetchedSharePartition]:
    m = manager(ctx)
    max_bytes = min(req["max_bytes"], int(ctx.config.get("fetch.max.bytes")))
    if not tps:
        return {}
    image = ctx.image
    keys = []
    for tid, p in tps:
        t = image.by_id(tid)
        if t is not None:
            keys.append((t.name, p))
    purgatory = m.purgatory
    deadline = purgatory.deadline(max(req["max_wait_ms"], 0)) if purgatory is not None else None
    try:
        while True:
            mark = purgatory.mark() if purgatory is not None else 0
            got = await m.acquire(group_id, member_id, tps, req["max_records"], max_bytes)
            if got or purgatory is None or deadline is None or deadline.expired or not ctx.services.running():
                return got
            if not purgatory.notified_since(mark, keys):
                await purgatory.wait(keys, deadline)
            if deadline.expired:
                return await m.acquire(group_id, member_id, tps, req["max_records"], max_bytes)
    finally:
        if deadline is not None:
            deadline.cancel()


def _response(
    ctx: RequestContext,
    lock_ms: int,
    fetched: dict[TopicIdPartition, FetchedSharePartition],
    acks: dict[TopicIdPartition, AcknowledgeResult],
) -> ShareFetchResponse:
    by_topic: dict[uuid.UUID, list[Any]] = {}
    leaders: list[int] = []
    for tp in list(dict.fromkeys([*acks, *fetched])):
        tid, p = tp
        f = fetched.get(tp)
        a = acks.get(tp)
        code = f.error.code if f is not None and f.error is not None else 0
        leader = current_leader(ctx, tid, p, code)
        leaders.append(leader["leader_id"])
        by_topic.setdefault(tid, []).append(
            {
                "partition_index": p,
                "error_code": code,
                "error_message": (str(f.error) or None) if f is not None and f.error is not None else None,
                "acknowledge_error_code": a.error_code if a is not None else 0,
                "acknowledge_error_message": a.error_message if a is not None else None,
                "current_leader": leader,
                "records": f.records if f is not None and f.records is not None else b"",
                "acquired_records": [
                    {
                        "first_offset": r.first_offset,
                        "last_offset": r.last_offset,
                        "delivery_count": r.delivery_count,
                    }
                    for r in (f.acquired if f is not None else [])
                ],
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [{"topic_id": tid, "partitions": parts} for tid, parts in by_topic.items()],
        "node_endpoints": node_endpoints(ctx, leaders),  # type: ignore[typeddict-item]
    }
