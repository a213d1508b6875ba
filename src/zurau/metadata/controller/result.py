"""What every control manager returns, and the working state of one request.

Invariants: a :class:`ControllerResult` is the whole outcome of one request: its records are
appended as one batch (in list order) and its response is given only once they are committed.
A :class:`PendingRecords` accumulates the records of one request item by item; its ``image`` is
the image those records lead to, so later items of the same request see earlier ones (a topic
created earlier in a CreateTopics request exists for the next item).

A user request (an admin API) may generate at most :data:`MAX_RECORDS_PER_USER_OP` records, Kafka's
``QuorumController.MAX_RECORDS_PER_USER_OP`` (KAFKA-14996): its result is one atomic batch, and a
larger one would cost the controller unbounded memory and time on the event loop, and could not be
written to the metadata log anyway. The managers check the bound *before* they build the records
(the request's numbers are enough), so an excessive request costs nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from zurau.metadata.image import MetadataDelta, MetadataImage
from zurau.metadata.records import MetadataRecord
from zurau.protocol.errors import KafkaError, UnknownServerError

log = logging.getLogger("zurau.controller")

T = TypeVar("T")

MAX_RECORDS_PER_USER_OP = 10_000
"""Records one user request may generate (Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP``,
``MAX_RECORDS_PER_BATCH``)."""
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."
"""Kafka's POLICY_VIOLATION message for a request over :data:`MAX_RECORDS_PER_USER_OP` records."""


@dataclass(frozen=True)
class ControllerResult(Generic[T]):
    """Records to commit and the response to give once they are committed."""

    records: list[MetadataRecord]
    response: T


@dataclass
class PendingRecords:
    """Records produced so far by one request, and the image they lead to (for later items).
    The image is a view over one working copy (:class:`MetadataDelta`), not a new image per
    item: a request's cost grows with its own size, not with the number of topics."""

    image: MetadataImage
    records: list[MetadataRecord] = field(default_factory=list)
    _delta: MetadataDelta | None = None

    def add(self, records: list[MetadataRecord]) -> None:
        if not records:
            return
        self.records.extend(records)
        if self._delta is None:
            self._delta = MetadataDelta(self.image)
        self._delta.replay(records)
        self.image = self._delta.image()


def error_of(exc: BaseException) -> tuple[int, str]:
    """Kafka error code and message for an exception; unexpected ones are logged."""
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    log.exception("unexpected controller error", exc_info=exc)
    return UnknownServerError.code, f"{type(exc).__name__}: {exc}"


def duplicated(items: Sequence[Any]) -> set[Any]:
    """The items that occur more than once (Kafka answers each such one with INVALID_REQUEST)."""
    seen: set[Any] = set()
    dups: set[Any] = set()
    for item in items:
        if item in seen:
            dups.add(item)
        seen.add(item)
    return dups
