"""MirrorMaker 2's internal record formats, byte for byte, so that MM2's own tools (``RemoteClusterUtils``,
``MirrorClient``) read what we write and we read what MM2 wrote.

Both use Kafka's protocol encoding: ``STRING`` is an int16 length then UTF-8, ``INT16``/``INT32``/
``INT64`` big-endian.

* Offset sync (topic ``mm2-offset-syncs.<target alias>.internal``): key ``topic: STRING,
  partition: INT32`` (the upstream partition), value ``upstreamOffset: INT64, offset: INT64``
  (the downstream offset of the same record). No version header.
* Checkpoint (topic ``<source alias>.checkpoints.internal`` on the target): key ``group: STRING,
  topic: STRING, partition: INT32`` (the downstream, renamed partition), value ``version: INT16``
  (0) then ``upstreamOffset: INT64, offset: INT64, metadata: STRING``.
* Heartbeat (topic ``heartbeats`` on the target of a flow, replicated onwards as
  ``<alias>.heartbeats``): key ``sourceClusterAlias: STRING, targetClusterAlias: STRING``, value
  ``version: INT16`` (0) then ``timestamp: INT64`` (milliseconds since the epoch, when it was
  emitted).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_OFFSETS = struct.Struct(">qq")


class FormatError(ValueError):
    """Bytes that are not an offset sync or checkpoint record."""


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    try:
        (n,) = _I16.unpack_from(data, pos)
    except struct.error as e:
        raise FormatError(str(e)) from None
    end = pos + 2 + n
    if n < 0 or end > len(data):
        raise FormatError("string runs past the end of the record")
    return data[pos + 2:end].decode("utf-8"), end


@dataclass(frozen=True)
class OffsetSync:
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def key(self) -> bytes:
        return _string(self.topic) + _I32.pack(self.partition)

    def value(self) -> bytes:
        return _OFFSETS.pack(self.upstream_offset, self.downstream_offset)

    @staticmethod
    def decode(key: bytes | None, value: bytes | None) -> OffsetSync:
        if key is None or value is None:
            raise FormatError("an offset sync has a key and a value")
        topic, pos = _read_string(key, 0)
        try:
            (partition,) = _I32.unpack_from(key, pos)
            upstream, downstream = _OFFSETS.unpack_from(value, 0)
        except struct.error as e:
            raise FormatError(str(e)) from None
        return OffsetSync(topic, partition, upstream, downstream)


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + _I32.pack(self.partition)

    def value(self) -> bytes:
        return _I16.pack(0) + _OFFSETS.pack(self.upstream_offset, self.downstream_offset) + _string(self.metadata)

    def connect_partition(self) -> dict[str, str | int]:
        """The source partition MM2 uses for a checkpoint."""
        return {"group": self.group, "topic": self.topic, "partition": self.partition}

    @staticmethod
    def decode(key: bytes | None, value: bytes | None) -> Checkpoint:
        if key is None or value is None:
            raise FormatError("a checkpoint has a key and a value")
        group, pos = _read_string(key, 0)
        topic, pos = _read_string(key, pos)
        try:
            (partition,) = _I32.unpack_from(key, pos)
            (version,) = _I16.unpack_from(value, 0)
            if version != 0:
                raise FormatError(f"unknown checkpoint version {version}")
            upstream, downstream = _OFFSETS.unpack_from(value, 2)
        except struct.error as e:
            raise FormatError(str(e)) from None
        metadata, _ = _read_string(value, 18)
        return Checkpoint(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True)
class Heartbeat:
    source_cluster_alias: str
    target_cluster_alias: str
    timestamp: int

    def key(self) -> bytes:
        return _string(self.source_cluster_alias) + _string(self.target_cluster_alias)

    def value(self) -> bytes:
        return _I16.pack(0) + _I64.pack(self.timestamp)

    def connect_partition(self) -> dict[str, str]:
        """The source partition MM2 uses for a heartbeat."""
        return {"sourceClusterAlias": self.source_cluster_alias, "targetClusterAlias": self.target_cluster_alias}

    @staticmethod
    def decode(key: bytes | None, value: bytes | None) -> Heartbeat:
        if key is None or value is None:
            raise FormatError("a heartbeat has a key and a value")
        source, pos = _read_string(key, 0)
        target, _ = _read_string(key, pos)
        try:
            (version,) = _I16.unpack_from(value, 0)
            if version != 0:
                raise FormatError(f"unknown heartbeat version {version}")
            (timestamp,) = _I64.unpack_from(value, 2)
        except struct.error as e:
            raise FormatError(str(e)) from None
        return Heartbeat(source, target, timestamp)
