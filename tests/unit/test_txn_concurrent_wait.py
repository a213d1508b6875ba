"""AddPartitionsToTxn / AddOffsetsToTxn meeting a state change in flight wait for it (bounded by
``concurrent_wait_ms``) instead of answering CONCURRENT_TRANSACTIONS at once: librdkafka retries
AddOffsetsToTxn only after retry.backoff.ms, so a transaction begun right after the previous
EndTxn paid that backoff whenever the previous markers were still being written."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.txn_driver import TID, TxnDriver
from zurau.coordinator.txn.transaction_log_records import TxnState
from zurau.protocol import errors as E

T0, T1, OFFSETS = ("t", 0), ("t", 1), ("__consumer_offsets", 3)
TXN_STATE = "__transaction_state"


def started(d: TxnDriver, *tps: tuple[str, int]) -> tuple[int, int]:
    r = d.init()
    assert r.error_code == 0
    assert d.add(r.producer_id, r.producer_epoch, *tps) == 0
    return r.producer_id, r.producer_epoch


def test_requests_of_the_next_transaction_wait_for_the_markers_and_run_in_order() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, T1)
    d.hold_markers = True  # the markers are written but not yet committed
    assert d.end(pid, epoch, True) == 0
    assert d.state().state == TxnState.PREPARE_COMMIT
    offsets = d.send_add(pid, epoch, OFFSETS)  # AddOffsetsToTxn, as librdkafka sends it first
    parts = d.send_add(pid, epoch, T0, T1)
    assert offsets not in d.replies and parts not in d.replies
    d.hold_markers = False  # the markers commit: CompleteCommit, then both requests run
    assert d.replies[offsets] == 0 and d.replies[parts] == 0
    meta = d.state()
    assert meta.state == TxnState.ONGOING and meta.partitions == {OFFSETS, T0, T1}
    # the two waiting requests ran as one: a single Ongoing record after the CompleteCommit
    assert [r.value.state for r in d.log[-2:] if r.value is not None] == [TxnState.COMPLETE_COMMIT, TxnState.ONGOING]


def test_a_waiting_request_gets_concurrent_transactions_at_its_deadline() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    d.hold_markers = True
    assert d.end(pid, epoch, False) == 0
    waiting = d.send_add(pid, epoch, T1)
    d.advance(d.core.config.concurrent_wait_ms - 1)
    assert waiting not in d.replies
    d.advance(1)
    assert d.replies[waiting] == E.ConcurrentTransactionsError.code
    d.hold_markers = False
    assert d.state().state == TxnState.COMPLETE_ABORT  # nothing of the expired request was applied
    assert d.add(pid, epoch, T1) == 0  # the client's retry


def test_no_wait_when_disabled() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    d.rt.core.config = replace(d.core.config, concurrent_wait_ms=0)
    d.hold_markers = True
    assert d.end(pid, epoch, True) == 0
    assert d.add(pid, epoch, T0) == E.ConcurrentTransactionsError.code


def test_a_waiting_request_is_answered_when_its_partition_is_unloaded() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    d.hold_markers = True
    assert d.end(pid, epoch, True) == 0
    waiting = d.send_add(pid, epoch, T1)
    d.rt.unload(d.core.partition_for(TID))
    assert isinstance(d.replies[waiting], E.NotCoordinatorError)


def test_a_request_waits_behind_an_add_partitions_write_in_flight() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    partition = d.core.partition_for(TID)
    d.writer.hold(TXN_STATE, partition)  # the next __transaction_state write stays uncommitted
    first = d.send_add(pid, epoch, T1)
    second = d.send_add(pid, epoch, OFFSETS)
    assert first not in d.replies and second not in d.replies
    d.writer.release(TXN_STATE, partition)
    assert d.replies[first] == 0 and d.replies[second] == 0
    assert d.state().partitions == {T0, T1, OFFSETS}


def test_waiting_requests_of_a_fenced_producer_fail_when_they_run() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    partition = d.core.partition_for(TID)
    d.writer.hold(TXN_STATE, partition)
    d.advance(10_000)  # the transaction times out: PrepareAbort with the epoch bumped (held)
    waiting = d.send_add(pid, epoch, T1)
    assert waiting not in d.replies
    d.writer.release(TXN_STATE, partition)
    assert d.state().state == TxnState.COMPLETE_ABORT and d.state().producer_epoch == epoch + 1
    assert d.replies[waiting] == E.ProducerFencedError.code
