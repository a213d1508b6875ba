"""The transaction coordinator, driven through the coordinator runtime: virtual clock, in-memory
partitions, no sockets (see txn_driver.py)."""

from __future__ import annotations

import struct

import pytest

from tests.unit.txn_driver import TID, TxnDriver
from zurau.coordinator.txn.transaction_coordinator import TxnMetadata
from zurau.coordinator.txn.transaction_log_records import TxnLogRecord, TxnLogValue, TxnState, decode_record
from zurau.protocol import errors as E
from zurau.protocol.primitives import DecodeError

T0, T1, U0 = ("t", 0), ("t", 1), ("u", 0)


def started(d: TxnDriver, *tps: tuple[str, int]) -> tuple[int, int]:
    """Init TID and open a transaction on ``tps``; return (producer id, epoch)."""
    r = d.init()
    assert r.error_code == 0
    assert d.add(r.producer_id, r.producer_epoch, *tps) == 0
    return r.producer_id, r.producer_epoch


# ---------------------------------------------------------------------------------- InitProducerId


def test_init_gives_a_producer_id_and_each_init_bumps_the_epoch() -> None:
    d = TxnDriver()
    first = d.init()
    assert (first.error_code, first.producer_epoch) == (0, 0) and first.producer_id >= 0
    second = d.init(timeout=20_000)
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert d.state().timeout_ms == 20_000 and d.state().state == TxnState.EMPTY
    other = d.init("app-2")
    assert other.producer_id != first.producer_id and other.producer_epoch == 0
    assert [(r.transactional_id, r.value.producer_epoch) for r in d.log] == [(TID, 0), (TID, 1), ("app-2", 0)]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"tid": ""}, E.InvalidRequestError),
        ({"timeout": 0}, E.InvalidTransactionTimeoutError),
        ({"timeout": 60_001}, E.InvalidTransactionTimeoutError),
        ({"pid": 5}, E.InvalidRequestError),  # a producer id without an epoch
    ],
)
def test_init_rejects_bad_requests(kwargs: dict[str, object], error: type[E.KafkaError]) -> None:
    d = TxnDriver()
    assert d.init(**kwargs).error_code == error.code  # type: ignore[arg-type]
    assert d.log == []


def test_init_recovery_with_current_id_and_epoch_kip_360() -> None:
    d = TxnDriver()
    r = d.init()
    again = d.init(pid=r.producer_id, epoch=0)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, r.producer_id, 1)
    # A retry of that call (the response was lost) gets the same answer, not another bump.
    retry = d.init(pid=r.producer_id, epoch=0)
    assert (retry.error_code, retry.producer_epoch) == (0, 1)
    # An epoch that is neither the current nor the previous one is a zombie.
    assert d.init(pid=r.producer_id, epoch=5).error_code == E.ProducerFencedError.code
    # Another producer id is fenced too.
    assert d.init(pid=r.producer_id + 77, epoch=1).error_code == E.ProducerFencedError.code
    # A plain init (no id) always bumps and forgets the previous epoch.
    assert d.init().producer_epoch == 2
    assert d.init(pid=r.producer_id, epoch=1).error_code == E.ProducerFencedError.code


def test_init_with_an_ongoing_transaction_fences_the_old_producer_and_aborts_it() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, U0)
    r = d.init()
    assert r.error_code == E.ConcurrentTransactionsError.code
    assert sorted(d.markers) == [("t", 0, pid, epoch + 1, False), ("u", 0, pid, epoch + 1, False)]
    assert d.state().state == TxnState.COMPLETE_ABORT and d.state().producer_epoch == epoch + 1
    # The retry gets the next epoch; the old producer is fenced everywhere.
    r = d.init()
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, epoch + 2)
    assert d.add(pid, epoch, T1) == E.ProducerFencedError.code
    assert d.end(pid, epoch, True) == E.ProducerFencedError.code
    states = [(r.value.state, r.value.producer_epoch) for r in d.log]
    assert states == [
        (TxnState.EMPTY, 0),
        (TxnState.ONGOING, 0),
        (TxnState.PREPARE_ABORT, 1),
        (TxnState.COMPLETE_ABORT, 1),
        (TxnState.EMPTY, 2),
    ]


def test_epoch_exhaustion_rotates_the_producer_id() -> None:
    d = TxnDriver()
    d.init()
    old = d.state()
    # Fast-forward: a stored state at the last usable epoch.
    d.core.replay(
        TxnLogRecord(TID, TxnMetadata(TID, old.producer_id, 32766, 10_000, TxnState.EMPTY).to_value())
    )
    r = d.init(pid=old.producer_id, epoch=32766)
    assert r.error_code == 0 and r.producer_id != old.producer_id and r.producer_epoch == 0
    assert d.state().previous_producer_id == old.producer_id
    assert d.log[-1].value is not None and d.log[-1].value.version == 1  # the previous id needs v1
    # A retry with the exhausted epoch of the previous id is not fenced: it gets the same answer.
    retry = d.init(pid=old.producer_id, epoch=32766)
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, r.producer_id, 0)


def test_fencing_at_the_last_epoch_then_rotating() -> None:
    d = TxnDriver()
    d.init()
    pid = d.state().producer_id
    d.core.replay(TxnLogRecord(TID, TxnMetadata(TID, pid, 32766, 10_000, TxnState.EMPTY).to_value()))
    assert d.add(pid, 32766, T0) == 0
    assert d.init().error_code == E.ConcurrentTransactionsError.code  # fenced with epoch 32767
    assert d.markers == [("t", 0, pid, 32767, False)]
    r = d.init()
    assert r.error_code == 0 and r.producer_id != pid and r.producer_epoch == 0
    assert d.init(pid=pid, epoch=32766).error_code == E.ProducerFencedError.code


def test_failed_write_changes_nothing() -> None:
    d = TxnDriver()
    r = d.init()
    d.fail_writes = E.NotEnoughReplicasError("isr")
    assert d.init().error_code == E.CoordinatorNotAvailableError.code
    assert d.add(r.producer_id, 0, T0) == E.CoordinatorNotAvailableError.code
    d.fail_writes = E.NotLeaderOrFollowerError("moved")
    assert d.init().error_code == E.NotCoordinatorError.code
    assert d.state().producer_epoch == 0 and d.state().state == TxnState.EMPTY
    d.fail_writes = None
    assert d.init().producer_epoch == 1


# ---------------------------------------------------------------------------------- AddPartitions


def test_add_partitions_starts_and_extends_the_transaction() -> None:
    d = TxnDriver()
    r = d.init()
    assert d.add(r.producer_id, 0, T0) == 0
    st = d.state()
    assert st.state == TxnState.ONGOING and st.partitions == {T0} and st.start_ms == d.now
    writes = len(d.log)
    d.now += 50
    assert d.add(r.producer_id, 0, T0) == 0 and len(d.log) == writes  # already there: no write
    assert d.add(r.producer_id, 0, T0, U0) == 0
    assert d.state().partitions == {T0, U0} and d.state().start_ms == d.now - 50


def test_add_partitions_checks_the_producer() -> None:
    d = TxnDriver()
    r = d.init()
    assert d.add(r.producer_id, 0, T0, tid="nobody") == E.InvalidProducerIdMappingError.code
    assert d.add(r.producer_id + 1, 0, T0) == E.InvalidProducerIdMappingError.code
    assert d.add(r.producer_id, 1, T0) == E.ProducerFencedError.code
    assert d.add(r.producer_id, 0, T0, tid="") == E.InvalidRequestError.code


# ---------------------------------------------------------------------------------- EndTxn


@pytest.mark.parametrize("commit", [True, False])
def test_end_transaction_writes_markers_then_completes(commit: bool) -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, T1, U0)
    assert d.end(pid, epoch, commit) == 0
    assert sorted(d.markers) == [(tp[0], tp[1], pid, epoch, commit) for tp in (T0, T1, U0)]
    done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
    assert d.state().state == done and d.state().partitions == frozenset()
    prepared = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
    assert [r.value.state for r in d.log[-2:]] == [prepared, done]
    assert d.log[-2].value.partitions == {T0, T1, U0}
    # A retried EndTxn with the same outcome succeeds; the opposite one is refused.
    assert d.end(pid, epoch, commit) == 0
    assert d.end(pid, epoch, not commit) == E.InvalidTxnStateError.code
    # The next transaction starts afresh.
    d.now += 10
    assert d.add(pid, epoch, U0) == 0 and d.state().start_ms == d.now and d.state().partitions == {U0}


def test_end_transaction_errors() -> None:
    d = TxnDriver()
    r = d.init()
    assert d.end(r.producer_id, 0, True) == E.InvalidTxnStateError.code  # nothing started
    assert d.end(r.producer_id, 3, True) == E.ProducerFencedError.code
    assert d.end(r.producer_id + 1, 0, True) == E.InvalidProducerIdMappingError.code
    assert d.end(r.producer_id, 0, True, tid="other") == E.InvalidProducerIdMappingError.code


def test_markers_are_retried_until_written_and_block_the_next_transaction() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, T1, ("gone", 0))
    d.fail_markers = {T1: E.NotEnoughReplicasError("isr"), ("gone", 0): E.UnknownTopicOrPartitionError("x")}
    assert d.end(pid, epoch, True) == 0  # answered once PrepareCommit is stored
    assert d.markers == [("t", 0, pid, epoch, True)]
    assert d.state().state == TxnState.PREPARE_COMMIT
    waiting = d.send_add(pid, epoch, T0)  # waits for the markers (concurrent_wait_ms)
    assert waiting not in d.replies
    assert d.init().error_code == E.ConcurrentTransactionsError.code
    assert d.end(pid, epoch, True) == E.ConcurrentTransactionsError.code
    assert d.core.check_produce(pid, epoch, T0) is not None
    d.advance(100)  # retried: T1 still fails
    assert d.state().state == TxnState.PREPARE_COMMIT and len(d.markers) == 1
    assert waiting not in d.replies
    d.fail_markers = {}
    d.advance(100)
    assert d.markers[1:] == [("t", 1, pid, epoch, True)]  # only what was missing; the gone topic needs none
    assert d.replies[waiting] == 0  # run once the transaction completed: the next one began
    assert d.state().state == TxnState.ONGOING and d.state().partitions == {T0}


# ---------------------------------------------------------------------------------- timeouts


def test_transaction_timeout_aborts_and_fences() -> None:
    d = TxnDriver()
    r = d.init(timeout=5_000)
    pid = r.producer_id
    assert d.add(pid, 0, T0) == 0
    d.advance(4_000)
    assert d.add(pid, 0, T1) == 0  # adding partitions does not extend the deadline
    d.advance(999)
    assert d.state().state == TxnState.ONGOING
    d.advance(1)
    assert d.state().state == TxnState.COMPLETE_ABORT and d.state().producer_epoch == 1
    assert sorted(d.markers) == [("t", 0, pid, 1, False), ("t", 1, pid, 1, False)]
    assert d.end(pid, 0, True) == E.ProducerFencedError.code
    assert d.init().producer_epoch == 2


def test_a_committed_transaction_does_not_time_out() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    assert d.end(pid, epoch, True) == 0
    d.advance(60_000)
    assert d.state().state == TxnState.COMPLETE_COMMIT and d.state().producer_epoch == epoch


def test_transactional_ids_expire_when_idle() -> None:
    d = TxnDriver(id_expiration_ms=100_000, remove_expired_interval_ms=10_000)
    pid, epoch = started(d, T0)
    d.init("idle")
    d.advance(105_000)  # "idle" expired; TID's transaction timed out at +10 s, its id expires at +110 s
    assert "idle" not in d.core.transactions and d.log[-1] == TxnLogRecord("idle", None)
    assert d.core.describe(["idle"])[0].error_code == E.TransactionalIdNotFoundError.code
    assert d.state().state == TxnState.COMPLETE_ABORT
    d.advance(10_000)
    assert TID not in d.core.transactions and d.log[-1] == TxnLogRecord(TID, None)
    d.rebuild()
    assert d.core.transactions == {}
    assert d.core.check_produce(pid, epoch, T0).code == E.InvalidProducerIdMappingError.code  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------- recovery


def test_rebuild_restores_every_state() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, U0)
    d.init("done")
    d.rebuild()
    st = d.state()
    assert (st.state, st.partitions, st.producer_id, st.producer_epoch) == (
        TxnState.ONGOING,
        {T0, U0},
        pid,
        epoch,
    )
    assert d.end(pid, epoch, True) == 0
    assert d.core.by_producer_id[pid] == TID


def test_prepared_transactions_are_completed_after_a_restart() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, T1)
    d.hold_markers = True  # the broker dies after storing PrepareCommit, before any marker
    assert d.end(pid, epoch, True) == 0
    assert d.markers == [] and d.log[-1].value.state == TxnState.PREPARE_COMMIT
    d.rebuild()
    assert sorted(d.markers) == [("t", 0, pid, epoch, True), ("t", 1, pid, epoch, True)]
    assert d.state().state == TxnState.COMPLETE_COMMIT


def test_ongoing_transactions_time_out_after_a_restart() -> None:
    d = TxnDriver()
    r = d.init(timeout=5_000)
    assert d.add(r.producer_id, 0, T0) == 0
    d.rebuild(down_ms=60_000)  # the broker was down longer than the timeout
    assert d.state().state == TxnState.ONGOING
    d.advance(0)
    assert d.state().state == TxnState.COMPLETE_ABORT and d.markers == [("t", 0, r.producer_id, 1, False)]


# ---------------------------------------------------------------------------------- verification


def test_check_produce_accepts_only_partitions_of_the_ongoing_transaction() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    assert d.core.check_produce(pid, epoch, T0) is None
    assert isinstance(d.core.check_produce(pid, epoch, T1), E.InvalidTxnStateError)
    assert isinstance(d.core.check_produce(pid, epoch - 1, T0), E.InvalidProducerEpochError)
    assert isinstance(d.core.check_produce(pid + 9, 0, T0), E.InvalidProducerIdMappingError)
    assert d.end(pid, epoch, False) == 0
    assert isinstance(d.core.check_produce(pid, epoch, T0), E.InvalidTxnStateError)  # a late write
    code, per = d.core.verify_partitions(TID, pid, epoch, [T0])
    assert code == 0 and per == {T0: E.InvalidTxnStateError.code}
    assert d.add(pid, epoch, T0) == 0
    assert d.core.verify_partitions(TID, pid, epoch, [T0, T1]) == (
        0,
        {T0: 0, T1: E.InvalidTxnStateError.code},
    )
    assert d.core.verify_partitions(TID, pid, epoch + 1, [T0])[0] == E.ProducerFencedError.code


# ---------------------------------------------------------------------------------- admin


def test_describe_and_list() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0, U0)
    d.now += 1_000
    d.init("b-idle")
    (desc,) = d.core.describe([TID])
    assert (desc.state, desc.producer_id, desc.producer_epoch, desc.partitions) == (
        "Ongoing",
        pid,
        epoch,
        (T0, U0),
    )
    assert desc.start_ms == d.now - 1_000 and desc.timeout_ms == 10_000
    assert [x.error_code for x in d.core.describe(["", "nope"])] == [
        E.InvalidRequestError.code,
        E.TransactionalIdNotFoundError.code,
    ]
    lst = d.core.list_transactions(now_ms=d.now)
    assert [(t.transactional_id, t.state) for t in lst.transactions] == [
        (TID, "Ongoing"),
        ("b-idle", "Empty"),
    ]
    lst = d.core.list_transactions(states=["Ongoing", "Bogus"], now_ms=d.now)
    assert [t.transactional_id for t in lst.transactions] == [TID] and lst.unknown_state_filters == ("Bogus",)
    assert d.core.list_transactions(states=["Bogus"], now_ms=d.now).transactions == ()
    assert [
        t.transactional_id for t in d.core.list_transactions(producer_ids=[pid], now_ms=d.now).transactions
    ] == [TID]
    # Like Kafka's, the duration filter counts from the start time, -1 for ids with no transaction.
    running = d.core.list_transactions(states=["Ongoing"], duration_ms=500, now_ms=d.now).transactions
    assert [t.transactional_id for t in running] == [TID]
    assert d.core.list_transactions(states=["Ongoing"], duration_ms=5_000, now_ms=d.now).transactions == ()
    assert [
        t.transactional_id for t in d.core.list_transactions(pattern="b-.*", now_ms=d.now).transactions
    ] == ["b-idle"]
    assert d.core.list_transactions(pattern="b-", now_ms=d.now).transactions == ()  # whole-id match
    assert (
        d.core.list_transactions(pattern="(", now_ms=d.now).error_code == E.InvalidRegularExpressionError.code
    )


# ---------------------------------------------------------------------------------- record format


def test_transaction_log_value_bytes_are_kafkas() -> None:
    """Version 0, laid out field by field as Kafka's TransactionLogValue (non-flexible)."""
    v = TxnLogValue(7, 3, 60_000, TxnState.ONGOING, frozenset({("b", 1), ("a", 2), ("b", 0)}), 1234, 1000)
    rec = TxnLogRecord("tx", v)
    assert rec.key_bytes() == struct.pack(">hh", 0, 2) + b"tx"

    def s(x: str) -> bytes:
        return struct.pack(">h", len(x)) + x.encode()

    expected = (
        struct.pack(">hqhib", 0, 7, 3, 60_000, 1)
        + struct.pack(">i", 2)
        + s("a")
        + struct.pack(">ii", 1, 2)
        + s("b")
        + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">qq", 1234, 1000)
    )
    assert rec.value_bytes() == expected
    assert decode_record(rec.key_bytes(), expected) == rec
    empty = TxnLogRecord("tx", TxnLogValue(7, 3, 60_000, TxnState.EMPTY, frozenset(), 5, -1))
    assert empty.value_bytes() == struct.pack(">hqhibiqq", 0, 7, 3, 60_000, 0, -1, 5, -1)  # null partitions
    assert decode_record(rec.key_bytes(), None) == TxnLogRecord("tx", None)


def test_transaction_log_value_v1_carries_tagged_fields() -> None:
    v = TxnLogValue(7, 0, 60_000, TxnState.EMPTY, frozenset(), 5, -1, previous_producer_id=6)
    rec = TxnLogRecord("tx", v)
    data = rec.value_bytes()
    assert data is not None and data[:2] == b"\x00\x01"
    assert decode_record(rec.key_bytes(), data) == rec
    with pytest.raises(DecodeError):
        decode_record(rec.key_bytes(), b"\x00\x05" + data[2:])
    assert decode_record(struct.pack(">h", 9) + b"zz", None) is None  # unknown key version: skipped
