"""A consume-transform-produce process with confluent-kafka's transactional API (for EOS tests).

Usage: ``python eos_transformer.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID [ABORT_EVERY
[TRANSACTION_TIMEOUT_MS]]``

Reads INPUT in the consumer group GROUP (read_committed, no auto commit), and for each polled
batch runs one transaction: produce ``b"x" + value`` (same key) to OUTPUT, flush,
``send_offsets_to_transaction`` with the consumer's positions, then commit. Every ABORT_EVERY-th
transaction (0: never) is aborted instead, records and offsets already sent, and the consumer
rewinds to the group's committed offsets, so the same input is transformed again by a later
transaction: if aborted records became visible the output would hold duplicates, and if aborted
offsets were committed input records would be skipped.

Errors are handled as librdkafka documents for its transactional API: a retriable error (for
example NOT_COORDINATOR while the coordinator moves to another broker) repeats the call, an
abortable one aborts the transaction and rewinds, and a fatal one ends the process.

Prints ``ready`` once ``init_transactions`` returned, ``produced N`` once transaction N's records
and offsets are on the broker (the transaction is open: it then pauses 100 ms before committing,
so that a test reading this line can kill it mid-transaction), and ``txn N`` after each commit,
flushing stdout. Runs until killed (SIGTERM ends it cleanly).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

T = TypeVar("T")


def retrying(call: Callable[[], T], timeout: float = 120.0) -> T:
    """``call()``, repeated while it fails with an error librdkafka marks retriable."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    bootstrap, src, dst, group, txn_id = sys.argv[1:6]
    abort_every = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    txn_timeout_ms = int(sys.argv[7]) if len(sys.argv) > 7 else 10_000
    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": txn_timeout_ms,
            **({"debug": os.environ["ZURAU_TRANSFORMER_DEBUG"]} if os.environ.get("ZURAU_TRANSFORMER_DEBUG") else {}),
            "linger.ms": 5,
            "log_level": 3,
        }
    )
    retrying(lambda: producer.init_transactions(30))
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 2000,
            "heartbeat.interval.ms": 300,
            "log_level": 3,
        }
    )
    consumer.subscribe([src])
    print("ready", flush=True)

    def rewind() -> None:
        """Abort the open transaction and seek back to the group's committed offsets."""
        retrying(lambda: producer.abort_transaction(30))
        for tp in retrying(lambda: consumer.committed(consumer.assignment(), 30)):
            consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))

    txns = 0
    while running:
        msgs = [m for m in consumer.consume(500, 0.05) if m.error() is None]
        if not msgs:
            continue
        producer.begin_transaction()
        for m in msgs:
            producer.produce(dst, key=m.key(), value=b"x" + m.value(), partition=m.partition())
        txns += 1
        producer.flush(30)
        positions = consumer.position(consumer.assignment())
        metadata = consumer.consumer_group_metadata()
        try:
            retrying(partial(producer.send_offsets_to_transaction, positions, metadata, 30))
        except KafkaException as e:
            if not e.args[0].txn_requires_abort():
                raise
            rewind()
            continue
        # Records and offsets are in the open transaction: a kill from now on must lose both.
        print(f"produced {txns}", flush=True)
        if abort_every and txns % abort_every == 0:
            rewind()
            print(f"aborted {txns}", flush=True)
            continue
        time.sleep(0.1)
        try:
            retrying(lambda: producer.commit_transaction(30))
        except KafkaException as e:
            if not e.args[0].txn_requires_abort():
                raise
            rewind()
            continue
        print(f"txn {txns}", flush=True)
    consumer.close()
    producer.flush(10)


if __name__ == "__main__":
    main()
