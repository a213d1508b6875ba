"""KIP-890 produce verification while the transaction's own AddPartitionsToTxn write is in flight."""

from dataclasses import replace

from tests.unit.test_transaction_coordinator import T0, started
from tests.unit.txn_driver import TID, TxnDriver
from zurau.coordinator.txn.transaction_coordinator import TxnState
from zurau.protocol import errors as E


def test_check_produce_accepts_a_partition_of_the_transaction_while_more_are_being_added() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    entry = d.core.transactions[TID]
    entry.pending = TxnState.ONGOING  # an AddPartitionsToTxn write in flight (librdkafka sends it beside AddOffsetsToTxn)
    assert d.core.check_produce(pid, epoch, T0) is None
    entry.pending = TxnState.PREPARE_COMMIT  # EndTxn's write in flight: still refused
    assert isinstance(d.core.check_produce(pid, epoch, T0), E.NotEnoughReplicasError)



def test_check_produce_still_refuses_while_a_new_transaction_is_being_started() -> None:
    d = TxnDriver()
    pid, epoch = started(d, T0)
    entry = d.core.transactions[TID]
    entry.meta = replace(entry.meta, state=TxnState.COMPLETE_COMMIT)  # the last transaction is over
    entry.pending = TxnState.ONGOING  # the next one's first AddPartitionsToTxn in flight
    assert isinstance(d.core.check_produce(pid, epoch, T0), E.NotEnoughReplicasError)
