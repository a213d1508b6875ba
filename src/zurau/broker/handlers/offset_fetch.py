"""OffsetFetch: a group's committed offsets (v8+: several groups per request).

A partition without a committed offset answers offset -1 and metadata "". A null topic list
(v2+) returns every committed offset of the group. v9 may carry a KIP-848 member id and epoch,
checked against the group (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). v10 names topics by id.
``require_stable`` (v7+): a partition whose offsets a transaction has committed but not yet
completed (TxnOffsetCommit before its COMMIT/ABORT marker) answers UNSTABLE_OFFSET_COMMIT, which
clients retry; without it the last committed offset is returned.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._authz import GROUP, TOPIC, Op, allowed, allowed_names
from zurau.broker.handlers._groups import coordinator, since
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import FetchedOffset, OffsetFetchResult
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)

API_KEY = ApiKey.OFFSET_FETCH


def _partition(f: FetchedOffset) -> dict[str, Any]:
    return {
        "partition_index": f.partition,
        "committed_offset": f.offset,
        "committed_leader_epoch": f.leader_epoch,
        "metadata": f.metadata,
        "error_code": f.error_code,
    }


async def _fetch_group(
    ctx: RequestContext,
    group_id: str,
    topics: list[dict[str, Any]] | None,
    by_id: bool,
    member_id: str | None = None,
    member_epoch: int = -1,
    require_stable: bool = False,
) -> tuple[int, list[dict[str, Any]]]:
    """(group error, topics of the response) for one group."""
    groups = coordinator(ctx)
    if not allowed(ctx, Op.DESCRIBE, GROUP, group_id):
        return GroupAuthorizationFailedError.code, []
    err = groups.coordinator_error(group_id)
    if err is not None:
        return err.code, []
    registry = ctx.image
    wanted: list[tuple[str, list[int]]] | None = None
    unknown_ids: list[dict[str, Any]] = []
    if topics is not None:
        wanted = []
        for t in topics:
            if by_id:
                tm = registry.by_id(t["topic_id"])
                if tm is None:
                    unknown_ids.append(
                        {
                            "topic_id": t["topic_id"],
                            "partitions": [
                                _partition(FetchedOffset(p, -1, -1, "", UnknownTopicIdError.code))
                                for p in t["partition_indexes"]
                            ],
                        }
                    )
                    continue
                wanted.append((tm.name, list(t["partition_indexes"])))
            else:
                wanted.append((t["name"], list(t["partition_indexes"])))
    result: OffsetFetchResult = await groups.offset_fetch(
        group_id, wanted, member_id=member_id, member_epoch=member_epoch, require_stable=require_stable
    )
    if result.error_code:
        return result.error_code, []
    described: set[str] | None = None
    if ctx.services.authorizer is not None:  # all topics: only those it may DESCRIBE; asked for: an error
        described = allowed_names(ctx, Op.DESCRIBE, TOPIC, (n for n, _ in result.topics), log=wanted is not None)
    out = []
    for name, parts in result.topics:
        if described is not None and name not in described:
            if wanted is None:
                continue
            parts = [FetchedOffset(f.partition, -1, -1, "", TopicAuthorizationFailedError.code) for f in parts]
        entry: dict[str, Any] = {"name": name, "partitions": [_partition(f) for f in parts]}
        if by_id:
            tm = registry.get(name)
            if tm is None:
                continue
            entry["topic_id"] = tm.topic_id
        out.append(entry)
    return 0, out + unknown_ids


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    version = ctx.api_version
    if version >= 8:
        groups = []
        for g in req["groups"]:
            code, topics = await _fetch_group(
                ctx,
                g["group_id"],
                g["topics"],
                version >= 10,
                since(g, "member_id", version, 9),
                g["member_epoch"],
                req["require_stable"],
            )
            groups.append({"group_id": g["group_id"], "topics": topics, "error_code": code})
        return {"throttle_time_ms": 0, "groups": groups}
    code, topics = await _fetch_group(
        ctx, req["group_id"], req["topics"], False, require_stable=version >= 7 and req["require_stable"]
    )
    if code and version < 2:
        # v1 has no top-level error: every requested partition carries it.
        topics = [
            {
                "name": t["name"],
                "partitions": [
                    _partition(FetchedOffset(p, -1, -1, "", code)) for p in t["partition_indexes"]
                ],
            }
            for t in req["topics"] or []
        ]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": code}
