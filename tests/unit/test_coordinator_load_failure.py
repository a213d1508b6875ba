"""A coordinator partition whose records cannot be replayed is not served (Kafka's FAILED state).

Kafka's CoordinatorRuntime: a load that throws moves the partition to FAILED (its state machine is
dropped, an ERROR is logged) and requests for it get NOT_COORDINATOR; the next leadership of the
partition loads it again. Zurau does the same, and also retries the load itself after a backoff.
A record type the broker does not know (an unknown key version) is skipped, as Kafka does.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

import pytest

from tests.unit.group_driver import Driver
from tests.unit.memory_writer import MemoryPartitionWriter
from tests.unit.test_coordinator_runtime import commit, other_partition_group
from tests.unit.test_group_coordinator import G
from zurau.coordinator.coordinator_runtime import LOAD_RETRY_BACKOFF_MS
from zurau.coordinator.group.group_runtime import OFFSETS_TOPIC
from zurau.coordinator.group.records import CoordinatorRecord, iter_log_batches
from zurau.coordinator.internal_topic import CoordinatorLoadError, PartitionLoader
from zurau.protocol import errors as E
from zurau.protocol.records.batch import set_base_offset
from zurau.protocol.records.builder import build_batch


def offset_commit_key(group: str = G) -> bytes:
    return CoordinatorRecord(1, {"group": group, "topic": "t", "partition": 0}).key_bytes()


def unparseable_batch(group: str = G) -> bytes:
    """An offset commit whose value has a version no parser knows (Kafka fails such a load)."""
    return build_batch([(offset_commit_key(group), struct.pack(">h", 99) + b"\x00" * 8, [], 0)])


def unknown_type_batch() -> bytes:
    """A record of a type (key version 99) this broker does not know: skipped, as in Kafka."""
    return build_batch([(struct.pack(">h", 99) + b"future", b"\x00\x00whatever", [], 0)])


def parse(data: bytes, log_start: int) -> Any:
    for nxt, entries in iter_log_batches(data):
        yield nxt, [e for _o, e in entries if e is not None]


def test_the_loader_raises_at_an_unreadable_record_and_names_where() -> None:
    d = Driver()
    p = d.core.partition_for(G)
    assert d.commit(G, {("t", 0): 5}) == {("t", 0): 0}
    bad_at = d.writer.log(OFFSETS_TOPIC, p).end
    d.writer.append(OFFSETS_TOPIC, p, bytearray(unparseable_batch()))
    assert d.commit(G, {("t", 0): 6}) == {("t", 0): 0}
    loader = PartitionLoader(d.writer, OFFSETS_TOPIC, p, 1 << 20, parse)
    with pytest.raises(CoordinatorLoadError) as info:
        loader.next_chunk()
    assert f"{OFFSETS_TOPIC}-{p}" in str(info.value) and f"offset {bad_at}" in str(info.value)


def test_the_loader_skips_record_types_it_does_not_know() -> None:
    writer = MemoryPartitionWriter()
    writer.append(OFFSETS_TOPIC, 0, bytearray(unknown_type_batch()))
    loader = PartitionLoader(writer, OFFSETS_TOPIC, 0, 1 << 20, parse)
    assert loader.next_chunk() == ([], True) and loader.caught_up


def heal(d: Driver, p: int) -> None:
    """Replace the unreadable batch (the last one) by a record of an unknown type at the same
    offsets, as if it had been compacted or rewritten; a reload then succeeds."""
    lg = d.writer.log(OFFSETS_TOPIC, p)
    base, last, _bad = lg.batches[-1]
    good = bytearray(unknown_type_batch())
    set_base_offset(good, 0, base)
    lg.batches[-1] = (base, last, bytes(good))


def broken_driver() -> tuple[Driver, int]:
    """A driver whose partition of G holds a commit, then an unreadable record; not yet reloaded."""
    d = Driver()
    p = d.core.partition_for(G)
    assert d.commit(G, {("t", 0): 5}) == {("t", 0): 0}
    d.writer.append(OFFSETS_TOPIC, p, bytearray(unparseable_batch()))
    d.rt.unload(p)
    return d, p


def test_a_failed_load_is_not_served_and_logs_an_error(caplog: pytest.LogCaptureFixture) -> None:
    d, p = broken_driver()
    with caplog.at_level(logging.ERROR, logger="zurau.coordinator"):
        d.rt.load(p)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and f"{OFFSETS_TOPIC}-{p}" in errors[0].getMessage()
    assert not d.rt.loaded(p) and p not in d.rt.loaded_partitions()
    assert G not in d.core.offsets, "nothing of the partition is kept: no partial state"
    assert isinstance(d.rt.coordinator_error(G), E.NotCoordinatorError)
    assert isinstance(d.reply(commit(d, {("t", 0): 7})), E.NotCoordinatorError)
    assert d.rt.listing_error() is None, "listing goes on over the served partitions"
    other = other_partition_group(d)
    assert d.reply(commit(d, {("u", 0): 1}, other)) == {("u", 0): 0}, "other partitions are served"
    assert d.rt.lookup_error(G) is None, "FindCoordinator still names this broker (the leader)"


def test_a_failed_load_is_retried_after_a_backoff(caplog: pytest.LogCaptureFixture) -> None:
    d, p = broken_driver()
    with caplog.at_level(logging.ERROR, logger="zurau.coordinator"):
        d.rt.load(p)
        first = len(caplog.records)
        d.advance(LOAD_RETRY_BACKOFF_MS)
        assert len(caplog.records) > first, "the retry failed loudly too"
    assert isinstance(d.rt.coordinator_error(G), E.NotCoordinatorError)
    # The unreadable batch goes away (e.g. an operator moved the log start past it).
    heal(d, p)
    d.advance(2 * LOAD_RETRY_BACKOFF_MS)  # the backoff doubled
    assert d.rt.loaded(p) and d.rt.coordinator_error(G) is None
    assert d.committed(G)[0] == 5


def test_a_new_leadership_loads_a_failed_partition_again() -> None:
    d, p = broken_driver()
    d.rt.load(p)
    assert not d.rt.loaded(p)
    heal(d, p)
    d.rt.unload(p)  # leadership moves away and back
    d.rt.load(p, blocking=True)
    assert d.rt.loaded(p) and d.committed(G)[0] == 5
    d.advance(10 * LOAD_RETRY_BACKOFF_MS)  # no stale retry timer fires into the loaded partition
    assert d.rt.loaded(p) and d.committed(G)[0] == 5


def test_a_replay_failure_fails_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    d = Driver()
    p = d.core.partition_for(G)
    assert d.commit(G, {("t", 0): 5}) == {("t", 0): 0}
    d.rt.unload(p)

    def broken(records: Any) -> None:
        raise ValueError("a record the state machine cannot apply")

    monkeypatch.setattr(d.rt.core, "load", broken)
    d.rt.load(p)
    assert not d.rt.loaded(p) and isinstance(d.rt.coordinator_error(G), E.NotCoordinatorError)


def test_stop_and_unload_cancel_the_retry(caplog: pytest.LogCaptureFixture) -> None:
    d, p = broken_driver()
    d.rt.load(p)
    d.rt.unload(p)
    assert isinstance(d.rt.coordinator_error(G), E.NotCoordinatorError)
    d.rt.load(p)
    d.rt.stop()
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="zurau.coordinator"):
        d.advance(10 * LOAD_RETRY_BACKOFF_MS)
    assert not caplog.records, "no load is retried once the partition is unloaded or the runtime stopped"
    assert not d.rt.loaded(p)
