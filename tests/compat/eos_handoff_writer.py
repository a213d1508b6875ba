"""An "executor" for the exactly-once hand-off test: write in a transaction, never end it.

Usage: ``python eos_handoff_writer.py BOOTSTRAP TOPIC TRANSACTIONAL_ID VALUE_PREFIX``

Opens a transaction with confluent-kafka, writes five records to partition 0, flushes them to the
broker, asks the coordinator (``zurau.client``) which producer id and epoch the transaction runs
under, prints ``<producer_id> <producer_epoch>`` and exits without committing or aborting: the
transaction stays open for another process (the "driver") to end with EndTxn.
"""

from __future__ import annotations

import asyncio
import sys

from confluent_kafka import Producer

from zurau.client.config import ClientConfig
from zurau.client.transactions_admin import TransactionDescription, TransactionsAdmin


def main() -> None:
    bootstrap, topic, tid, prefix = sys.argv[1:5]
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "log_level": 3})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"{prefix}{i}".encode(), partition=0)
    assert p.flush(30) == 0

    async def describe() -> TransactionDescription:
        async with TransactionsAdmin(ClientConfig.load(None, bootstrap)) as admin:
            d = (await admin.describe_transactions([tid]))[tid]
        assert isinstance(d, TransactionDescription) and d.state == "Ongoing", d
        return d

    d = asyncio.run(describe())
    print(d.producer_id, d.producer_epoch, flush=True)


if __name__ == "__main__":
    main()
