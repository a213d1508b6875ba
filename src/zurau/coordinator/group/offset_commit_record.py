"""Offset-commit records of ``__consumer_offsets`` (Kafka's OffsetCommitKey / OffsetCommitValue).

Key (key version 0 or 1; Kafka writes 1)::

    group      string   the group id
    topic      string   the topic name
    partition  int32    the partition index

Value (value versions 0-4; flexible from 4; Zurau writes 3, or 1 when the commit carries an
explicit expiry from OffsetCommit v2-v4 ``retention_time_ms``)::

    offset            int64   v0+  the committed offset (the next record to consume)
    leader_epoch      int32   v3+  leader epoch of the last consumed record, -1 if unknown
    metadata          string  v0+  the client's metadata string (never null on disk; "" if none)
    commit_timestamp  int64   v0+  when the commit was made (ms)
    expire_timestamp  int64   v1   explicit expiry (ms), only in v1

A tombstone (null value) deletes the committed offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zurau.protocol.schema import INT32, INT64, STRING, F

KEY = (
    F("group", STRING),
    F("topic", STRING),
    F("partition", INT32),
)

VALUE = (
    F("offset", INT64),
    F("leader_epoch", INT32, versions="3+", default=-1),
    F("metadata", STRING),
    F("commit_timestamp", INT64),
    F("expire_timestamp", INT64, versions="1", default=-1),
)

KEY_VERSION = 1


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset as the coordinator keeps it (``expire_timestamp`` -1: none)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1

    def value_version(self) -> int:
        return 1 if self.expire_timestamp >= 0 else 3

    def to_value(self) -> dict[str, object]:
        return {
            "offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "expire_timestamp": self.expire_timestamp,
        }

    @classmethod
    def from_value(cls, value: dict[str, Any], version: int) -> OffsetAndMetadata:
        return cls(
            int(value["offset"]),
            int(value["leader_epoch"]) if version >= 3 else -1,
            str(value["metadata"] or ""),
            int(value["commit_timestamp"]),
            int(value["expire_timestamp"]) if version == 1 else -1,
        )
