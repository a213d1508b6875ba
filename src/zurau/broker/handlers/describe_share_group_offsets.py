"""DescribeShareGroupOffsets (KIP-932, api key 90): the start offset, leader epoch and (v1,
KIP-1226) lag of a share group's share partitions, for ``kafka-share-groups.sh --describe``.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`). Per group, as Kafka's
``KafkaApis``: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), then the coordinator's own
errors (NOT_COORDINATOR ...). A group whose ``topics`` is null is described for every share
partition it has state for, leaving out the topics the principal may not DESCRIBE; named topics
the principal may not DESCRIBE are answered TOPIC_AUTHORIZATION_FAILED per partition (start
offset -1); an empty topic list answers no topics. The start offsets come from the share
coordinator (ReadShareGroupStateSummary); absence of state is start offset -1, not an error.
"""

from __future__ import annotations

from typing import Any, cast

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError
from zurau.protocol.messages import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroups,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroups,
)
from zurau.types import ZERO_UUID

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
ENABLED_BY = "group.share.enable"

TOPIC_AUTHORIZATION_FAILED_MESSAGE = "Topic authorization failed."


def _group_error(gid: str, code: int, message: str | None) -> DescribeShareGroupOffsetsResponseGroups:
    return {"group_id": gid, "topics": [], "error_code": code, "error_message": message}


async def _describe(
    ctx: RequestContext, g: DescribeShareGroupOffsetsRequestGroups
) -> DescribeShareGroupOffsetsResponseGroups:
    gid = g["group_id"]
    err = group_error(ctx, gid, Op.DESCRIBE)
    if err is not None:
        return _group_error(gid, err.code, err.message)
    requested = g.get("topics")
    groups = coordinator(ctx)
    if requested is None:
        answer = await groups.describe_share_group_offsets(gid, None)
        visible = allowed_names(ctx, Op.DESCRIBE, TOPIC, (t["topic_name"] for t in answer["topics"]))
        answer["topics"] = [t for t in answer["topics"] if t["topic_name"] in visible]
        return cast(DescribeShareGroupOffsetsResponseGroups, answer)
    if not requested:
        return {"group_id": gid, "topics": [], "error_code": 0, "error_message": None}
    visible = allowed_names(ctx, Op.DESCRIBE, TOPIC, (t["topic_name"] for t in requested))
    asked = [(t["topic_name"], list(t["partitions"])) for t in requested if t["topic_name"] in visible]
    answer = await groups.describe_share_group_offsets(gid, asked) if asked else _empty(gid)
    if answer["error_code"]:
        return cast(DescribeShareGroupOffsetsResponseGroups, answer)
    for t in requested:
        if t["topic_name"] in visible:
            continue
        answer["topics"].append(
            {
                "topic_name": t["topic_name"],
                "topic_id": ZERO_UUID,
                "partitions": [
                    {
                        "partition_index": p,
                        "start_offset": -1,
                        "leader_epoch": 0,
                        "lag": -1,
                        "error_code": TopicAuthorizationFailedError.code,
                        "error_message": TOPIC_AUTHORIZATION_FAILED_MESSAGE,
                    }
                    for p in t["partitions"]
                ],
            }
        )
    return cast(DescribeShareGroupOffsetsResponseGroups, answer)


def _empty(gid: str) -> dict[str, Any]:
    return {"group_id": gid, "topics": [], "error_code": 0, "error_message": None}


async def handle(
    ctx: RequestContext, req: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    out = [await _describe(ctx, g) for g in req["groups"]]
    return {"throttle_time_ms": 0, "groups": out}
