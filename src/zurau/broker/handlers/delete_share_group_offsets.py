"""DeleteShareGroupOffsets (KIP-932, api key 92): delete a share group's state for whole topics,
for ``kafka-share-groups.sh --delete-offsets``.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`). As Kafka's ``KafkaApis``:
DELETE on the group (GROUP_AUTHORIZATION_FAILED for the whole request), then READ on each topic
(TOPIC_AUTHORIZATION_FAILED for that topic). The group must exist (GROUP_ID_NOT_FOUND) and be
empty (NON_EMPTY_GROUP); a topic without share state in the group is UNKNOWN_TOPIC_OR_PARTITION.
The state goes with DeleteShareGroupState, and the topics leave the group's initialized set, so
a later subscription starts them afresh (``share.auto.offset.reset``).
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError
from zurau.protocol.messages import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseResponses,
)
from zurau.types import ZERO_UUID

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
ENABLED_BY = "group.share.enable"


def _response(code: int, message: str | None, responses: list[Any]) -> DeleteShareGroupOffsetsResponse:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": responses}


async def handle(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    gid = req["group_id"]
    err = group_error(ctx, gid, Op.DELETE)
    if err is not None:
        return _response(err.code, err.message, [])
    names = [t["topic_name"] for t in req["topics"]]
    readable = allowed_names(ctx, Op.READ, TOPIC, names)
    refused: list[DeleteShareGroupOffsetsResponseResponses] = [
        {
            "topic_name": n,
            "topic_id": ZERO_UUID,
            "error_code": TopicAuthorizationFailedError.code,
            "error_message": "Topic authorization failed.",
        }
        for n in dict.fromkeys(names)
        if n not in readable
    ]
    asked = [n for n in dict.fromkeys(names) if n in readable]
    answer = await coordinator(ctx).delete_share_group_offsets(gid, asked)
    if answer["error_code"]:
        return _response(answer["error_code"], answer["error_message"], [])
    return _response(0, None, refused + list(answer["responses"]))
