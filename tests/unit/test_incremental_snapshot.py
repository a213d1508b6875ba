"""The incremental snapshot's watermark window (DBLog), without a database: the context's rules one
by one, its offsets, and a seeded simulation in which a table changes while chunks are read and the
stream is replayed -- the final state per key equals the table and no snapshot read follows a newer
change of its key."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from zurau.connect.postgres.incremental_snapshot import (
    COLLECTIONS,
    CORRELATION_ID,
    MAXIMUM_KEY,
    PRIMARY_KEY,
    WINDOW_CLOSE,
    WINDOW_OPEN,
    DataCollection,
    IncrementalSnapshotContext,
    IncrementalSnapshotter,
    WindowRow,
    decode_key,
    encode_key,
)
from zurau.connect.postgres.signals import (
    Signal,
    parse_snapshot_request,
    parse_stop_request,
    signal_from_kafka,
    signal_from_row,
)


def rows(*ids: int, table: str = "public.t") -> list[WindowRow]:
    return [WindowRow(table, (str(i),), (str(i), "v")) for i in ids]


def test_keys_round_trip_through_the_offsets() -> None:
    assert decode_key(encode_key(("1", None, "x y"))) == ("1", None, "x y")
    assert encode_key(None) is None and decode_key(None) is None
    assert decode_key("not hex") is None


def test_only_changes_inside_the_window_drop_buffered_rows() -> None:
    ctx = IncrementalSnapshotContext()
    assert ctx.add([DataCollection("public.t"), DataCollection("public.u")], "sig-1") == [
        DataCollection("public.t"),
        DataCollection("public.u"),
    ]
    assert ctx.add([DataCollection("public.t")]) == []  # already queued
    chunk = ctx.start_chunk()
    ctx.buffer(rows(1, 2, 3, 4))
    assert ctx.chunk_end == ("4",) and ctx.awaiting_close
    # A change before the low watermark (the SELECT saw it) keeps the row.
    assert ctx.deduplicate("public.t", [("1",)]) == 0
    assert not ctx.open_window("another-chunk-open")  # a stale watermark (before a restart) is ignored
    assert ctx.open_window(f"{chunk}-open")
    assert ctx.deduplicate("public.u", [("2",)]) == 0  # another table
    assert ctx.deduplicate("public.t", [("2",), ("9",)]) == 1
    assert ctx.close_window("another-chunk-close") is None
    emitted = ctx.close_window(f"{chunk}-close")
    assert emitted is not None and [r.key for r in emitted] == [("1",), ("3",), ("4",)]
    assert not ctx.window_open and not ctx.window and not ctx.awaiting_close
    # After the close the window is shut: later changes do not touch the next chunk's buffer.
    ctx.start_chunk()
    ctx.buffer(rows(5))
    assert ctx.deduplicate("public.t", [("5",)]) == 0


def test_truncate_inside_the_window_drops_the_buffer() -> None:
    ctx = IncrementalSnapshotContext()
    ctx.add([DataCollection("public.t")])
    chunk = ctx.start_chunk()
    ctx.buffer(rows(1, 2))
    ctx.open_window(f"{chunk}-open")
    ctx.truncated("public.t")
    assert ctx.close_window(f"{chunk}-close") == []


def test_stop_removes_tables_and_ignores_the_stopped_chunk() -> None:
    ctx = IncrementalSnapshotContext()
    ctx.add([DataCollection("public.a"), DataCollection("public.b"), DataCollection("other.c")])
    chunk = ctx.start_chunk()
    ctx.buffer(rows(1, table="public.a"))
    assert ctx.stop(["public\\..*"]) == ["public.a", "public.b"]
    assert [c.id for c in ctx.collections] == ["other.c"]
    assert ctx.close_window(f"{chunk}-close") is None and not ctx.awaiting_close
    assert ctx.stop([]) == ["other.c"] and not ctx.running and ctx.offset_fields() == {}


def test_offsets_carry_debeziums_fields_and_restore_the_progress() -> None:
    ctx = IncrementalSnapshotContext()
    ctx.add([DataCollection("public.t", "color = 'blue'"), DataCollection("public.u")], "sig-7")
    ctx.maximum_key = ("300",)
    ctx.sent(("40",))
    fields = ctx.offset_fields()
    assert set(fields) == {COLLECTIONS, PRIMARY_KEY, MAXIMUM_KEY, CORRELATION_ID}
    assert fields[CORRELATION_ID] == "sig-7"
    assert '"incremental_snapshot_collections_id":"public.t"' in fields[COLLECTIONS]
    assert '"incremental_snapshot_collections_additional_condition":"color = \'blue\'"' in fields[COLLECTIONS]
    restored = IncrementalSnapshotContext.from_offset({"lsn": 5, **fields})
    assert [c.id for c in restored.collections] == ["public.t", "public.u"]
    assert restored.current == DataCollection("public.t", "color = 'blue'")
    assert (
        restored.chunk_end == ("40",) and restored.last_sent == ("40",) and restored.maximum_key == ("300",)
    )
    assert not IncrementalSnapshotContext.from_offset({"lsn": 5}).running


def test_signals_parse_as_debezium_documents_them() -> None:
    s = signal_from_row(
        (
            "d139b9b7",
            "execute-snapshot",
            '{"data-collections": ["public.MyFirstTable", "public.MySecondTable"]}',
        )
    )
    assert s == Signal(
        "d139b9b7", "execute-snapshot", {"data-collections": ["public.MyFirstTable", "public.MySecondTable"]}
    )
    request = parse_snapshot_request(s.data)
    assert request is not None and request.kind == "incremental"
    assert request.tables(["public.MyFirstTable", "public.other", "public.MySecondTable"]) == [
        "public.MyFirstTable",
        "public.MySecondTable",
    ]
    kafka = signal_from_kafka(
        b"test_connector",
        b'{"type":"execute-snapshot","data": {"data-collections": ["public.MyFirstTable"], "type": "INCREMENTAL", '
        b'"additional-conditions":[{"data-collection": "public.MyFirstTable", "filter":"color=\'blue\' AND '
        b"brand='MyBrand'\"}]}}",
        "test_connector",
    )
    assert kafka is not None and kafka.channel == "kafka"
    request = parse_snapshot_request(kafka.data)
    assert (
        request is not None
        and request.condition_for("public.MyFirstTable") == "color='blue' AND brand='MyBrand'"
    )
    assert request.condition_for("public.other") == ""
    assert signal_from_kafka(b"other_connector", b'{"type":"log"}', "test_connector") is None
    assert signal_from_kafka(b"test_connector", b"not json", "test_connector") is None
    blocking = parse_snapshot_request({"type": "blocking", "data-collections": ["schema1.table1"]})
    assert blocking is not None and blocking.kind == "blocking"
    assert parse_snapshot_request({"type": "sideways", "data-collections": ["x"]}) is None
    assert parse_snapshot_request({"type": "incremental"}) is None
    assert parse_stop_request({"type": "INCREMENTAL", "data-collections": ["public.MyFirstTable"]}) == (
        "incremental",
        ("public.MyFirstTable",),
    )
    assert parse_stop_request({}) == ("incremental", ())
    log_signal = signal_from_row(("924e3ff8", "log", '{"message": "Signal message at offset {}"}'))
    assert log_signal is not None and log_signal.data == {"message": "Signal message at offset {}"}


# -- a simulation of DBLog: the table, its log, the chunk reader and the stream ---------------------


@dataclass
class Simulation:
    """A table of int keys -> versions whose committed changes form a log; a fake chunk reader that
    writes watermarks to the same log and lets random transactions commit around its SELECT."""

    rng: random.Random
    table: dict[int, int] = field(default_factory=dict)
    log: list[tuple[str, Any]] = field(default_factory=list)
    next_key: int = 10_000

    def commit_random_changes(self) -> None:
        for _ in range(self.rng.randint(0, 4)):
            action = self.rng.random()
            if action < 0.6 and self.table:
                k = self.rng.choice(sorted(self.table))
                self.table[k] += 1
                self.log.append(("u", (k, self.table[k])))
            elif action < 0.8 and self.table:
                k = self.rng.choice(sorted(self.table))
                del self.table[k]
                self.log.append(("d", (k, None)))
            else:
                k = self.rng.choice([self.rng.randint(0, 400), self.next_key])
                self.next_key += 1
                if k not in self.table:
                    self.table[k] = 0
                    self.log.append(("c", (k, 0)))

    # ChunkReader's interface
    def open_window(self, chunk_id: str) -> None:
        self.commit_random_changes()
        self.log.append((WINDOW_OPEN, f"{chunk_id}-open"))
        self.commit_random_changes()  # committed between the low watermark and the SELECT

    def close_window(self, chunk_id: str) -> None:
        self.commit_random_changes()  # committed between the SELECT and the high watermark
        self.log.append((WINDOW_CLOSE, f"{chunk_id}-close"))

    def describe(self, collection: str) -> Any:
        @dataclass
        class Column:
            name: str
            key_position: int | None

        @dataclass
        class Table:
            columns: tuple[Column, ...] = (Column("id", 0), Column("v", None))
            qualified_name: str = collection

        return Table()

    def maximum_key(self, table: Any, condition: str) -> tuple[str, ...] | None:
        return (f"{max(self.table):08d}",) if self.table else None

    def read_chunk(self, table: Any, after: Any, maximum: Any, condition: str, limit: int) -> list[WindowRow]:
        keys = sorted(
            k for k in self.table if (after is None or f"{k:08d}" > after[0]) and f"{k:08d}" <= maximum[0]
        )
        return [WindowRow("public.t", (f"{k:08d}",), (str(k), str(self.table[k]))) for k in keys[:limit]]


@pytest.mark.parametrize("seed", range(12))
def test_dblog_simulation_loses_nothing_and_never_regresses_a_key(seed: int) -> None:
    rng = random.Random(seed)
    sim = Simulation(rng, {k: 0 for k in rng.sample(range(400), 120)})
    ctx = IncrementalSnapshotContext()
    snapshotter = IncrementalSnapshotter(ctx, sim, chunk_size=rng.choice([1, 7, 25]))  # type: ignore[arg-type]
    emitted: list[tuple[str, int, int | None]] = []  # (op, key, version)
    ctx.add([DataCollection("public.t")])
    snapshotter.read_chunk()
    position = 0
    while position < len(sim.log) or ctx.running:
        if position >= len(sim.log):
            sim.commit_random_changes()
            continue
        kind, item = sim.log[position]
        position += 1
        if kind == WINDOW_OPEN:
            ctx.open_window(item)
        elif kind == WINDOW_CLOSE:
            for row in ctx.close_window(item) or []:
                ctx.sent(row.key)
                emitted.append(("r", int(row.values[0]), int(row.values[1])))
            snapshotter.read_chunk()
        else:
            key, version = item
            ctx.deduplicate("public.t", [(f"{key:08d}",)])
            emitted.append((kind, key, version))
    # Whatever happened before the snapshot started is not in this stream; the snapshot stands for it.
    state: dict[int, int] = {}
    last_version: dict[int, int] = {}
    deleted: set[int] = set()
    for op, key, version in emitted:
        if op == "d":
            state.pop(key, None)
            deleted.add(key)
            continue
        assert version is not None
        if op == "r":
            assert key not in deleted, f"a snapshot read of {key} after its delete"
            assert version >= last_version.get(key, -1), f"a stale snapshot read of {key}"
        elif op == "c":
            deleted.discard(key)
        state[key] = version
        last_version[key] = version
    assert state == sim.table
