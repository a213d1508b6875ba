"""DeleteTopics: by name (all versions) or by topic id (v6+), handed to the controller.

The controller checks, as Kafka does: ``delete.topic.enable`` (TOPIC_DELETION_DISABLED from v3,
INVALID_REQUEST before), neither or both of name and id (INVALID_REQUEST), duplicates (one
INVALID_REQUEST result each), a topic named both by name and by id, unknown names
(UNKNOWN_TOPIC_OR_PARTITION) and ids (UNKNOWN_TOPIC_ID), and internal topics
(INVALID_TOPIC_EXCEPTION; clients refuse these client-side, Zurau guards the broker as well).
Each deleted topic is one RemoveTopicRecord; its partitions' logs and committed offsets go once
the record is applied.

With an authorizer, each topic needs DELETE on it; a refused one is answered
TOPIC_AUTHORIZATION_FAILED (an unknown id stays UNKNOWN_TOPIC_ID) and never reaches the controller.
"""

from __future__ import annotations

import uuid
from typing import Any

from zurau.broker.handlers._authz import TOPIC, Op, allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError
from zurau.types import ZERO_UUID

API_KEY = ApiKey.DELETE_TOPICS


def _requested(ctx: RequestContext, req: dict[str, Any]) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version >= 6:
        return [(t["name"], t["topic_id"] or ZERO_UUID) for t in req["topics"]]
    return [(name, ZERO_UUID) for name in req["topic_names"]]


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    requested = _requested(ctx, req)
    denied: list[dict[str, Any]] = []
    if ctx.services.authorizer is not None and not ctx.on_controller_listener:
        ok = []
        for name, topic_id in requested:
            known = ctx.image.by_id(topic_id) if name is None else None
            resolved = name if name is not None else (known.name if known is not None else None)
            if resolved is None or allowed(ctx, Op.DELETE, TOPIC, resolved):
                ok.append((name, topic_id))
            else:
                denied.append({"name": name, "topic_id": topic_id, "error_code": TopicAuthorizationFailedError.code,
                               "error_message": "Topic authorization failed."})
        requested = ok
    results = await ctx.controller.delete_topics(requested, ctx.api_version) if requested else []
    return {"throttle_time_ms": 0, "responses": results + denied}
