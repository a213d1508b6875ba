"""DeleteTopics: delete topics by name (v1-v6) or by topic id (v6).

Follows Kafka's ``ControllerApis.deleteTopics``:

* ``delete.topic.enable=false`` refuses the whole request, every topic answered with
  TOPIC_DELETION_DISABLED (INVALID_REQUEST below v3, whose clients do not know that code).
* A name or id given twice: INVALID_REQUEST "Duplicate topic name." / "Duplicate topic id." (one entry
  per duplicated name or id; none of its occurrences is deleted). v6 entries with neither a name
  nor an id, or with both, are INVALID_REQUEST too.
* Unknown name: UNKNOWN_TOPIC_OR_PARTITION; unknown id: UNKNOWN_TOPIC_ID.
* Kafka's internal topics (``__consumer_offsets``, ``__transaction_state``) are refused with
  INVALID_TOPIC_EXCEPTION: the coordinators depend on them (Kafka's admin tools refuse this
  client-side; Zurau guards the broker as well).

Results come back in request order (Kafka shuffles them; clients match by name or id). Deletion is
immediate on a single node, so the response does not wait on ``timeout_ms``.
"""

from __future__ import annotations

import uuid
from typing import Any

from zurau.broker.handlers._common import ZERO_UUID, duplicated, error_of
from zurau.broker.request_context import RequestContext
from zurau.metadata.topic_registry import INTERNAL_TOPICS
from zurau.protocol.errors import (
    InvalidRequestError,
    InvalidTopicError,
    TopicDeletionDisabledError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)

API_KEY = 20


def _result(
    name: str | None, topic_id: uuid.UUID, code: int = 0, message: str | None = None
) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}


def _requested(ctx: RequestContext, req: dict[str, Any]) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version >= 6:
        return [(t["name"], t["topic_id"] or ZERO_UUID) for t in req["topics"]]
    return [(name, ZERO_UUID) for name in req["topic_names"]]


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    requested = _requested(ctx, req)
    if not ctx.config.get("delete.topic.enable"):
        err = (
            TopicDeletionDisabledError("Topic deletion is disabled.")
            if ctx.api_version >= 3
            else InvalidRequestError("Topic deletion is disabled.")
        )
        return {
            "throttle_time_ms": 0,
            "responses": [_result(name, tid, err.code, str(err)) for name, tid in requested],
        }

    dup_names = duplicated([n for n, tid in requested if n is not None and tid == ZERO_UUID])
    dup_ids = duplicated([tid for n, tid in requested if n is None and tid != ZERO_UUID])
    ids_given = {tid for n, tid in requested if n is None and tid != ZERO_UUID}
    # The topic a name resolves to may also be named by id in the same request: Kafka refuses both.
    named_ids = set()
    for n, tid in requested:
        if n is not None and tid == ZERO_UUID and n not in dup_names:
            t = ctx.image.get(n)
            if t is not None and t.topic_id in ids_given:
                named_ids.add(t.topic_id)
    results: list[dict[str, Any]] = []
    reported: set[Any] = set()
    for name, topic_id in requested:
        if name is None and topic_id == ZERO_UUID:
            results.append(
                _result(
                    None, ZERO_UUID, InvalidRequestError.code, "Neither topic name nor id were specified."
                )
            )
            continue
        if name is not None and topic_id != ZERO_UUID:
            results.append(
                _result(
                    name,
                    topic_id,
                    InvalidRequestError.code,
                    "You may not specify both topic name and topic id.",
                )
            )
            continue
        if name in dup_names or topic_id in dup_ids:
            key = name if name is not None else topic_id
            if key not in reported:
                reported.add(key)
                msg = "Duplicate topic name." if name is not None else "Duplicate topic id."
                results.append(_result(name, topic_id, InvalidRequestError.code, msg))
            continue
        try:
            if name is None:
                t = ctx.image.by_id(topic_id)
                if t is None:
                    raise UnknownTopicIdError(f"Topic id {topic_id} does not exist.")
                if topic_id in named_ids:
                    raise InvalidRequestError("The topic id was also supplied by name.")
            else:
                t = ctx.image.get(name)
                if t is None:
                    raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
                if t.topic_id in named_ids:
                    topic_id = t.topic_id
                    raise InvalidRequestError(
                        "The provided topic name maps to an ID that was already supplied."
                    )
            if t.name in INTERNAL_TOPICS:
                raise InvalidTopicError(f"Topic {t.name} is a Kafka internal topic and cannot be deleted.")
            ctx.controller.delete_topic(t.name)
            results.append(_result(t.name, t.topic_id))
        except Exception as e:
            code, msg = error_of(e)
            results.append(_result(name, topic_id, code, msg))
    return {"throttle_time_ms": 0, "responses": results}
