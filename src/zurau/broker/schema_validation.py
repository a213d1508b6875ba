"""Broker-side schema ID validation (Confluent Server's ``confluent.*.schema.validation``).

When a topic sets ``confluent.value.schema.validation=true`` (or the key variant) and the broker
has ``confluent.schema.registry.url``, every produced record's value (key) must carry the schema
registry wire format, magic byte ``0`` then a 4-byte big-endian schema id, and that id must be
registered under the subject the topic's ``confluent.value.subject.name.strategy`` names:

* ``TopicNameStrategy`` (default): the subject ``<topic>-value`` (``<topic>-key``);
* ``TopicRecordNameStrategy``: some subject ``<topic>-<record name>``;
* ``RecordNameStrategy``: any subject (the record name is inside the schema, which the broker
  does not parse).

The payload itself is not decoded against the schema (neither does Confluent Server). A null
value or key (a tombstone, a keyless record) is not checked. A partition with one bad record
is refused whole with INVALID_RECORD and a ``record_errors`` entry per bad record (index in its
batch, message), as Kafka's own record validation does; nothing of it is appended.

Known ids and their subjects are cached (bounded LRU, ``confluent.schema.registry.max.cache.size``,
entries expire after :data:`CACHE_TTL_S`); an id the cache does not know, or whose cached
subjects do not include the one needed, is asked for once per request, all concurrently
(:class:`RegistryLookup`: ``GET /schemas/ids/{id}/versions`` through
:class:`zurau.client.schema_registry.SchemaRegistryClient` on worker threads, so the event loop
never blocks). Unknown ids are not cached, so a schema registered a moment later is accepted at
once. A request whose ids are all cached is checked without awaiting anything.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from zurau.client.schema_registry import SchemaRegistryClient, SchemaRegistryError
from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.records.batch import HEADER_SIZE, iter_batches
from zurau.protocol.records.compression import decompress
from zurau.storage.log_validator import RecordValidationError

CACHE_TTL_S = 300.0
_PREFIX = "io.confluent.kafka.serializers.subject."
TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME = (
    _PREFIX + "TopicNameStrategy",
    _PREFIX + "RecordNameStrategy",
    _PREFIX + "TopicRecordNameStrategy",
)
KEY, VALUE = "key", "value"
# per record part: the topic config that turns validation on, and the subject name strategy's
_CONFIGS = {
    KEY: ("confluent.key.schema.validation", "confluent.key.subject.name.strategy"),
    VALUE: ("confluent.value.schema.validation", "confluent.value.subject.name.strategy"),
}


class RegistryUnavailable(Exception):
    """The registry could not be asked (unreachable at every URL, or an error other than 404)."""


class RegistryLookup:
    """Which subjects a schema id is registered under, asked of the registry off the event loop."""

    def __init__(self, urls: str, timeout_s: float = 5.0) -> None:
        self.client = SchemaRegistryClient(urls, timeout_s)

    def _subjects_of(self, schema_id: int) -> frozenset[str] | None:
        try:
            entries = self.client.request("GET", f"/schemas/ids/{schema_id}/versions")
        except SchemaRegistryError as e:
            if e.status == 404:
                return None
            raise RegistryUnavailable(str(e) if e.status == 0 else f"HTTP {e.status}: {e}") from None
        try:
            return frozenset(str(entry["subject"]) for entry in entries)
        except (TypeError, KeyError) as e:
            raise RegistryUnavailable(f"a malformed answer for schema id {schema_id}: {e!r}") from None

    async def subjects_of(self, schema_id: int) -> frozenset[str] | None:
        """The subjects ``schema_id`` is registered under; None if the registry does not know it."""
        return await asyncio.to_thread(self._subjects_of, schema_id)


def _on(configs: Mapping[str, str], name: str) -> bool:
    return str(configs.get(name, "false")).strip().lower() == "true"


def validation_enabled(configs: Mapping[str, str]) -> bool:
    """True when a topic's configs turn key or value validation on."""
    return _on(configs, _CONFIGS[KEY][0]) or _on(configs, _CONFIGS[VALUE][0])


@dataclass(frozen=True)
class _Need:
    part: str  # KEY or VALUE
    schema_id: int
    strategy: str


@dataclass
class PartitionCheck:
    """What one partition's records need: errors found from the bytes, and per (part, schema id)
    needed the indexes (in their batches) of the records that name it."""

    topic: str
    errors: list[tuple[int, str]] = field(default_factory=list)
    needs: dict[_Need, list[int]] = field(default_factory=dict)
    unavailable: str | None = None


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's record fields) at ``pos``: (value, next position)."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    result, shift, pos = b & 0x7F, 7, pos + 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("a record varint is longer than 10 bytes")


def record_heads(data: bytes, count: int) -> list[tuple[bytes | None, bytes | None]]:
    """The first 5 bytes (fewer if shorter; None if null) of each record's key and value, read
    straight from a batch's (uncompressed) records section without decoding the records.
    Single-byte varints (the common case) are read inline; longer ones by :func:`_varint`."""
    out: list[tuple[bytes | None, bytes | None]] = []
    append = out.append
    pos, end = 0, len(data)
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                length, pos = _varint(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptRecordError("a record runs past the end of its batch")
            p = pos + 1  # attributes
            p = p + 1 if data[p] < 0x80 else _varint(data, p)[1]  # timestampDelta
            p = p + 1 if data[p] < 0x80 else _varint(data, p)[1]  # offsetDelta
            b = data[p]
            if b < 0x80:
                key_len, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                key_len, p = _varint(data, p)
            if key_len >= 0:
                key: bytes | None = data[p : p + (key_len if key_len < 5 else 5)]
                p += key_len
            else:
                key = None
            b = data[p]
            if b < 0x80:
                value_len, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                value_len, p = _varint(data, p)
            value = data[p : p + (value_len if value_len < 5 else 5)] if value_len >= 0 else None
            if p + (value_len if value_len > 0 else 0) > record_end:
                raise CorruptRecordError("a record's key or value runs past the record")
            append((key, value))
            pos = record_end
    except IndexError:
        raise CorruptRecordError("a record batch ends inside a record") from None
    return out


class SchemaValidator:
    def __init__(
        self,
        client: RegistryLookup | None,
        max_cache_size: int = 10_000,
        ttl_s: float = CACHE_TTL_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.max_cache_size = max_cache_size
        self.ttl_s = ttl_s
        self.now = now
        self._cache: OrderedDict[int, tuple[float, frozenset[str]]] = OrderedDict()

    # ------------------------------------------------------------------ bytes
    def inspect(self, topic: str, configs: Mapping[str, str], records: bytes | bytearray | memoryview) -> PartitionCheck:
        """Check the framing of every record of a partition's batches (they were not validated
        yet: a malformed batch raises CorruptRecordError, as the append would)."""
        check = PartitionCheck(topic)
        parts = [
            (1 if part == VALUE else 0, part, configs.get(strategy, TOPIC_NAME))
            for part, (on, strategy) in _CONFIGS.items()
            if _on(configs, on)
        ]
        by_head: dict[tuple[int, bytes], list[int]] = {}  # (part, first 5 bytes) -> record indexes
        mv = memoryview(records)
        for pos, h in iter_batches(mv):
            if h.is_control:
                continue
            section = mv[pos + HEADER_SIZE : pos + h.size]
            data = decompress(h.compression, section) if h.compression else bytes(section)
            for i, heads in enumerate(record_heads(data, h.records_count)):
                for which, _part, _strategy in parts:
                    head = heads[which]
                    if head is not None:
                        indexes = by_head.get((which, head))
                        if indexes is None:
                            by_head[(which, head)] = [i]
                        else:
                            indexes.append(i)
        strategies = {which: (part, strategy) for which, part, strategy in parts}
        for (which, head), indexes in by_head.items():
            part, strategy = strategies[which]
            if len(head) < 5 or head[0] != 0:
                message = (f"The {part} has no schema id: schema validation needs the schema registry "
                           f"wire format (magic byte 0, then a 4-byte schema id)")
                check.errors.extend((i, message) for i in indexes)
            else:
                check.needs.setdefault(_Need(part, int.from_bytes(head[1:5], "big"), strategy), []).extend(indexes)
        return check

    # ------------------------------------------------------------------ registry
    def _cached(self, schema_id: int) -> frozenset[str] | None:
        entry = self._cache.get(schema_id)
        if entry is None:
            return None
        expires, subjects = entry
        if expires < self.now():
            del self._cache[schema_id]
            return None
        self._cache.move_to_end(schema_id)
        return subjects

    def _remember(self, schema_id: int, subjects: frozenset[str]) -> None:
        self._cache[schema_id] = (self.now() + self.ttl_s, subjects)
        self._cache.move_to_end(schema_id)
        while len(self._cache) > self.max_cache_size:
            self._cache.popitem(last=False)

    @staticmethod
    def _satisfied(need: _Need, topic: str, subjects: frozenset[str]) -> bool:
        if need.strategy == RECORD_NAME:
            return bool(subjects)
        if need.strategy == TOPIC_RECORD_NAME:
            return any(s.startswith(f"{topic}-") for s in subjects)
        return f"{topic}-{need.part}" in subjects

    def wanted(self, checks: list[PartitionCheck]) -> set[int]:
        """The ids the cache cannot vouch for (empty: :meth:`verdict` can answer right away)."""
        wanted: set[int] = set()
        for check in checks:
            for need in check.needs:
                cached = self._cached(need.schema_id)
                if cached is None or not self._satisfied(need, check.topic, cached):
                    wanted.add(need.schema_id)
        return wanted

    async def resolve(self, checks: list[PartitionCheck]) -> None:
        """Ask the registry (concurrently) about every id the cache cannot vouch for."""
        wanted = self.wanted(checks)
        if not wanted:
            return
        if self.client is None:
            for check in checks:
                check.unavailable = "the broker has no confluent.schema.registry.url"
            return
        ids = sorted(wanted)
        answers = await asyncio.gather(*(self.client.subjects_of(i) for i in ids), return_exceptions=True)
        for schema_id, answer in zip(ids, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, RegistryUnavailable):
                    raise answer
                for check in checks:
                    if any(n.schema_id == schema_id for n in check.needs):
                        check.unavailable = f"the schema registry did not answer: {answer}"
            elif answer is None:
                self._cache.pop(schema_id, None)
            else:
                self._remember(schema_id, answer)

    def verdict(self, check: PartitionCheck) -> RecordValidationError | None:
        """INVALID_RECORD naming every bad record, or None when the partition may be appended."""
        if check.unavailable is not None:
            return RecordValidationError(f"Schema validation of topic {check.topic} failed: {check.unavailable}", [])
        errors = list(check.errors)
        for need, indexes in check.needs.items():
            subjects = self._cached(need.schema_id)
            if subjects is None:
                message = f"The {need.part} schema id {need.schema_id} is not registered in the schema registry"
            elif not self._satisfied(need, check.topic, subjects):
                wanted = f"{check.topic}-{need.part}" if need.strategy == TOPIC_NAME else f"{check.topic}-<record name>"
                message = f"The {need.part} schema id {need.schema_id} is not registered under subject {wanted}"
            else:
                continue
            errors.extend((i, message) for i in indexes)
        if not errors:
            return None
        errors.sort()
        return RecordValidationError(
            f"{len(errors)} record(s) rejected by schema validation; first: {errors[0][1]}", errors
        )
