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

``controller_mutation_rate`` (KIP-599, :mod:`zurau.broker.quotas.controller_mutation_quota`):
each authorized, known topic is charged its partition count; from v5 a topic is refused with
THROTTLING_QUOTA_EXCEEDED while the client's bucket is in debt, before v5 the response is only
throttled. A topic the controller fails is given back its charge.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from zurau.broker.handlers._authz import TOPIC, Op, allowed
from zurau.broker.quotas.controller_mutation_quota import THROTTLED_MESSAGE, admit, release_failed
from zurau.broker.quotas.throttling import controller_mutation_quota
from zurau.broker.request_context import RequestContext
from zurau.metadata.image import MetadataImage, TopicImage
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import ThrottlingQuotaExceededError, TopicAuthorizationFailedError
from zurau.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse, DeleteTopicsResponseResponses
from zurau.types import ZERO_UUID

API_KEY = ApiKey.DELETE_TOPICS
STRICT_QUOTA_SINCE = 5

_Requested = tuple[str | None, uuid.UUID]


def _known(image: MetadataImage, name: str | None, topic_id: uuid.UUID) -> TopicImage | None:
    """The topic a request (or result) entry names: by name, else by id."""
    if name is not None:
        return image.get(name)
    return image.by_id(topic_id) if topic_id != ZERO_UUID else None


def _cost(image: MetadataImage) -> Callable[[_Requested], tuple[uuid.UUID, int] | None]:
    """The partitions each entry would delete, keyed by topic id (None: unknown, or both name
    and id given: the controller refuses it anyway)."""

    def cost(entry: _Requested) -> tuple[uuid.UUID, int] | None:
        name, topic_id = entry
        known = _known(image, name, topic_id) if name is None or topic_id == ZERO_UUID else None
        return (known.topic_id, known.num_partitions) if known is not None else None

    return cost


def _failed_ids(image: MetadataImage, results: list[DeleteTopicsResponseResponses]) -> list[uuid.UUID]:
    out = []
    for r in results:
        if r["error_code"]:
            known = _known(image, None, r["topic_id"]) or _known(image, r["name"], ZERO_UUID)
            if known is not None:
                out.append(known.topic_id)
    return out


def _requested(ctx: RequestContext, req: DeleteTopicsRequest) -> list[_Requested]:
    if ctx.api_version >= 6:
        return [(t["name"], t["topic_id"] or ZERO_UUID) for t in req["topics"]]
    return [(name, ZERO_UUID) for name in req["topic_names"]]


async def _delete(ctx: RequestContext, requested: list[_Requested]) -> list[DeleteTopicsResponseResponses]:
    return await ctx.controller.delete_topics(requested, ctx.api_version) if requested else []


async def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    requested = _requested(ctx, req)
    denied: list[DeleteTopicsResponseResponses] = []
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
    quota = controller_mutation_quota(ctx, STRICT_QUOTA_SINCE)
    if quota is None:
        return {"throttle_time_ms": 0, "responses": await _delete(ctx, requested) + denied}
    image = ctx.image
    requested, throttled, charged = admit(quota, requested, _cost(image))
    denied += [{"name": name, "topic_id": topic_id, "error_code": ThrottlingQuotaExceededError.code,
                "error_message": THROTTLED_MESSAGE} for name, topic_id in throttled]
    try:
        results = await _delete(ctx, requested)
    except BaseException:
        release_failed(quota, charged, list(charged))
        raise
    release_failed(quota, charged, _failed_ids(image, results))
    return {"throttle_time_ms": quota.throttle_ms(), "responses": results + denied}
