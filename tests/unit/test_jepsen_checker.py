"""The Jepsen-style checker (zurau.testing.jepsen) on synthetic histories: a clean history passes,
and each property it guards is shown to catch its violation, including the two planted-bug shapes
of the replication work:

* "acks=all answered before the ISR has it": the leader acknowledges records only it holds, dies,
  and a follower without them becomes leader and writes new records at those offsets;
* "a returning leader skips truncation": an old leader comes back and keeps serving a suffix it
  should have truncated, so a reader sees two values at one offset, or reads a record the final
  log no longer has.
"""

from __future__ import annotations

import threading

from zurau.testing.jepsen import READ_COMMITTED, READ_UNCOMMITTED, CheckResult, History


def _val(p: int, i: int, tag: str = "") -> bytes:
    return b"p%d-%s%d" % (p, tag.encode(), i)


def _produce(h: History, p: int, values: list[bytes], first_offset: int, producer: str = "prod") -> list[int]:
    ops = []
    for i, v in enumerate(values):
        op = h.produce_invoked(producer, p, v)
        h.produce_acked(op, first_offset + i)
        ops.append(op)
    return ops


def _finals(
    h: History, p: int, log: list[tuple[int, bytes]], committed: list[tuple[int, bytes]] | None = None
) -> None:
    h.final_read(p, READ_UNCOMMITTED, log)
    h.final_read(p, READ_COMMITTED, log if committed is None else committed)


def _clean(partitions: int = 2, n: int = 20) -> History:
    h = History("jepsen")
    for p in range(partitions):
        vals = [_val(p, i) for i in range(n)]
        _produce(h, p, vals, 0)
        for i in range(0, n, 3):
            h.read(p, i, vals[i], READ_UNCOMMITTED, reader="tail")
        _finals(h, p, list(enumerate(vals)))
    return h


def _kinds(r: CheckResult) -> set[str]:
    return r.kinds()


def test_a_clean_history_passes() -> None:
    h = _clean()
    r = h.check()
    r.assert_ok()
    assert r.stats["acked"] == 40 and r.stats["final_records"] == 40


def test_an_indefinite_failure_may_be_present_once_or_absent() -> None:
    h = History()
    _produce(h, 0, [_val(0, 0)], 0)
    maybe = h.produce_invoked("prod", 0, _val(0, 1))
    h.produce_failed(maybe, "_MSG_TIMED_OUT")
    gone = h.produce_invoked("prod", 0, _val(0, 2))
    h.produce_failed(gone, "_MSG_TIMED_OUT")
    _produce(h, 0, [_val(0, 3)], 2)
    _finals(h, 0, [(0, _val(0, 0)), (1, _val(0, 1)), (2, _val(0, 3))])
    h.check().assert_ok()


def test_planted_bug_acks_all_answered_before_the_isr_has_it() -> None:
    """Leader 1 acknowledged offsets 0..9 but followers only had 0..6 when it was killed; the new
    leader (without 7..9) took new writes at 7.. . The acknowledged 7..9 are lost."""
    h = History("t")
    old = [_val(0, i) for i in range(10)]
    _produce(h, 0, old, 0)
    h.note("kill -9 leader 1")
    new = [_val(0, i, "new") for i in range(5)]
    _produce(h, 0, new, 7)
    final = list(enumerate(old[:7])) + [(7 + i, v) for i, v in enumerate(new)]
    _finals(h, 0, final)
    r = h.check()
    assert not r.ok
    assert "lost" in _kinds(r)
    lost = [v.message for v in r.violations if v.kind == "lost"]
    assert len(lost) == 3
    assert "b'p0-7'" in lost[0] and "offset 7" in lost[0] and "b'p0-new0'" in lost[0]
    # The same offsets were acknowledged for two different values.
    assert "offset-reused" in _kinds(r)
    assert "lost" in r.report() and "offset-reused" in r.report()


def test_acknowledged_record_missing_at_the_end_of_the_log() -> None:
    h = History()
    vals = [_val(0, i) for i in range(5)]
    _produce(h, 0, vals, 0)
    _finals(h, 0, list(enumerate(vals[:3])))
    r = h.check()
    assert [v.kind for v in r.violations] == ["lost", "lost"]
    assert "missing from the final log (which ends at offset 2)" in r.violations[0].message


def test_planted_bug_returning_leader_skips_truncation_two_values_at_one_offset() -> None:
    """Old leader 1 had appended 5..7 (never acknowledged: no ISR) when it was partitioned away;
    leader 2 wrote other records at 5..7. Leader 1 returns without truncating, and a reader that
    fetches from it sees its stale suffix: offset 5 has two values across reads."""
    h = History("t")
    base = [_val(0, i) for i in range(5)]
    _produce(h, 0, base, 0)
    for i in range(3):
        op = h.produce_invoked("prod", 0, _val(0, i, "stale"))
        h.produce_failed(op, "REQUEST_TIMED_OUT")
    new = [_val(0, i, "new") for i in range(3)]
    _produce(h, 0, new, 5)
    h.read(0, 5, _val(0, 0, "stale"), READ_UNCOMMITTED, reader="reader-a")  # from the returned leader
    h.read(0, 5, new[0], READ_UNCOMMITTED, reader="reader-b")
    _finals(h, 0, list(enumerate(base)) + [(5 + i, v) for i, v in enumerate(new)])
    r = h.check()
    assert {"offset-reused", "unstable-read"} <= _kinds(r)
    reused = next(v.message for v in r.violations if v.kind == "offset-reused")
    assert "offset 5 holds two values" in reused and "stale" in reused
    unstable = next(v.message for v in r.violations if v.kind == "unstable-read")
    assert "reader-a" in unstable and "diverged suffix" in unstable
    assert "lost" not in _kinds(r), "nothing acknowledged was lost"


def test_planted_bug_returning_leader_skips_truncation_read_record_is_gone() -> None:
    """A reader saw offsets 5..6 (served above the high watermark by a leader that later lost
    them); the final log ends at offset 4: the read data disappeared."""
    h = History("t")
    base = [_val(0, i) for i in range(5)]
    _produce(h, 0, base, 0)
    for i in range(2):
        op = h.produce_invoked("prod", 0, _val(0, 5 + i))
        h.produce_failed(op, "NOT_ENOUGH_REPLICAS")
        h.read(0, 5 + i, _val(0, 5 + i), READ_UNCOMMITTED, reader="tail")
    _finals(h, 0, list(enumerate(base)))
    r = h.check()
    assert _kinds(r) == {"unstable-read"}
    assert len(r.violations) == 2
    assert "has no record there" in r.violations[0].message


def test_duplicate_value_in_the_final_log() -> None:
    h = History()
    vals = [_val(0, i) for i in range(3)]
    _produce(h, 0, vals, 0)
    _finals(h, 0, [*enumerate(vals), (3, vals[1])])
    r = h.check()
    assert "duplicate" in _kinds(r)
    assert "at offsets [1, 3]" in str(r.violations[0]) or any("[1, 3]" in v.message for v in r.violations)


def test_definitely_failed_record_must_not_be_present() -> None:
    h = History()
    op = h.produce_invoked("prod", 0, b"too-big")
    h.produce_failed(op, "MSG_SIZE_TOO_LARGE", definite=True)
    _finals(h, 0, [(0, b"too-big")])
    assert "duplicate" in _kinds(h.check())


def test_acknowledged_at_another_offset() -> None:
    h = History()
    _produce(h, 0, [b"a", b"b"], 0)
    _finals(h, 0, [(0, b"b"), (1, b"a")])
    r = h.check()
    assert "lost" in _kinds(r)
    assert any("is at offset 1, not at its acknowledged offset 0" in v.message for v in r.violations)


def test_gaps_without_transactions_are_not_dense() -> None:
    h = History()
    _produce(h, 0, [b"a", b"b"], 0)
    op = h.produce_invoked("prod", 0, b"c")
    h.produce_acked(op, 5)
    _finals(h, 0, [(0, b"a"), (1, b"b"), (5, b"c")])
    r = h.check()
    assert _kinds(r) == {"not-dense"}
    assert "(2, 5)" in r.violations[0].message


def test_offsets_out_of_order_in_a_read() -> None:
    h = History()
    _produce(h, 0, [b"a", b"b"], 0)
    _finals(h, 0, [(1, b"b"), (0, b"a")])
    assert "not-dense" in _kinds(h.check())


def test_phantom_record() -> None:
    h = History()
    _produce(h, 0, [b"a"], 0)
    _finals(h, 0, [(0, b"a"), (1, b"never-sent")])
    assert _kinds(h.check()) == {"phantom"}


def test_one_producers_acknowledged_records_keep_their_order() -> None:
    h = History()
    first = h.produce_invoked("prod", 0, b"first")
    second = h.produce_invoked("prod", 0, b"second")
    h.produce_acked(second, 0)
    h.produce_acked(first, 1)
    _finals(h, 0, [(0, b"second"), (1, b"first")])
    r = h.check()
    assert _kinds(r) == {"reordered"}


def _txn_history(outcome: str) -> History:
    """Partition 0: a0 (plain) at 0, t1 records at 1..2, marker at 3, b0 (plain) at 4."""
    h = History()
    _produce(h, 0, [b"a0"], 0)
    for i, v in enumerate([b"t1-x", b"t1-y"]):
        op = h.produce_invoked("txp", 0, v, txn="t1")
        h.produce_acked(op, 1 + i)
    h.txn_ended("t1", outcome)  # type: ignore[arg-type]
    _produce(h, 0, [b"b0"], 4)
    return h


def test_transactions_committed_and_aborted_with_markers_pass() -> None:
    log = [(0, b"a0"), (1, b"t1-x"), (2, b"t1-y"), (4, b"b0")]
    h = _txn_history("committed")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, log, end_offset=5)
    h.check().assert_ok()
    h = _txn_history("aborted")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, [(0, b"a0"), (4, b"b0")], end_offset=5)
    h.check().assert_ok()


def test_read_committed_shows_an_aborted_record() -> None:
    log = [(0, b"a0"), (1, b"t1-x"), (2, b"t1-y"), (4, b"b0")]
    h = _txn_history("aborted")
    h.read(0, 1, b"t1-x", READ_COMMITTED, reader="rc")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, log, end_offset=5)
    r = h.check()
    assert _kinds(r) == {"aborted-read"}
    assert any("during the run" in v.message for v in r.violations)
    assert any("aborted transaction t1" in v.message for v in r.violations)


def test_read_committed_lacks_a_committed_record() -> None:
    log = [(0, b"a0"), (1, b"t1-x"), (2, b"t1-y"), (4, b"b0")]
    h = _txn_history("committed")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, [(0, b"a0"), (1, b"t1-x"), (4, b"b0")], end_offset=5)
    r = h.check()
    assert _kinds(r) == {"committed-missing"}
    h = _txn_history("committed")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, [(1, b"t1-x"), (2, b"t1-y"), (4, b"b0")], end_offset=5)
    assert "non-transactional" in h.check().violations[0].message


def test_a_transaction_of_unknown_outcome_is_all_or_nothing() -> None:
    log = [(0, b"a0"), (1, b"t1-x"), (2, b"t1-y"), (4, b"b0")]
    h = _txn_history("unknown")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, [(0, b"a0"), (4, b"b0")], end_offset=5)
    h.check().assert_ok()
    h = _txn_history("unknown")
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=5)
    h.final_read(0, READ_COMMITTED, [(0, b"a0"), (1, b"t1-x"), (4, b"b0")], end_offset=5)
    assert _kinds(h.check()) == {"txn-atomicity"}


def test_more_gaps_than_transaction_markers() -> None:
    h = _txn_history("committed")
    log = [(0, b"a0"), (1, b"t1-x"), (2, b"t1-y"), (4, b"b0")]
    h.final_read(0, READ_UNCOMMITTED, log, end_offset=7)
    h.final_read(0, READ_COMMITTED, log, end_offset=7)
    r = h.check()
    assert _kinds(r) == {"not-dense"}


def test_group_offsets_never_go_back() -> None:
    h = History()
    h.offset_committed("g", 0, 10)
    h.offset_fetched("g", 0, 10)
    h.offset_committed("g", 0, 20)
    h.offset_fetched("g", 0, 20)
    h.check().assert_ok()
    # A fetch sent after the commit of 20 was acknowledged answers 10: the commit was lost.
    t = h.now()
    h.offset_fetched("g", 0, 10, invoked_at=t)
    r = h.check()
    assert _kinds(r) == {"group-offset-regressed"}
    assert "20 was seen" in r.violations[0].message or "20 was acknowledged" in r.violations[0].message


def test_a_fetch_concurrent_with_a_commit_may_see_the_older_offset() -> None:
    h = History()
    h.offset_committed("g", 0, 10)
    t = h.now()  # fetch sent
    h.offset_committed("g", 0, 20)  # commit acknowledged while the fetch is in flight
    h.offset_fetched("g", 0, 10, invoked_at=t)
    h.check().assert_ok()


def test_missing_final_read_is_reported() -> None:
    h = History()
    _produce(h, 0, [b"a"], 0)
    r = h.check()
    assert _kinds(r) == {"history"}


def test_the_recorder_is_thread_safe() -> None:
    h = History()

    def worker(w: int) -> None:
        for i in range(500):
            op = h.produce_invoked(f"prod-{w}", w, b"%d-%d" % (w, i))
            h.produce_acked(op, i)
            h.read(w, i, b"%d-%d" % (w, i), READ_UNCOMMITTED)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in range(4):
        _finals(h, w, [(i, b"%d-%d" % (w, i)) for i in range(500)])
    r = h.check()
    r.assert_ok()
    assert r.stats["acked"] == 2000 and r.stats["reads"] == 2000


def test_replica_logs_agree_with_the_final_log() -> None:
    h = _clean(partitions=1, n=6)
    good = [(i, _val(0, i)) for i in range(6)]
    h.replica_log(0, 1, good)
    h.replica_log(0, 2, good)
    h.check().assert_ok()
    # Replica 3 came back as a follower without truncating its own suffix from offset 4.
    h.replica_log(0, 3, good[:4] + [(4, b"p0-stale4"), (5, b"p0-stale5")])
    r = h.check()
    assert _kinds(r) == {"replica-diverged"}
    assert "replica 3 holds b'p0-stale4' at offset 4" in r.violations[0].message
    h = _clean(partitions=1, n=6)
    h.replica_log(0, 2, good[:3])
    assert "lacks 3 record(s)" in h.check().violations[0].message
