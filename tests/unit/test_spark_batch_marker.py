"""Batch markers of the exactly-once Spark sink: record format and how a read judges transactions.

No sockets: :class:`zurau.spark.batch_marker._Scan` is fed log bytes built here, as a
read_uncommitted Fetch would return them.
"""

from __future__ import annotations

from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.spark.batch_marker import BatchMarker, _Scan


def _marker(offset: int, query: str, part: int, batch: int, pid: int = -1, txn: bool = True) -> bytes:
    m = BatchMarker(query, part, batch, f"a{offset}")
    return build_batch(
        [(m.key, m.value, (), 0)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        is_transactional=txn,
    )


def _end(offset: int, pid: int, commit: bool) -> bytes:
    return build_control_batch(commit, pid, 0, 0, offset, timestamp_ms=0)


def test_marker_record_round_trips_and_foreign_records_are_ignored() -> None:
    m = BatchMarker("q-1/x", 3, 42, "abc")
    assert m.key == b"q-1/x/3"
    assert BatchMarker.parse(m.key, m.value) == m
    for key, value in [
        (None, m.value),
        (m.key, None),
        (b"no-slash", m.value),
        (m.key, b"not json"),
        (m.key, b"[1]"),
        (m.key, b'{"batchId": "x", "attempt": "a"}'),
        (b"q/notanint", m.value),
    ]:
        assert BatchMarker.parse(key, value) is None


def test_committed_markers_count_and_aborted_or_open_ones_do_not() -> None:
    log = b"".join(
        [
            _marker(0, "q", 0, 0, pid=7),
            _marker(1, "other", 0, 9, pid=8),  # another query's transaction, never decided
            _end(2, 7, commit=True),
            _marker(3, "q", 1, 0, pid=9),
            _marker(4, "q", 0, 1, pid=7),
            _end(5, 7, commit=False),  # batch 1 of partition 0 aborted: batch 0 stays the latest
            _end(6, 9, commit=True),
            _marker(7, "q", 1, 1, pid=9),  # open, at or above hi: not read
        ]
    )
    scan = _Scan({("q", 0), ("q", 1)}, lo=0, hi=7)
    scan.feed(log)
    assert scan.done and scan.position == 8
    assert {k: (o, m.batch_id) for k, (o, m) in scan.committed.items()} == {
        ("q", 0): (0, 0),
        ("q", 1): (3, 0),
    }


def test_a_wanted_marker_in_an_open_transaction_keeps_the_scan_going() -> None:
    scan = _Scan({("q", 0)}, lo=10, hi=12)
    scan.feed(_marker(10, "q", 0, 5, pid=3) + _marker(11, "q", 9, 5, pid=4))
    assert not scan.done and scan.position == 12 and set(scan.open) == {3}
    scan.feed(_end(12, 4, commit=True) + _end(13, 3, commit=True))  # its COMMIT comes past hi
    assert scan.done and scan.committed[("q", 0)][1].batch_id == 5


def test_scan_starts_mid_batch_and_skips_what_was_read() -> None:
    batch = build_batch(
        [(BatchMarker("q", 0, b, "x").key, BatchMarker("q", 0, b, "x").value, (), 0) for b in range(3)],
        base_offset=20,
    )  # not transactional: committed as written (offsets 20, 21, 22)
    scan = _Scan({("q", 0)}, lo=21, hi=22)
    scan.feed(batch)
    assert scan.done and scan.committed[("q", 0)] == (21, BatchMarker("q", 0, 1, "x"))
    scan.feed(batch)  # a re-fetch of what was read changes nothing
    assert scan.committed[("q", 0)][0] == 21
