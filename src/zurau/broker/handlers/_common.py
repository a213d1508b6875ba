"""Helpers shared by handlers: topic lookup by name or id, and error-code mapping."""

from __future__ import annotations

import logging
import uuid

from zurau.broker.request_context import RequestContext
from zurau.metadata.image import MetadataImage, TopicImage
from zurau.protocol.errors import (
    KafkaError,
    UnknownServerError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from zurau.types import ZERO_UUID

log = logging.getLogger("zurau.handlers")


def resolve_topic(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> TopicImage:
    """Find a topic by id (when given and non-zero) or by name; raise the matching Kafka error."""
    topics = ctx.image
    if topic_id is not None and topic_id != ZERO_UUID:
        t = topics.by_id(topic_id)
        if t is None:
            raise UnknownTopicIdError(f"unknown topic id {topic_id}")
        return t
    t = topics.get(name or "")
    if t is None:
        raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
    return t


def error_of(exc: BaseException) -> tuple[int, str]:
    """Kafka error code and message for an exception; unexpected ones are logged."""
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    log.exception("unexpected error", exc_info=exc)
    return UnknownServerError.code, f"{type(exc).__name__}: {exc}"


def controller_id(ctx: RequestContext, image: MetadataImage) -> int:
    """The active controller's id; this node's on a single node that knows no controller."""
    cid = ctx.services.controller_id()
    if cid == -1 and not image.brokers:
        return ctx.node_id
    return cid
