"""Connect records: what source tasks return from ``poll()`` and sink tasks receive in ``put()``.

Records are immutable dataclasses with keyword-only fields; transforms derive changed copies with
:meth:`ConnectRecord.new_record`. ``timestamp`` is milliseconds since the epoch (None: the producer
stamps it). ``headers`` is a list of ``(key, value)`` pairs: on the way out a ``str`` value is sent
UTF-8 encoded, ``bytes`` as they are, None as a null header, anything else as compact JSON; sink
records carry the raw ``bytes`` (or None) read from Kafka.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from zurau.connect.data import Schema

Header = tuple[str, Any]


@dataclass(frozen=True, kw_only=True)
class ConnectRecord:
    """A key/value pair bound for (or read from) ``topic``, with optional Connect schemas."""

    topic: str
    kafka_partition: int | None = None
    key_schema: Schema | None = None
    key: Any = None
    value_schema: Schema | None = None
    value: Any = None
    timestamp: int | None = None
    headers: tuple[Header, ...] = ()

    def new_record(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (for example ``topic=..., value=..., value_schema=...``)."""
        if "headers" in changes:
            changes["headers"] = tuple(changes["headers"])
        return dataclasses.replace(self, **changes)

    def with_header(self, key: str, value: Any) -> Self:
        return self.new_record(headers=(*self.headers, (key, value)))

    def header(self, key: str) -> Any:
        """The last value of header ``key``, or None."""
        for k, v in reversed(self.headers):
            if k == key:
                return v
        return None


@dataclass(frozen=True, kw_only=True)
class SourceRecord(ConnectRecord):
    """A record produced by a source task.

    ``source_partition`` names where in the external system the record comes from (a file, a
    table, a replication slot) and ``source_offset`` how far the task has read there; both are
    small JSON-able dicts. The worker stores the latest offset per partition once the record is
    acknowledged by Kafka, and hands it back on restart through the task's
    :class:`~zurau.connect.api.OffsetStorageReader`.
    """

    source_partition: Mapping[str, Any] | None = None
    source_offset: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class SinkRecord(ConnectRecord):
    """A record consumed from Kafka and converted, handed to a sink task's ``put()``.

    ``kafka_offset`` is the record's offset in ``topic``/``kafka_partition`` before any transform
    (``original_topic``/``original_kafka_partition`` keep where it was read from, for committing).
    ``timestamp_type`` is ``"CreateTime"`` or ``"LogAppendTime"``.
    """

    kafka_offset: int = -1
    timestamp_type: str = "CreateTime"
    original_topic: str = ""
    original_kafka_partition: int = -1
    original_kafka_offset: int = -1

    def __post_init__(self) -> None:
        if not self.original_topic:
            object.__setattr__(self, "original_topic", self.topic)
        if self.original_kafka_partition < 0 and self.kafka_partition is not None:
            object.__setattr__(self, "original_kafka_partition", self.kafka_partition)
        if self.original_kafka_offset < 0:
            object.__setattr__(self, "original_kafka_offset", self.kafka_offset)

