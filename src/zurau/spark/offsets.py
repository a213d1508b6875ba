"""Spark's Kafka offsets: the offset JSON, offset ranges, range splitting and rate limiting.

Formats (identical to Spark's built-in Kafka source, ``JsonUtils``):

* partition offsets ``{"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}``: per topic, partition
  number (a string) -> offset. In a streaming offset (what the checkpoint stores) each value is
  the *next* offset to read, i.e. one past the last record processed (``KafkaConsumer.position()``
  semantics). In ``startingOffsets``/``endingOffsets`` ``-2`` means earliest and ``-1`` latest.
* partitions ``{"topicA": [0, 1], "topicB": [2, 4]}`` (the ``assign`` option).
* partition timestamps ``{"topicA": {"0": 1700000000000}}`` (milliseconds since the epoch).

Invariants: an :class:`OffsetRange` is half-open, ``[from_offset, until_offset)``; the ranges that
:func:`split_ranges` returns for one topic-partition are contiguous, ordered, non-empty and cover
exactly the input range; :func:`rate_limit` never returns an offset beyond ``latest``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zurau.types import TopicPartition

EARLIEST = -2
"""``startingOffsets``/``endingOffsets`` JSON value meaning the earliest available offset."""
LATEST = -1
"""``startingOffsets``/``endingOffsets`` JSON value meaning the latest offset (end of the log)."""

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_PARTITIONS_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'
_TIMESTAMPS_EXAMPLE = (
    '{"topicA": {"0": 123456789, "1": 123456789}, "topicB": {"0": 123456789, "1": 123456789}}'
)


PartitionOffsets = dict[TopicPartition, int]
"""Topic-partition -> offset (or ``EARLIEST``/``LATEST`` in option values)."""


def format_tps(tps: Iterable[TopicPartition]) -> str:
    """``{t-0, t-1}``: a set of topic-partitions in a stable order, for messages."""
    return "{" + ", ".join(str(tp) for tp in sorted(tps)) + "}"


# --------------------------------------------------------------------------- JSON
def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The offset dict Spark checkpoints: topics and partitions in sorted order."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_from_json(value: Mapping[str, Any] | str) -> PartitionOffsets:
    """Parse partition offsets from a JSON string or an already decoded dict.

    Raises ``ValueError`` with Spark's message on anything but ``{topic: {partition: long}}``.
    """
    obj = _load(value, _OFFSETS_EXAMPLE)
    try:
        return {
            TopicPartition(str(topic), int(part)): _as_long(off)
            for topic, parts in obj.items()
            for part, off in _as_dict(parts).items()
        }
    except (TypeError, ValueError, AttributeError):
        raise ValueError(f"Expected e.g. {_OFFSETS_EXAMPLE}, got {_text(value)}") from None


def partitions_from_json(value: str) -> list[TopicPartition]:
    """Parse the ``assign`` option: ``{"topicA": [0, 1]}`` -> sorted topic-partitions."""
    obj = _load(value, _PARTITIONS_EXAMPLE)
    try:
        tps = {
            TopicPartition(str(topic), _as_int(part))
            for topic, parts in obj.items()
            for part in _as_list(parts)
        }
    except (TypeError, ValueError):
        raise ValueError(f"Expected e.g. {_PARTITIONS_EXAMPLE}, got {value}") from None
    return sorted(tps)


def timestamps_from_json(value: str) -> dict[TopicPartition, int]:
    """Parse ``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp`` (milliseconds)."""
    obj = _load(value, _TIMESTAMPS_EXAMPLE)
    try:
        return {
            TopicPartition(str(topic), int(part)): _as_long(ts)
            for topic, parts in obj.items()
            for part, ts in _as_dict(parts).items()
        }
    except (TypeError, ValueError, AttributeError):
        raise ValueError(f"Expected e.g. {_TIMESTAMPS_EXAMPLE}, got {value}") from None


def _load(value: Mapping[str, Any] | str, example: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    try:
        obj = json.loads(value)
    except (TypeError, ValueError):
        obj = None
    if not isinstance(obj, dict):
        raise ValueError(f"Expected e.g. {example}, got {value}")
    return obj


def _text(value: Mapping[str, Any] | str) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _as_dict(v: Any) -> Mapping[str, Any]:
    if not isinstance(v, dict):
        raise TypeError(v)
    return v


def _as_list(v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise TypeError(v)
    return v


def _as_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(v)
    return v


def _as_long(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise TypeError(v)
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(v)
        return int(v)
    return int(v)


# --------------------------------------------------------------------------- ranges
@dataclass(frozen=True, order=True)
class OffsetRange:
    """Records ``[from_offset, until_offset)`` of one topic-partition."""

    tp: TopicPartition
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)


def split_ranges(
    ranges: Iterable[OffsetRange],
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """Spark's ``KafkaOffsetRangeCalculator``: drop empty ranges, split the rest.

    First every range larger than ``max_records_per_partition`` is cut into
    ``ceil(size / max)`` nearly equal pieces. Then, if ``min_partitions`` exceeds the number of
    pieces, each piece gets ``max(round(size / total * min_partitions), 1)`` parts (half up) (integer
    division, the last part takes the remainder). The result is sorted by topic-partition and
    offset.
    """
    pieces = [r for r in ranges if r.size > 0]
    if max_records_per_partition is not None and max_records_per_partition > 0:
        pieces = [p for r in pieces for p in _split_even(r, math.ceil(r.size / max_records_per_partition))]
    if min_partitions is not None and min_partitions > len(pieces):
        total = sum(r.size for r in pieces)
        pieces = [
            p
            for r in pieces
            for p in _split_even(r, max(math.floor(r.size / total * min_partitions + 0.5), 1))
        ]
    return sorted(pieces)


def _split_even(r: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1:
        return [r]
    out = []
    remaining, start = r.size, r.from_offset
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, r.until_offset)
        if end > start:
            out.append(OffsetRange(r.tp, start, end))
        start = end
    return out


def rate_limit(
    limit: int,
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    earliest_of_new: Mapping[TopicPartition, int],
) -> PartitionOffsets:
    """Spark's ``maxOffsetsPerTrigger``: spread ``limit`` records over the partitions by backlog.

    A partition with backlog ``size`` (``latest - begin``; ``begin`` from ``start`` or, for a
    partition new since ``start``, from ``earliest_of_new``) advances by
    ``limit * size / total`` records, rounded down but at least one (small partitions are not
    starved), and never past ``latest``. With no backlog at all, ``latest`` is returned.
    """
    sizes: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp, earliest_of_new.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        begin = start.get(tp, earliest_of_new.get(tp, 0))
        prorate = limit * (size / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, begin + step)
    return out
