"""CreatePartitions: grow topics to a larger partition count, through the controller.

Per topic, as Kafka's controller does: a name given twice is INVALID_REQUEST ("Duplicate topic
name.", one result for it); an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to or below
the current one INVALID_PARTITIONS; manual ``assignments`` (null lets the controller place the new
partitions) must hold exactly one replica list per new partition, each naming registered brokers,
once, with the topic's replication factor, else INVALID_REPLICA_ASSIGNMENT. ``validate_only``
checks everything and changes nothing. With an authorizer, each topic needs ALTER on it, else
TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._authz import TOPIC, Op, allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError

API_KEY = ApiKey.CREATE_PARTITIONS


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    topics, denied = req["topics"], []
    if ctx.services.authorizer is not None and not ctx.on_controller_listener:
        ok = [t for t in topics if allowed(ctx, Op.ALTER, TOPIC, t["name"])]
        denied = [{"name": t["name"], "error_code": TopicAuthorizationFailedError.code,
                   "error_message": "Topic authorization failed."} for t in topics if t not in ok]
        topics = ok
    results = await ctx.controller.create_partitions(topics, bool(req["validate_only"])) if topics else []
    return {"throttle_time_ms": 0, "results": results + denied}
