"""Exactly-once with confluent-kafka (librdkafka) transactions against a Zurau broker process.

* Consume-transform-produce: ``eos_transformer.py`` reads an input topic in a consumer group and
  writes each record, transformed, to an output topic inside transactions that also commit the
  consumed offsets (``send_offsets_to_transaction``); some transactions are aborted on purpose.
  The transformer is SIGKILLed three times mid-stream and restarted with the same
  transactional.id (fencing its dead predecessor and aborting its open transaction). A
  read_committed consumer of the output then sees every input record transformed exactly once,
  and none of the records of aborted transactions (which a read_uncommitted reader does see).
* Zombie fencing: a second producer with the same transactional.id fences the first, whose next
  transactional call fails with a fatal PRODUCER_FENCED / INVALID_PRODUCER_EPOCH error, and whose
  open transaction is aborted.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.component.kafka_wire import KafkaWireClient
from tests.support.broker_process import BrokerProcess

TRANSFORMER = Path(__file__).with_name("eos_transformer.py")
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "transaction.state.log.num.partitions": "4",
    "offsets.topic.num.partitions": "4",
}


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    bp = BrokerProcess(tmp_path / "data", **OVERRIDES)
    bp.start()
    try:
        yield bp
    finally:
        bp.stop()


def _create(bootstrap: str, *topics: tuple[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics]).values():
        f.result(30)


def _read_all(bootstrap: str, topic: str, isolation: str, expect: int, timeout: float = 30.0) -> list[bytes]:
    """Every value of ``topic`` from the start: until ``expect`` arrived and 1 s passed quietly."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "log_level": 3,
        }
    )
    c.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msgs = [m for m in c.consume(1000, 0.2) if m.error() is None]
            if msgs:
                values.extend(m.value() for m in msgs)
                quiet_since = time.monotonic()
            elif len(values) >= expect and time.monotonic() - quiet_since > 1.0:
                break
    finally:
        c.close()
    return values


def _describe_transaction(port: int, transactional_id: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            r = await c.request(65, 0, {"transactional_ids": [transactional_id]})
            return r["transaction_states"][0]

    return asyncio.run(run())


def assert_transformed_exactly_once(values: list[bytes], n: int) -> set[bytes]:
    """``values`` (the transformer's output) hold ``x<i>`` for every input i < n, each once;
    returns that expected set."""
    counts = Counter(values)
    expected = {b"x" + str(i).encode() for i in range(n)}
    duplicates = {v: c for v, c in counts.items() if c > 1}
    assert not duplicates, f"{len(duplicates)} records transformed more than once, e.g. {list(duplicates)[:5]}"
    assert set(counts) == expected, f"missing {len(expected - set(counts))}, unexpected {len(set(counts) - expected)}"
    return expected


class Transformer:
    def __init__(
        self,
        bootstrap: str,
        src: str,
        dst: str,
        group: str,
        txn_id: str,
        log: Path,
        txn_timeout_ms: int = 10_000,
    ) -> None:
        self.args = [
            sys.executable,
            str(TRANSFORMER),
            bootstrap,
            src,
            dst,
            group,
            txn_id,
            "7",
            str(txn_timeout_ms),
        ]
        self.log = log
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=open(self.log, "a"), text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready", (
            f"transformer did not start: {self.log.read_text()}"
        )

    def wait_for(self, prefix: str, n: int, timeout: float = 30.0) -> None:
        """Wait until the transformer printed ``n`` more lines starting with ``prefix``."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        seen = 0
        while seen < n:
            assert time.monotonic() < deadline, "transformer made no progress"
            line = self.proc.stdout.readline()
            assert line, f"transformer exited: {self.log.read_text()}"
            if line.startswith(prefix):
                seen += 1

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # SIGKILL: no abort, no close, whatever was in flight stays open
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


@pytest.mark.slow
def test_consume_transform_produce_exactly_once_across_sigkills(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    src, dst = f"in-{uuid.uuid4().hex[:6]}", f"out-{uuid.uuid4().hex[:6]}"
    n = 20_000
    _create(bootstrap, (src, 3), (dst, 3))
    p = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20, "log_level": 3}
    )
    for i in range(n):
        p.produce(src, key=str(i).encode(), value=str(i).encode())
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(30) == 0

    t = Transformer(bootstrap, src, dst, "eos-group", "eos-transformer", tmp_path / "transformer.log")
    try:
        for _kill in range(3):
            t.start()
            t.wait_for("txn ", 3)
            t.wait_for("produced ", 1)  # records on the broker, the transaction still open
            t.kill()
        t.start()
        values = _read_all(bootstrap, dst, "read_committed", n, timeout=60)
    finally:
        t.stop()

    # Each restart found its predecessor's transaction open: the fence aborted it with epoch + 1,
    # and the retried InitProducerId got epoch + 2.
    state = _describe_transaction(broker.port, "eos-transformer")
    assert state["error_code"] == 0 and state["producer_epoch"] == 6, state
    expected = assert_transformed_exactly_once(values, n)
    # The aborted transactions (every 7th, and those open at each SIGKILL) did write records, which
    # read_uncommitted readers see and read_committed readers must not.
    uncommitted = _read_all(bootstrap, dst, "read_uncommitted", n, timeout=30)
    assert len(uncommitted) > n
    assert set(uncommitted) == expected


def test_zombie_producer_is_fenced(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"z-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, (topic, 1))
    conf = {"bootstrap.servers": bootstrap, "transactional.id": "zombie", "log_level": 0}
    old = Producer(conf)
    old.init_transactions(10)
    old.begin_transaction()
    old.produce(topic, value=b"from-the-zombie")
    assert old.flush(10) == 0

    new = Producer(conf)
    new.init_transactions(20)  # fences `old` and aborts its open transaction
    new.begin_transaction()
    new.produce(topic, value=b"from-the-new-one")
    new.commit_transaction(10)

    with pytest.raises(KafkaException) as exc:
        old.produce(topic, value=b"late")
        old.flush(5)
        old.commit_transaction(10)
    err = exc.value.args[0]
    # The broker answered the zombie's write with INVALID_PRODUCER_EPOCH; librdkafka makes that fatal.
    assert err.code() == KafkaError._FENCED and "old epoch" in err.str(), err
    assert err.fatal()

    assert _read_all(bootstrap, topic, "read_committed", 1) == [b"from-the-new-one"]
    assert sorted(_read_all(bootstrap, topic, "read_uncommitted", 2)) == [
        b"from-the-new-one",
        b"from-the-zombie",
    ]
