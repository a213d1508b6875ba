"""CreatePartitions: grow topics to a larger partition count, through the controller.

Per topic, as Kafka's controller does: a name given twice is INVALID_REQUEST ("Duplicate topic
name.", one result for it); an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to or below
the current one INVALID_PARTITIONS; manual ``assignments`` (null lets the controller place the new
partitions) must hold exactly one replica list per new partition, each naming registered brokers,
once, with the topic's replication factor, else INVALID_REPLICA_ASSIGNMENT. ``validate_only``
checks everything and changes nothing. With an authorizer, each topic needs ALTER on it, else
TOPIC_AUTHORIZATION_FAILED.

``controller_mutation_rate`` (KIP-599, :mod:`zurau.broker.quotas.controller_mutation_quota`):
each authorized topic is charged the partitions it adds; from v3 a topic is refused with
THROTTLING_QUOTA_EXCEEDED while the client's bucket is in debt, before v3 the response is only
throttled. ``validate_only`` requests are not charged; a topic the controller fails is given back
its charge.

Size bound (Kafka's ``MAX_RECORDS_PER_USER_OP``): a topic whose new partitions would take the
request above 10,000 is answered POLICY_VIOLATION, checked by the controller before it places
anything; the other topics are unaffected. A request whose controller write fails (an error raised
rather than a result) is answered with that error for every topic it sent to the controller: it
fails that request only and the connection stays open.
"""

from __future__ import annotations

from collections.abc import Callable

from zurau.broker.handlers._authz import TOPIC, Op, allowed
from zurau.broker.quotas.controller_mutation_quota import THROTTLED_MESSAGE, admit, release_failed
from zurau.broker.quotas.throttling import controller_mutation_quota
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.result import duplicated, error_of
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import ThrottlingQuotaExceededError, TopicAuthorizationFailedError
from zurau.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopics,
    CreatePartitionsResponse,
    CreatePartitionsResponseResults,
)

API_KEY = ApiKey.CREATE_PARTITIONS
STRICT_QUOTA_SINCE = 3


def _cost(
    ctx: RequestContext, topics: list[CreatePartitionsRequestTopics]
) -> Callable[[CreatePartitionsRequestTopics], tuple[str, int] | None]:
    """The partitions each topic would add, as :func:`admit` wants them (None: the controller
    refuses it anyway: unknown, named twice, or not growing)."""
    image, dups = ctx.image, set(duplicated([t["name"] for t in topics]))

    def cost(t: CreatePartitionsRequestTopics) -> tuple[str, int] | None:
        known = image.get(t["name"]) if t["name"] not in dups else None
        added = int(t["count"]) - known.num_partitions if known is not None else 0
        return (t["name"], added) if added > 0 else None

    return cost


async def _create(
    ctx: RequestContext, topics: list[CreatePartitionsRequestTopics], validate_only: bool
) -> list[CreatePartitionsResponseResults]:
    if not topics:
        return []
    try:
        return await ctx.controller.create_partitions(topics, validate_only)
    except Exception as e:  # the write failed: this request only (cancellation propagates)
        code, message = error_of(e)
        names = dict.fromkeys(t["name"] for t in topics)
        return [{"name": name, "error_code": code, "error_message": message} for name in names]


async def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    topics = req["topics"]
    denied: list[CreatePartitionsResponseResults] = []
    if ctx.services.authorizer is not None and not ctx.on_controller_listener:
        ok = [t for t in topics if allowed(ctx, Op.ALTER, TOPIC, t["name"])]
        denied = [{"name": t["name"], "error_code": TopicAuthorizationFailedError.code,
                   "error_message": "Topic authorization failed."} for t in topics if t not in ok]
        topics = ok
    validate_only = bool(req["validate_only"])
    quota = None if validate_only else controller_mutation_quota(ctx, STRICT_QUOTA_SINCE)
    if quota is None:
        return {"throttle_time_ms": 0, "results": await _create(ctx, topics, validate_only) + denied}
    topics, throttled, charged = admit(quota, topics, _cost(ctx, topics))
    denied += [{"name": t["name"], "error_code": ThrottlingQuotaExceededError.code, "error_message": THROTTLED_MESSAGE}
               for t in throttled]
    try:
        results = await _create(ctx, topics, validate_only)
    except BaseException:
        release_failed(quota, charged, list(charged))
        raise
    release_failed(quota, charged, [r["name"] for r in results if r["error_code"]])
    return {"throttle_time_ms": quota.throttle_ms(), "results": results + denied}
