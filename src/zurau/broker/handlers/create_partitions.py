"""CreatePartitions: grow topics to a larger partition count, through the controller.

Per topic, as Kafka's controller does: a name given twice is INVALID_REQUEST ("Duplicate topic
name.", one result for it); an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to or below
the current one INVALID_PARTITIONS; manual ``assignments`` (null lets the controller place the new
partitions) must hold exactly one replica list per new partition, each naming registered brokers,
once, with the topic's replication factor, else INVALID_REPLICA_ASSIGNMENT. ``validate_only``
checks everything and changes nothing.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey

API_KEY = ApiKey.CREATE_PARTITIONS


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    results = await ctx.controller.create_partitions(req["topics"], bool(req["validate_only"]))
    return {"throttle_time_ms": 0, "results": results}
