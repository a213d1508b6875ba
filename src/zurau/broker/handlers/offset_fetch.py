"""OffsetFetch: a group's committed offsets (v8+: several groups per request).

A partition without a committed offset answers offset -1 and metadata "". A null topic list
(v2+) returns every committed offset of the group. v9 may carry a KIP-848 member id and epoch,
checked against the group (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). v10 names topics by id.
``require_stable`` (v7+): a partition whose offsets a transaction has committed but not yet
completed (TxnOffsetCommit before its COMMIT/ABORT marker) answers UNSTABLE_OFFSET_COMMIT, which
clients retry; without it the last committed offset is returned.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import GROUP, TOPIC, Op, allowed, allowed_names
from zurau.broker.handlers._groups import coordinator
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import FetchedOffset, OffsetFetchResult
from zurau.metadata.image import MetadataImage
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)
from zurau.protocol.messages import (
    OffsetFetchRequest,
    OffsetFetchRequestGroupsTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroups,
    OffsetFetchResponseGroupsTopics,
    OffsetFetchResponseGroupsTopicsPartitions,
)

API_KEY = ApiKey.OFFSET_FETCH

#: The partitions asked for, by topic name (None: every committed offset of the group).
Wanted = list[tuple[str, list[int]]] | None
#: A group's answer before it takes its version's shape: (topic name, partition entries).
Fetched = list[tuple[str, list[OffsetFetchResponseGroupsTopicsPartitions]]]


def _partition(f: FetchedOffset) -> OffsetFetchResponseGroupsTopicsPartitions:
    """A partition entry (the same fields before v8, in ``OffsetFetchResponseTopicsPartitions``)."""
    return {
        "partition_index": f.partition,
        "committed_offset": f.offset,
        "committed_leader_epoch": f.leader_epoch,
        "metadata": f.metadata,
        "error_code": f.error_code,
    }


def _wanted(
    image: MetadataImage, topics: list[OffsetFetchRequestGroupsTopics] | None, by_id: bool
) -> tuple[Wanted, list[OffsetFetchResponseGroupsTopics]]:
    """A v8+ group's topics by name, and the answer for the topic ids that name no topic."""
    if topics is None:
        return None, []
    wanted: list[tuple[str, list[int]]] = []
    unknown_ids: list[OffsetFetchResponseGroupsTopics] = []
    for t in topics:
        if by_id:
            tm = image.by_id(t["topic_id"])
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
    return wanted, unknown_ids


async def _fetch_group(
    ctx: RequestContext,
    group_id: str,
    wanted: Wanted,
    member_id: str | None = None,
    member_epoch: int = -1,
    require_stable: bool = False,
) -> tuple[int, Fetched]:
    """(group error, topics of the response) for one group."""
    groups = coordinator(ctx)
    if not allowed(ctx, Op.DESCRIBE, GROUP, group_id):
        return GroupAuthorizationFailedError.code, []
    err = groups.coordinator_error(group_id)
    if err is not None:
        return err.code, []
    result: OffsetFetchResult = await groups.offset_fetch(
        group_id, wanted, member_id=member_id, member_epoch=member_epoch, require_stable=require_stable
    )
    if result.error_code:
        return result.error_code, []
    described: set[str] | None = None
    if ctx.services.authorizer is not None:  # all topics: only those it may DESCRIBE; asked for: an error
        described = allowed_names(ctx, Op.DESCRIBE, TOPIC, (n for n, _ in result.topics), log=wanted is not None)
    out: Fetched = []
    for name, parts in result.topics:
        if described is not None and name not in described:
            if wanted is None:
                continue
            parts = [FetchedOffset(f.partition, -1, -1, "", TopicAuthorizationFailedError.code) for f in parts]
        out.append((name, [_partition(f) for f in parts]))
    return 0, out


async def handle(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    version = ctx.api_version
    if version >= 8:
        by_id = version >= 10
        groups: list[OffsetFetchResponseGroups] = []
        for g in req["groups"]:
            image = ctx.image
            wanted, unknown_ids = _wanted(image, g["topics"], by_id)
            code, fetched = await _fetch_group(
                ctx,
                g["group_id"],
                wanted,
                g["member_id"] if version >= 9 else None,
                g["member_epoch"],
                req["require_stable"],
            )
            topics: list[OffsetFetchResponseGroupsTopics] = []
            for name, parts in fetched:
                entry: OffsetFetchResponseGroupsTopics = {"name": name, "partitions": parts}
                if by_id:
                    tm = image.get(name)
                    if tm is None:
                        continue
                    entry["topic_id"] = tm.topic_id
                topics.append(entry)
            groups.append({"group_id": g["group_id"], "topics": topics + unknown_ids if not code else [], "error_code": code})
        return {"throttle_time_ms": 0, "groups": groups}
    asked = req["topics"]
    code, fetched = await _fetch_group(
        ctx,
        req["group_id"],
        None if asked is None else [(t["name"], list(t["partition_indexes"])) for t in asked],
        require_stable=version >= 7 and req["require_stable"],
    )
    if code and version < 2:
        # v1 has no top-level error: every requested partition carries it.
        fetched = [
            (t["name"], [_partition(FetchedOffset(p, -1, -1, "", code)) for p in t["partition_indexes"]])
            for t in asked or []
        ]
    return {
        "throttle_time_ms": 0,
        "topics": [{"name": name, "partitions": parts} for name, parts in fetched],
        "error_code": code,
    }
