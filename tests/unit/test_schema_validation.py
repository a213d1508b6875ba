"""The broker's schema ID validator: framing checks, subject strategies, and its id cache
(bounded, expiring, re-asked when a cached id lacks the subject needed), with a registry
stand-in that answers from a dict and counts the questions."""

from __future__ import annotations

import asyncio

import pytest

from zurau.broker.schema_validation import TOPIC_RECORD_NAME, RegistryUnavailable, SchemaValidator
from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.records.builder import build_batch


class Registry:
    def __init__(self, ids: dict[int, set[str]], down: bool = False) -> None:
        self.ids = ids
        self.down = down
        self.asked: list[int] = []

    async def subjects_of(self, schema_id: int) -> frozenset[str] | None:
        self.asked.append(schema_id)
        if self.down:
            raise RegistryUnavailable("http://registry:8081: ConnectionRefusedError")
        found = self.ids.get(schema_id)
        return frozenset(found) if found is not None else None


def framed(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + b"payload"


VALUE_ON = {"confluent.value.schema.validation": "true"}


def run(validator: SchemaValidator, configs: dict[str, str], values: list[bytes | None], topic: str = "t") -> list[tuple[int, str]] | None:
    check = validator.inspect(topic, configs, build_batch([(None, v, [], 0) for v in values]))
    asyncio.run(validator.resolve([check]))
    verdict = validator.verdict(check)
    return None if verdict is None else verdict.record_errors


def test_framing_and_subjects() -> None:
    registry = Registry({1: {"t-value"}, 2: {"other-value"}})
    v = SchemaValidator(registry)  # type: ignore[arg-type]
    assert run(v, VALUE_ON, [framed(1), None, framed(1)]) is None
    errors = run(v, VALUE_ON, [framed(1), b"\x01\x00\x00\x00\x01", b"\x00\x00", framed(9), framed(2)])
    assert errors is not None and [i for i, _ in errors] == [1, 2, 3, 4]
    assert "not registered under subject t-value" in errors[3][1]
    # TopicRecordNameStrategy: any t-<record> subject will do
    registry.ids[3] = {"t-acme.Ping"}
    strategy = {**VALUE_ON, "confluent.value.subject.name.strategy": TOPIC_RECORD_NAME}
    assert run(v, strategy, [framed(3)]) is None
    assert run(v, strategy, [framed(2)]) is not None


def test_cache_expires_is_bounded_and_rechecks_missing_subjects() -> None:
    now = [0.0]
    registry = Registry({1: {"t-value"}, 2: {"t-value"}, 3: {"t-value"}})
    v = SchemaValidator(registry, max_cache_size=2, ttl_s=10, now=lambda: now[0])  # type: ignore[arg-type]
    run(v, VALUE_ON, [framed(1), framed(1)])
    run(v, VALUE_ON, [framed(1)])
    assert registry.asked == [1]  # asked once, then cached
    now[0] = 11
    run(v, VALUE_ON, [framed(1)])
    assert registry.asked == [1, 1]  # expired
    run(v, VALUE_ON, [framed(2), framed(3)])
    run(v, VALUE_ON, [framed(1)])
    assert registry.asked == [1, 1, 2, 3, 1]  # 1 was evicted (two entries at most)
    # an id registered under one more subject after it was cached is accepted at once
    assert run(v, VALUE_ON, [framed(3)], topic="u") is not None
    registry.ids[3].add("u-value")
    assert run(v, VALUE_ON, [framed(3)], topic="u") is None


def test_registry_down_refuses_with_the_reason_and_is_not_cached() -> None:
    registry = Registry({1: {"t-value"}}, down=True)
    v = SchemaValidator(registry)  # type: ignore[arg-type]
    check = v.inspect("t", VALUE_ON, build_batch([(None, framed(1), [], 0)]))
    asyncio.run(v.resolve([check]))
    verdict = v.verdict(check)
    assert verdict is not None and "did not answer" in str(verdict) and "ConnectionRefusedError" in str(verdict)
    registry.down = False
    assert run(v, VALUE_ON, [framed(1)]) is None


def test_record_heads_agree_with_the_record_decoder() -> None:
    """The lean scan reads the same keys and values as the full decoder, multi-byte varints
    (long keys, distant timestamps, headers, many records), nulls and compression included."""
    import random

    from zurau.broker.schema_validation import record_heads
    from zurau.protocol.records.batch import HEADER_SIZE, read_header
    from zurau.protocol.records.compression import decompress
    from zurau.protocol.records.record import decode_batch_records

    rng = random.Random(5)
    records = []
    for i in range(300):
        key = None if i % 7 == 0 else rng.randbytes(rng.choice([0, 3, 5, 80, 300]))
        value = None if i % 11 == 0 else rng.randbytes(rng.choice([0, 4, 5, 6, 200, 20_000]))
        headers = [("h", rng.randbytes(100))] if i % 3 == 0 else []
        records.append((key, value, headers, 1_700_000_000_000 + rng.randrange(10**9)))
    for compression in (0, 1):
        batch = build_batch(records, compression=compression)
        h = read_header(batch)
        section = batch[HEADER_SIZE:]
        data = decompress(h.compression, section) if h.compression else section
        expected = [
            (None if r.key is None else r.key[:5], None if r.value is None else r.value[:5])
            for r in decode_batch_records(batch)
        ]
        assert record_heads(data, h.records_count) == expected
        # a batch cut short is a corrupt batch (the partition's error), never an IndexError
        with pytest.raises(CorruptRecordError):
            record_heads(bytes(data[:-3]), h.records_count)
