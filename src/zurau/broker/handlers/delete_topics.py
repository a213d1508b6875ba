"""DeleteTopics: by name (all versions) or by topic id (v6+), handed to the controller.

The controller checks, as Kafka does: ``delete.topic.enable`` (TOPIC_DELETION_DISABLED from v3,
INVALID_REQUEST before), neither or both of name and id (INVALID_REQUEST), duplicates (one
INVALID_REQUEST result each), a topic named both by name and by id, unknown names
(UNKNOWN_TOPIC_OR_PARTITION) and ids (UNKNOWN_TOPIC_ID), and internal topics
(INVALID_TOPIC_EXCEPTION; clients refuse these client-side, Zurau guards the broker as well).
Each deleted topic is one RemoveTopicRecord; its partitions' logs and committed offsets go once
the record is applied.
"""

from __future__ import annotations

import uuid
from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.types import ZERO_UUID

API_KEY = ApiKey.DELETE_TOPICS


def _requested(ctx: RequestContext, req: dict[str, Any]) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version >= 6:
        return [(t["name"], t["topic_id"] or ZERO_UUID) for t in req["topics"]]
    return [(name, ZERO_UUID) for name in req["topic_names"]]


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    results = await ctx.controller.delete_topics(_requested(ctx, req), ctx.api_version)
    return {"throttle_time_ms": 0, "responses": results}
