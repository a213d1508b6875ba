"""Dead letters of share groups (a Zurau extension in the direction of Kafka's KIP-1191).

A share group whose group config ``errors.deadletterqueue.topic.name`` names a topic gets a copy of
every record that finishes unsuccessfully (acknowledged with REJECT, or released or expired at
``group.share.delivery.count.limit``) written to that topic by the share-partition leader, with
context headers naming where it came from. The record's own key, value, headers and timestamp are
copied only with ``errors.deadletterqueue.copy.record.enable=true`` (as KIP-1191 defines it);
otherwise the dead letter carries only the context headers, with a null key and value.

The topic name must start with the broker's ``errors.deadletterqueue.topic.name.prefix`` (default
``dlq.``) so that a share group cannot be made to write into an arbitrary topic; a name without it is
ignored (logged once). Dead letters are written at least once: before the archival that caused them
is made durable, so a leader that fails in between writes them again.

Context headers (UTF-8 strings):

=================================  ==========================================================
``__dlq.errors.group.id``          the share group
``__dlq.errors.topic``             the source topic
``__dlq.errors.partition``         the source partition
``__dlq.errors.offset``            the source offset
``__dlq.errors.delivery.count``    deliveries of the record when it finished
``__dlq.errors.reason``            ``REJECTED`` or ``DELIVERY_LIMIT``
=================================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["DEFAULT_TOPIC_PREFIX", "DeadLetter", "DeadLetterSink", "HEADER_PREFIX"]

DEFAULT_TOPIC_PREFIX = "dlq."
HEADER_PREFIX = "__dlq.errors."


@dataclass(frozen=True)
class DeadLetter:
    """One record to write to a dead-letter topic."""

    group_id: str
    topic: str
    partition: int
    offset: int
    delivery_count: int
    reason: str  # REJECTED | DELIVERY_LIMIT
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())
    timestamp_ms: int | None = None

    def record_headers(self) -> list[tuple[str, bytes | None]]:
        """The record's own headers (when copied) followed by the context headers."""
        context = {
            "group.id": self.group_id,
            "topic": self.topic,
            "partition": str(self.partition),
            "offset": str(self.offset),
            "delivery.count": str(self.delivery_count),
            "reason": self.reason,
        }
        return [*self.headers, *((HEADER_PREFIX + k, v.encode()) for k, v in context.items())]


class DeadLetterSink(Protocol):
    """Where dead letters go (the broker's internal producer)."""

    async def send(self, topic: str, letters: Sequence[DeadLetter]) -> None:
        """Write ``letters`` to ``topic``, acknowledged by all in-sync replicas; raises on failure."""
        ...
