"""Transactions v2 (KIP-890 part 2) in the transaction coordinator, driven through the runtime on
a virtual clock (see txn_driver.py): an epoch bump with every commit or abort, retries, zombie
fencing, producer-id rotation at an exhausted epoch, empty aborts, reloads; plus the partition
side (a transactions-v2 marker must be above the producer's data epoch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.partition_logs import make_batch
from tests.unit.test_replica_manager import make_rm
from tests.unit.txn_driver import TID, TxnDriver
from zurau.coordinator.txn.results import EndTxnResult
from zurau.coordinator.txn.transaction_coordinator import TxnMetadata
from zurau.coordinator.txn.transaction_log_records import TxnLogRecord, TxnState
from zurau.protocol import errors as E

T0, T1 = ("t", 0), ("t", 1)
MAX_EPOCH = 32767


def v2_started(d: TxnDriver, *tps: tuple[str, int]) -> tuple[int, int]:
    """Init TID and open a transactions-v2 transaction on ``tps`` (implicit adds)."""
    r = d.init()
    assert r.error_code == 0
    assert d.add_v2(r.producer_id, r.producer_epoch, *tps) == 0
    return r.producer_id, r.producer_epoch


def end2(d: TxnDriver, pid: int, epoch: int, commit: bool) -> EndTxnResult:
    result = d.end_result(pid, epoch, commit, tv=2)
    assert isinstance(result, EndTxnResult)
    return result


def test_every_commit_and_abort_bumps_the_epoch() -> None:
    d = TxnDriver()
    pid, epoch = v2_started(d, T0, T1)
    assert d.state().client_transaction_version == 2
    assert end2(d, pid, epoch, True) == EndTxnResult(0, pid, epoch + 1)
    # The Prepare record and the markers carry the bumped epoch: the partitions see it first.
    assert sorted(d.markers) == [("t", 0, pid, epoch + 1, True), ("t", 1, pid, epoch + 1, True)]
    prepare, complete = d.log[-2].value, d.log[-1].value
    assert prepare is not None and complete is not None
    assert (prepare.state, prepare.producer_epoch, prepare.client_transaction_version) == (
        TxnState.PREPARE_COMMIT,
        epoch + 1,
        2,
    )
    assert (complete.state, complete.producer_epoch) == (TxnState.COMPLETE_COMMIT, epoch + 1)
    # The next transaction runs with the new epoch; the old one can add nothing.
    assert d.add_v2(pid, epoch, T0) == E.ProducerFencedError.code
    assert d.add_v2(pid, epoch + 1, T0) == 0
    assert end2(d, pid, epoch + 1, False) == EndTxnResult(0, pid, epoch + 2)
    assert d.markers[-1] == ("t", 0, pid, epoch + 2, False)
    assert d.state().state == TxnState.COMPLETE_ABORT and d.state().producer_epoch == epoch + 2


def test_a_retried_end_txn_is_answered_with_the_current_id_and_epoch() -> None:
    d = TxnDriver()
    pid, epoch = v2_started(d, T0)
    d.hold_markers = True  # the markers are not committed yet: the transaction is completing
    assert end2(d, pid, epoch, True) == EndTxnResult(0, pid, epoch + 1)
    assert d.state().state == TxnState.PREPARE_COMMIT
    assert end2(d, pid, epoch, True).error_code == E.ConcurrentTransactionsError.code
    assert end2(d, pid, epoch, False).error_code == E.InvalidTxnStateError.code
    d.hold_markers = False
    d.advance(100)  # the marker is retried once its wait failed
    assert d.state().state == TxnState.COMPLETE_COMMIT
    writes = len(d.log)
    assert end2(d, pid, epoch, True) == EndTxnResult(0, pid, epoch + 1)  # the retry succeeds
    assert end2(d, pid, epoch, False).error_code == E.InvalidTxnStateError.code
    assert len(d.log) == writes  # a retry writes nothing


def test_zombies_are_fenced() -> None:
    d = TxnDriver()
    pid, epoch = v2_started(d, T0)
    assert end2(d, pid, epoch, True).producer_epoch == epoch + 1
    assert d.add_v2(pid, epoch + 1, T0) == 0  # the next transaction is Ongoing
    # A late EndTxn of the previous epoch meets a new Ongoing transaction: a zombie.
    assert end2(d, pid, epoch, True).error_code == E.ProducerFencedError.code
    assert end2(d, pid, epoch, False).error_code == E.ProducerFencedError.code
    assert end2(d, pid, epoch + 1, True) == EndTxnResult(0, pid, epoch + 2)
    # Two epochs behind is never a retry, whatever the state.
    assert end2(d, pid, epoch, True).error_code == E.ProducerFencedError.code
    assert end2(d, pid + 1, epoch + 2, True).error_code == E.InvalidProducerIdMappingError.code
    # A new producer instance (InitProducerId) fences the previous one's retries too.
    assert d.init().producer_epoch == epoch + 3
    assert end2(d, pid, epoch + 2, True).error_code == E.ProducerFencedError.code


def test_an_abort_with_no_partition_added_bumps_the_epoch_and_writes_no_marker() -> None:
    d = TxnDriver()
    r = d.init()
    pid = r.producer_id
    assert end2(d, pid, 0, True).error_code == E.InvalidTxnStateError.code  # nothing to commit
    assert end2(d, pid, 0, False) == EndTxnResult(0, pid, 1)
    assert d.markers == []
    assert [(x.value.state, x.value.producer_epoch) for x in d.log[-2:] if x.value] == [
        (TxnState.PREPARE_ABORT, 1),
        (TxnState.COMPLETE_ABORT, 1),
    ]
    assert end2(d, pid, 0, False) == EndTxnResult(0, pid, 1)  # its retry
    assert end2(d, pid, 1, False) == EndTxnResult(0, pid, 2)  # another empty abort, current epoch
    # After a commit, an abort with the current epoch is an empty abort as well.
    assert d.add_v2(pid, 2, T0) == 0
    assert end2(d, pid, 2, True).producer_epoch == 3
    assert end2(d, pid, 3, False) == EndTxnResult(0, pid, 4)
    assert len(d.markers) == 1


def test_an_exhausted_epoch_hands_the_transaction_over_to_a_new_producer_id() -> None:
    d = TxnDriver()
    d.init()
    pid = d.state().producer_id
    d.core.replay(TxnLogRecord(TID, TxnMetadata(TID, pid, MAX_EPOCH - 1, 10_000, TxnState.EMPTY).to_value()))
    assert d.add_v2(pid, MAX_EPOCH - 1, T0) == 0
    result = end2(d, pid, MAX_EPOCH - 1, True)
    new_pid = result.producer_id
    assert result.error_code == 0 and new_pid not in (pid, -1) and result.producer_epoch == 0
    # The markers end the transaction under the old id, at the last epoch.
    assert d.markers == [("t", 0, pid, MAX_EPOCH, True)]
    prepare = d.log[-2].value
    assert prepare is not None and (prepare.next_producer_id, prepare.producer_epoch) == (new_pid, MAX_EPOCH)
    st = d.state()
    assert (st.producer_id, st.producer_epoch, st.previous_producer_id, st.next_producer_id) == (
        new_pid,
        0,
        pid,
        -1,
    )
    assert d.core.by_producer_id.get(new_pid) == TID and pid not in d.core.by_producer_id
    # A retry with the old id and epoch gets the new ones; the new id runs the next transaction.
    assert end2(d, pid, MAX_EPOCH - 1, True) == EndTxnResult(0, new_pid, 0)
    assert d.add_v2(new_pid, 0, T1) == 0
    assert end2(d, new_pid, 0, True) == EndTxnResult(0, new_pid, 1)


def test_the_next_transaction_of_a_handed_over_id_waits_for_the_completion() -> None:
    d = TxnDriver()
    d.init()
    pid = d.state().producer_id
    d.core.replay(TxnLogRecord(TID, TxnMetadata(TID, pid, MAX_EPOCH - 1, 10_000, TxnState.EMPTY).to_value()))
    assert d.add_v2(pid, MAX_EPOCH - 1, T0) == 0
    d.hold_markers = True
    new_pid = end2(d, pid, MAX_EPOCH - 1, True).producer_id
    waiting = d.send(
        "add_partitions",
        transactional_id=TID,
        producer_id=new_pid,
        producer_epoch=0,
        partitions=[T1],
        transaction_version=2,
    )
    assert waiting not in d.replies  # parked, not refused (no self-fencing, KAFKA-18660)
    d.hold_markers = False
    d.advance(100)
    assert d.replies[waiting] == 0
    assert d.state().producer_id == new_pid and d.state().partitions == {T1}


def test_a_reload_gives_the_same_state() -> None:
    d = TxnDriver()
    pid, epoch = v2_started(d, T0)
    assert end2(d, pid, epoch, True).error_code == 0
    assert d.add_v2(pid, epoch + 1, T1) == 0
    before = d.state()
    d.rebuild()
    after = d.state()
    assert after == before.__class__(**{**before.__dict__, "last_producer_epoch": after.last_producer_epoch})
    assert after.client_transaction_version == 2
    assert end2(d, pid, epoch + 1, False) == EndTxnResult(0, pid, epoch + 2)


def test_a_prepared_rotation_is_completed_after_a_reload() -> None:
    d = TxnDriver()
    d.init()
    pid = d.state().producer_id
    d.core.replay(TxnLogRecord(TID, TxnMetadata(TID, pid, MAX_EPOCH - 1, 10_000, TxnState.EMPTY).to_value()))
    assert d.add_v2(pid, MAX_EPOCH - 1, T0) == 0
    d.hold_markers = True  # the broker dies after storing PrepareCommit, before any marker
    new_pid = end2(d, pid, MAX_EPOCH - 1, True).producer_id
    d.rebuild()
    assert d.markers == [("t", 0, pid, MAX_EPOCH, True)]
    st = d.state()
    assert (st.state, st.producer_id, st.producer_epoch, st.previous_producer_id) == (
        TxnState.COMPLETE_COMMIT,
        new_pid,
        0,
        pid,
    )


@pytest.mark.parametrize("level", [0, 2])
def test_init_producer_id_aborting_an_ongoing_transaction_bumps_the_epoch_once(level: int) -> None:
    d = TxnDriver()
    d.rt.transaction_version = lambda: level  # the cluster's finalized transaction.version
    pid, epoch = v2_started(d, T0)
    assert d.init().error_code == E.ConcurrentTransactionsError.code
    assert d.markers == [("t", 0, pid, epoch + 1, False)]  # one bump (KAFKA-19367)
    prepare = d.log[-2].value
    assert prepare is not None and prepare.client_transaction_version == level
    assert d.state().state == TxnState.COMPLETE_ABORT and d.state().producer_epoch == epoch + 1
    assert d.init().producer_epoch == epoch + 2


def test_a_timed_out_transactions_v2_transaction_is_aborted_with_one_bump() -> None:
    d = TxnDriver()
    d.rt.transaction_version = lambda: 2
    r = d.init(timeout=5_000)
    assert d.add_v2(r.producer_id, 0, T0) == 0
    d.advance(5_000)
    assert d.markers == [("t", 0, r.producer_id, 1, False)]
    # As in Kafka, the epoch before the bump looks like a retry: the producer's commit learns
    # that its transaction was aborted, an abort succeeds; a later epoch is unknown.
    assert end2(d, r.producer_id, 0, True).error_code == E.InvalidTxnStateError.code
    assert end2(d, r.producer_id, 0, False) == EndTxnResult(0, r.producer_id, 1)
    assert d.add_v2(r.producer_id, 0, T0) == E.ProducerFencedError.code


def test_v1_requests_keep_the_v1_behaviour() -> None:
    d = TxnDriver()
    d.rt.transaction_version = lambda: 2
    r = d.init()
    pid = r.producer_id
    assert d.add(pid, 0, T0) == 0
    assert d.end_result(pid, 0, True) == EndTxnResult(0, pid, 0)  # no bump
    assert d.markers == [("t", 0, pid, 0, True)]
    assert all(x.value is None or x.value.version == 0 for x in d.log)  # records as before
    assert d.end(pid, 0, False) == E.InvalidTxnStateError.code  # no empty abort in v1


# ---------------------------------------------------------------------------------- partitions


def test_a_marker_above_the_data_epoch_fences_the_old_epoch(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    txn = make_batch(2, producer_id=7, producer_epoch=3, base_sequence=0, is_transactional=True)
    rm.append_as_leader("t", 0, txn, required_acks=-1)
    # A transactions-v2 marker must be above the data's epoch: one at that epoch is a late marker.
    with pytest.raises(E.InvalidProducerEpochError):
        rm.append_markers("t", 0, 7, 3, True, 0, transaction_version=2)
    rm.append_markers("t", 0, 7, 4, True, 0, transaction_version=2)
    assert rm.read("t", 0, 0, 1 << 20, isolation_level=1).last_stable_offset == 3
    zombie = make_batch(1, producer_id=7, producer_epoch=3, base_sequence=2, is_transactional=True)
    with pytest.raises(E.InvalidProducerEpochError):
        rm.append_as_leader("t", 0, zombie, required_acks=-1)
    # The duplicate of that marker is refused; transactions v1 markers keep accepting the same epoch.
    with pytest.raises(E.InvalidProducerEpochError):
        rm.append_markers("t", 0, 7, 4, True, 0, transaction_version=2)
    rm.append_markers("t", 0, 7, 4, True, 0)
    nxt = make_batch(1, producer_id=7, producer_epoch=4, base_sequence=0, is_transactional=True)
    assert rm.append_as_leader("t", 0, nxt, required_acks=-1).base_offset == 4


def test_a_batch_at_a_new_epoch_does_not_join_the_open_transaction(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.append_as_leader(
        "t",
        0,
        make_batch(1, producer_id=7, producer_epoch=3, base_sequence=0, is_transactional=True),
        required_acks=-1,
    )
    same = make_batch(1, producer_id=7, producer_epoch=3, base_sequence=1, is_transactional=True)
    assert rm.txn_verification_needed("t", 0, same, add_partition=True) is None
    bumped = make_batch(1, producer_id=7, producer_epoch=4, base_sequence=0, is_transactional=True)
    assert rm.txn_verification_needed("t", 0, bumped, add_partition=True) == (7, 4)
    assert rm.txn_verification_needed("t", 0, bumped) is None  # verification off, no v2 add
