"""CreateTopics: handed to the controller, which validates every topic (in Kafka's order) and
writes the TopicRecord, ConfigRecords and PartitionRecords of each one it creates; see
:meth:`zurau.metadata.controller.QuorumController.create_topics` for the checks and errors.

``validate_only`` runs every check and creates nothing (the answer has a zero topic id). From v5
the result reports the partition count, replication factor and every config of the topic with
its value and source (sensitive values null), as Kafka does.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey

API_KEY = ApiKey.CREATE_TOPICS


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    return await ctx.controller.create_topics(req["topics"], bool(req["validate_only"]))
