"""CreateTopics: handed to the controller, which validates every topic (in Kafka's order) and
writes the TopicRecord, ConfigRecords and PartitionRecords of each one it creates; see
:meth:`zurau.metadata.controller.QuorumController.create_topics` for the checks and errors.

``validate_only`` runs every check and creates nothing (the answer has a zero topic id). From v5
the result reports the partition count, replication factor and every config of the topic with
its value and source (sensitive values null), as Kafka does.

With an authorizer, each topic needs CREATE on the cluster or on the topic; a refused one is
answered TOPIC_AUTHORIZATION_FAILED and never reaches the controller.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._authz import Op, topic_or_cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller import create_topic_error
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError

API_KEY = ApiKey.CREATE_TOPICS


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    topics = req["topics"]
    if ctx.services.authorizer is None or ctx.on_controller_listener:
        return await ctx.controller.create_topics(topics, bool(req["validate_only"]))
    ok = [t for t in topics if topic_or_cluster_allowed(ctx, Op.CREATE, t["name"])]
    denied = [
        create_topic_error(t["name"], TopicAuthorizationFailedError.code, "Topic authorization failed.")
        for t in topics if t not in ok
    ]
    response: dict[str, Any] = {"throttle_time_ms": 0, "topics": []}
    if ok:
        response = await ctx.controller.create_topics(ok, bool(req["validate_only"]))
    return {**response, "topics": [*response["topics"], *denied]}
