"""Kafka's rules for topic names, and cluster ids."""

from __future__ import annotations

import base64
import re
import uuid

from zurau.protocol.errors import InvalidTopicError

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str | None) -> None:
    """Kafka's rules: 1-249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME:
        raise InvalidTopicError(f"topic name is longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL.match(name):
        raise InvalidTopicError(f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_' and '-'")


def new_cluster_id() -> str:
    """A Kafka-style cluster id: 16 random bytes, URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
