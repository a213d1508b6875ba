"""CreateTopics: handed to the controller, which validates every topic (in Kafka's order) and
writes the TopicRecord, ConfigRecords and PartitionRecords of each one it creates; see
:meth:`zurau.metadata.controller.replication_control.ReplicationControlManager.create_topics` for the checks and errors.

``validate_only`` runs every check and creates nothing (the answer has a zero topic id). From v5
the result reports the partition count, replication factor and every config of the topic with
its value and source (sensitive values null), as Kafka does.

With an authorizer, each topic needs CREATE on the cluster or on the topic; a refused one is
answered TOPIC_AUTHORIZATION_FAILED and never reaches the controller.

``controller_mutation_rate`` (KIP-599, :mod:`zurau.broker.quotas.controller_mutation_quota`):
each authorized topic that is not already there is charged its partition count (its
assignments, else ``num_partitions``, -1 meaning ``num.partitions``); from v6 a topic is refused
with THROTTLING_QUOTA_EXCEEDED while the client's bucket is in debt, before v6 the response is
only throttled. ``validate_only`` requests are not charged; a topic the controller fails is given
back its charge.

A request whose controller write fails (an error raised by the controller or the metadata log
rather than a result, e.g. RECORD_LIST_TOO_LARGE) is answered, as by Kafka's ``getErrorResponse``,
with that error for every topic it sent to the controller: it fails that request only, the
connection stays open, and a broker that forwarded it gets an answer instead of a dropped
connection to retry on.
"""

from __future__ import annotations

from collections.abc import Callable

from zurau.broker.handlers._authz import Op, topic_or_cluster_allowed
from zurau.broker.quotas.controller_mutation_quota import THROTTLED_MESSAGE, admit, release_failed
from zurau.broker.quotas.throttling import controller_mutation_quota
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.replication_control import create_topic_error
from zurau.metadata.controller.result import duplicated, error_of
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import ThrottlingQuotaExceededError, TopicAuthorizationFailedError
from zurau.protocol.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopics,
    CreateTopicsResponse,
    CreateTopicsResponseTopics,
)

API_KEY = ApiKey.CREATE_TOPICS
STRICT_QUOTA_SINCE = 6


def _cost(
    ctx: RequestContext, topics: list[CreateTopicsRequestTopics]
) -> Callable[[CreateTopicsRequestTopics], tuple[str, int] | None]:
    """The partitions each topic would create, as :func:`admit` wants them (None: the controller
    refuses it anyway: already there, named twice, or no valid partition count)."""
    image, dups = ctx.image, set(duplicated([t["name"] for t in topics]))

    def cost(t: CreateTopicsRequestTopics) -> tuple[str, int] | None:
        if t["name"] in dups or image.get(t["name"]) is not None:
            return None
        n = len(t.get("assignments") or ()) or int(t.get("num_partitions", -1))
        if n == -1:
            n = int(ctx.config.get("num.partitions"))
        return (t["name"], n) if n > 0 else None

    return cost


async def _create(ctx: RequestContext, topics: list[CreateTopicsRequestTopics], validate_only: bool) -> CreateTopicsResponse:
    try:
        return await ctx.controller.create_topics(topics, validate_only)
    except Exception as e:  # the write failed: this request only (cancellation propagates)
        code, message = error_of(e)
        names = dict.fromkeys(t["name"] for t in topics)
        return {"throttle_time_ms": 0, "topics": [_refused(name, code, message) for name in names]}


def _refused(name: str, code: int, message: str) -> CreateTopicsResponseTopics:
    return create_topic_error(name, code, message)


async def handle(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    topics, validate_only = req["topics"], bool(req["validate_only"])
    quota = None if validate_only else controller_mutation_quota(ctx, STRICT_QUOTA_SINCE)
    if quota is None and (ctx.services.authorizer is None or ctx.on_controller_listener):
        return await _create(ctx, topics, validate_only)
    ok, denied = topics, []
    if ctx.services.authorizer is not None and not ctx.on_controller_listener:
        ok = [t for t in topics if topic_or_cluster_allowed(ctx, Op.CREATE, t["name"])]
        denied = [
            _refused(t["name"], TopicAuthorizationFailedError.code, "Topic authorization failed.")
            for t in topics if t not in ok
        ]
    if quota is None:
        response: CreateTopicsResponse = await _create(ctx, ok, validate_only) if ok else {}
        return {"throttle_time_ms": 0, **response, "topics": [*response.get("topics", ()), *denied]}
    ok, throttled, charged = admit(quota, ok, _cost(ctx, ok))
    denied += [_refused(t["name"], ThrottlingQuotaExceededError.code, THROTTLED_MESSAGE) for t in throttled]
    try:
        response = await _create(ctx, ok, validate_only) if ok else {"topics": []}
    except BaseException:
        release_failed(quota, charged, list(charged))
        raise
    release_failed(quota, charged, [r["name"] for r in response["topics"] if r["error_code"]])
    throttle = max(int(response.get("throttle_time_ms") or 0), quota.throttle_ms())
    return {**response, "throttle_time_ms": throttle, "topics": [*response["topics"], *denied]}
