"""OffsetCommit: store a group's consumed positions in ``__consumer_offsets``.

Each partition must exist (else UNKNOWN_TOPIC_OR_PARTITION; v10 names topics by id: UNKNOWN_TOPIC_ID).
The commit is checked against the group: a classic group's member id and generation (ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while the assignment is being
decided); a KIP-848 group's member epoch (STALE_MEMBER_EPOCH). Generation -1 with no member id
commits for a group nobody is in (standalone consumers, admin tools). Metadata longer than
``offset.metadata.max.bytes`` gets OFFSET_METADATA_TOO_LARGE. v2-v4 ``retention_time_ms`` sets an
explicit expiry.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._common import ZERO_UUID
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import OffsetCommitEntry
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitRequestTopics,
    OffsetCommitRequestTopicsPartitions,
    OffsetCommitResponse,
    OffsetCommitResponseTopics,
)
from zurau.types import TopicPartitionKey

API_KEY = ApiKey.OFFSET_COMMIT


async def handle(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    version = ctx.api_version
    topics = ctx.image
    groups = coordinator(ctx)
    group_id = req["group_id"]
    err = group_error(ctx, group_id)
    readable: set[str] | None = None
    if ctx.services.authorizer is not None and err is None:
        names = (t["name"] if version < 10 else getattr(topics.by_id(t["topic_id"]), "name", None) for t in req["topics"])
        readable = allowed_names(ctx, Op.READ, TOPIC, (n for n in names if n))
    # (topic as requested, its name (resolved, else as requested), [(partition, error or None:
    # committed, its code in the coordinator's answer)])
    plan: list[tuple[OffsetCommitRequestTopics, str, list[tuple[OffsetCommitRequestTopicsPartitions, int | None]]]] = []
    entries: list[OffsetCommitEntry] = []
    for t in req["topics"]:
        if version >= 10:
            tm = topics.by_id(t["topic_id"]) if t["topic_id"] != ZERO_UUID else None
            missing = UnknownTopicIdError.code
        else:
            tm = topics.get(t["name"])
            missing = UnknownTopicOrPartitionError.code
        parts: list[tuple[OffsetCommitRequestTopicsPartitions, int | None]] = []
        for p in t["partitions"]:
            if err is not None:
                parts.append((p, err.code))
            elif readable is not None and (tm.name if tm is not None else t["name"]) not in readable:
                parts.append((p, TopicAuthorizationFailedError.code))
            elif tm is None:
                parts.append((p, missing))
            elif not 0 <= p["partition_index"] < tm.num_partitions:
                parts.append((p, UnknownTopicOrPartitionError.code))
            else:
                parts.append((p, None))
                entries.append(
                    OffsetCommitEntry(
                        tm.name,
                        p["partition_index"],
                        p["committed_offset"],
                        p.get("committed_leader_epoch", -1),
                        p["committed_metadata"],
                    )
                )
        plan.append((t, tm.name if tm is not None else t.get("name", ""), parts))
    results: dict[TopicPartitionKey, int] = {}
    if entries:
        results = await groups.offset_commit(
            group_id=group_id,
            member_id=req.get("member_id", ""),
            generation_id=req.get("generation_id_or_member_epoch", -1),
            group_instance_id=req["group_instance_id"] if version >= 7 else None,
            offsets=entries,
            retention_ms=req.get("retention_time_ms", -1) if 2 <= version <= 4 else -1,
            api_version=version,
        )
    out: list[OffsetCommitResponseTopics] = []
    for t, name, parts in plan:
        out.append(
            {
                "name": t.get("name", ""),
                "topic_id": t.get("topic_id", ZERO_UUID),
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": code if code is not None else results[(name, p["partition_index"])],
                    }
                    for p, code in parts
                ],
            }
        )
    return {"throttle_time_ms": 0, "topics": out}
