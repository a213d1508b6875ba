"""AlterShareGroupOffsets (KIP-932, api key 91): set the start offsets of a share group's share
partitions, for ``kafka-share-groups.sh --reset-offsets --execute``.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`). As Kafka's ``KafkaApis``:
READ on the group (GROUP_AUTHORIZATION_FAILED for the whole request), then per topic READ
(TOPIC_AUTHORIZATION_FAILED) and existence (UNKNOWN_TOPIC_OR_PARTITION) for each of its
partitions. The group must be empty (NON_EMPTY_GROUP); a group that does not exist yet is
created (Kafka 4.2). The group coordinator bumps the group epoch and re-initializes each
partition's state with the new offset (InitializeShareGroupState, see
:meth:`~zurau.coordinator.group.service.RuntimeGroupCoordinatorService.alter_share_group_offsets`),
so a share-partition leader with older state in memory is fenced and reloads.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponseResponses,
)
from zurau.types import ZERO_UUID

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS
ENABLED_BY = "group.share.enable"

MESSAGES = {
    TopicAuthorizationFailedError.code: "Topic authorization failed.",
    UnknownTopicOrPartitionError.code: "This server does not host this topic-partition.",
}


def _response(code: int, message: str | None, responses: list[Any]) -> AlterShareGroupOffsetsResponse:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": responses}


async def handle(ctx: RequestContext, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    gid = req["group_id"]
    err = group_error(ctx, gid, Op.READ)
    if err is not None:
        return _response(err.code, err.message, [])
    readable = allowed_names(ctx, Op.READ, TOPIC, (t["topic_name"] for t in req["topics"]))
    refused: list[AlterShareGroupOffsetsResponseResponses] = []
    asked: list[tuple[str, list[tuple[int, int]]]] = []
    for t in req["topics"]:
        name = t["topic_name"]
        code = (
            TopicAuthorizationFailedError.code
            if name not in readable
            else UnknownTopicOrPartitionError.code
            if ctx.image.get(name) is None
            else 0
        )
        if code:
            refused.append(
                {
                    "topic_name": name,
                    "topic_id": ZERO_UUID,
                    "partitions": [
                        {
                            "partition_index": p["partition_index"],
                            "error_code": code,
                            "error_message": MESSAGES[code],
                        }
                        for p in t["partitions"]
                    ],
                }
            )
        else:
            asked.append((name, [(p["partition_index"], p["start_offset"]) for p in t["partitions"]]))
    if not asked:
        return _response(0, None, list(refused))
    answer = await coordinator(ctx).alter_share_group_offsets(gid, asked)
    if answer["error_code"]:
        return _response(answer["error_code"], answer["error_message"], [])
    return _response(0, None, list(answer["responses"]) + list(refused))
