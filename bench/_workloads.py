"""Client-side workloads, all driven by confluent-kafka with one set of settings for both brokers.

Every loop is bounded twice, by a record count and by wall-clock time, and talks only to the
broker it was given (127.0.0.1). Throughput is payload bytes (record values) per second,
``MB = 10**6`` bytes; broker CPU is read from ``/proc/<pid>/stat`` before and after the timed part.
"""

from __future__ import annotations

import random
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench._brokers import BrokerUnderTest, system_busy_seconds

#: Producer settings shared by every produce workload (the issue's linger.ms=5, batch.size=1 MiB).
PRODUCER_BASE: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1 << 20,
    "queue.buffering.max.messages": 1_000_000,
    "enable.idempotence": False,
}
#: Consumer settings shared by every consume workload (librdkafka defaults otherwise).
CONSUMER_BASE: dict[str, Any] = {
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    # librdkafka pauses fetching for this long whenever its local queue passes queued.min.messages
    # (100,000): with the default 1,000 ms that pause, not either broker, paced 100-byte
    # consumption at ~0.2M records/s (measured: ~1.8M records/s with 10 ms, on both brokers).
    "fetch.queue.backoff.ms": 10,
}

_TS = struct.Struct(">q")
_WORDS = [
    "".join(random.Random(i).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3 + i % 7))
    for i in range(512)
]


def make_values(size: int, count: int = 1024, seed: int = 7) -> list[bytes]:
    """``count`` distinct JSON-like values of exactly ``size`` bytes, compressible like real events."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        head = f'{{"id":{i},"user":"{rng.choice(_WORDS)}","amount":{rng.random() * 1000:.2f},"note":"'
        body = []
        n = len(head)
        while n < size:
            w = rng.choice(_WORDS) + " "
            body.append(w)
            n += len(w)
        out.append((head + "".join(body)).encode()[: size - 2] + b'"}')
    return out


@dataclass
class Measurement:
    """One timed run against one broker."""

    records: int = 0
    payload_bytes: int = 0
    seconds: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    other_cpu_s: float = 0.0  # CPU used by every other process meanwhile (noise on a shared machine)
    broker_user_s: float = 0.0  # the user-space part of broker_cpu_s (the rest is the kernel's)
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_s_per_mb(self) -> float:
        mb = self.payload_bytes / 1e6
        return self.broker_cpu_s / mb if mb > 0 else 0.0


def _client_cpu() -> float:
    """CPU seconds of this (client) process, librdkafka's threads included."""
    return time.process_time()


class _Window:
    """Wall time and CPU time (broker, client, whole machine) over one timed stretch."""

    def __init__(self, broker: BrokerUnderTest) -> None:
        self.broker = broker
        self.user0, self.sys0_broker = broker.cpu_split()
        self.cpu0 = self.user0 + self.sys0_broker
        self.ccpu0 = _client_cpu()
        self.sys0 = system_busy_seconds()
        self.t0 = time.monotonic()

    def close(self, records: int, payload_bytes: int) -> Measurement:
        t1 = time.monotonic()
        user, system = self.broker.cpu_split()
        broker_cpu = user + system - self.cpu0
        client_cpu = _client_cpu() - self.ccpu0
        busy = system_busy_seconds() - self.sys0
        return Measurement(
            records=records,
            payload_bytes=payload_bytes,
            seconds=t1 - self.t0,
            broker_cpu_s=broker_cpu,
            client_cpu_s=client_cpu,
            other_cpu_s=max(busy - broker_cpu - client_cpu, 0.0),
            broker_user_s=user - self.user0,
        )


def create_topic(broker: BrokerUnderTest, partitions: int, prefix: str = "bench") -> str:
    """Create a fresh topic and wait until its metadata shows every partition."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, **broker.client_security()})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)
    futures[name].result(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions:
            return name
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} did not appear with {partitions} partitions")


def end_offsets(broker: BrokerUnderTest, topic: str, partitions: int) -> list[int]:
    """High watermark of each partition."""
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, **broker.client_security(), "group.id": "bench-offsets"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)]
    finally:
        c.close()


def _producer(
    broker: BrokerUnderTest,
    acks: str,
    compression: str,
    errors: list[Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Producer:
    """A producer with the shared settings (and ``overrides``); failed deliveries (only those)
    are appended to ``errors``."""
    conf = dict(PRODUCER_BASE, **(overrides or {}))
    conf.update(
        {"bootstrap.servers": broker.bootstrap_servers, **broker.client_security(), "acks": acks, "compression.type": compression}
    )
    if errors is not None:
        conf["delivery.report.only.error"] = True
        conf["on_delivery"] = lambda err, _msg: errors.append(err)
    return Producer(conf)


def _produce_loop(
    p: Producer, topic: str, partitions: int, values: list[bytes], max_records: int, deadline: float
) -> int:
    """Produce round-robin over partitions until ``max_records`` or ``deadline``; return the count.

    Uses ``produce_batch`` with prepared message lists: half the client CPU per record of a
    ``produce()`` loop (0.45 vs 0.8 µs measured), which leaves more of the machine to the broker.
    Messages the local queue refused are counted out and the loop moves on.
    """
    chunk = 1000
    nv = len(values)
    lists = [
        [{"value": values[(k * chunk + j) % nv], "partition": j % partitions} for j in range(chunk)]
        for k in range(max(nv // chunk, 1))
    ]
    produce_batch = p.produce_batch
    poll = p.poll
    i = 0
    k = 0
    while i < max_records:
        msgs = lists[k % len(lists)]
        k += 1
        if max_records - i < chunk:
            msgs = msgs[: max_records - i]
        n = produce_batch(topic, msgs)
        if n < len(msgs):  # queue full: the refused ones carry an "_error" key
            for m in msgs:
                m.pop("_error", None)
            poll(0.0005)
        i += n
        poll(0)
        if time.monotonic() >= deadline:
            break
    return i


def produce_throughput(
    broker: BrokerUnderTest,
    *,
    topic: str,
    partitions: int,
    size: int,
    acks: str,
    compression: str,
    max_records: int,
    max_seconds: float,
    values: list[bytes] | None = None,
) -> Measurement:
    """Produce as fast as the client can for a bounded time; verify every record landed
    (``values``: the record values to cycle through, each ``size`` bytes; default make_values)."""
    values = values if values is not None else make_values(size)
    check_offsets = broker.verifiable_offsets
    before = sum(end_offsets(broker, topic, partitions)) if check_offsets else 0
    errors: list[Any] = []
    p = _producer(broker, acks, compression, errors)
    # Warm-up: connections, metadata, first batch per partition.
    _produce_loop(p, topic, partitions, values, partitions * 10, time.monotonic() + 10)
    if p.flush(30) != 0:
        raise RuntimeError("warm-up produce did not complete")
    before += partitions * 10
    w = _Window(broker)
    n = _produce_loop(p, topic, partitions, values, max_records, w.t0 + max_seconds)
    left = p.flush(120)
    m = w.close(n, n * size)
    if left != 0 or errors:
        raise RuntimeError(f"{broker.name}: {left} records still queued, {len(errors)} failed: {errors[:3]}")
    if check_offsets:
        landed = sum(end_offsets(broker, topic, partitions)) - before
        if landed != n:
            raise RuntimeError(f"{broker.name}: produced {n} records but the log grew by {landed}")
    return m


def fill(broker: BrokerUnderTest, topic: str, partitions: int, size: int, records: int) -> None:
    """Write ``records`` records (untimed) for a consume run."""
    errors: list[Any] = []
    p = _producer(broker, "1", "none", errors)
    values = make_values(size)
    n = _produce_loop(p, topic, partitions, values, records, time.monotonic() + 600)
    if p.flush(120) != 0 or n != records or errors:
        raise RuntimeError(f"{broker.name}: fill did not complete ({len(errors)} failed)")


def consume_throughput(
    broker: BrokerUnderTest, *, topic: str, partitions: int, size: int, records: int, max_seconds: float
) -> Measurement:
    """Read ``records`` records from offset 0 of every partition with a fresh consumer."""
    conf = dict(CONSUMER_BASE)
    conf.update({"bootstrap.servers": broker.bootstrap_servers, **broker.client_security(), "group.id": f"bench-{uuid.uuid4().hex[:8]}"})
    c = Consumer(conf)
    try:
        c.list_topics(topic, timeout=10)
        w = _Window(broker)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got = 0
        deadline = w.t0 + max_seconds
        consume = c.consume
        while got < records and time.monotonic() < deadline:
            # consume(n, timeout) returns early only once it has n records: never ask for more
            # than are left, or the last call idles for the whole timeout.
            msgs = consume(min(10000, records - got), 0.5)
            for m in msgs:
                if m.error() is not None:
                    raise KafkaException(m.error())
            got += len(msgs)
        m = w.close(got, got * size)
    finally:
        c.close()
    if got < records:
        m.extra["incomplete"] = 1.0
    return m


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    if not samples_ms:
        return {"p50": float("nan"), "p99": float("nan"), "p99.9": float("nan"), "max": float("nan")}
    s = sorted(samples_ms)
    n = len(s)

    def q(p: float) -> float:
        return s[min(n - 1, int(p * n))]

    return {"p50": q(0.50), "p99": q(0.99), "p99.9": q(0.999), "max": s[-1]}


def latency(
    broker: BrokerUnderTest,
    *,
    topic: str,
    partitions: int,
    size: int,
    acks: str,
    rate: int,
    seconds: float,
    warmup_seconds: float = 1.0,
    producer_overrides: dict[str, Any] | None = None,
) -> Measurement:
    """Produce at a fixed ``rate`` for ``seconds`` while a consumer tails the topic
    (``producer_overrides``: e.g. ``{"linger.ms": 0}``, on top of :data:`PRODUCER_BASE`).

    Produce latency: from ``produce()`` to the delivery report. End-to-end latency: from
    ``produce()`` to the consumer receiving the record. The first ``warmup_seconds`` of records
    are not counted. Each value starts with its send time (CLOCK_MONOTONIC, ns).
    """
    values = make_values(size)
    start_offsets = end_offsets(broker, topic, partitions)
    total = int(rate * seconds)
    warm = int(rate * warmup_seconds)
    produce_ms: list[float] = []
    e2e_ms: list[float] = []
    received = 0
    stop = threading.Event()
    ready = threading.Event()
    conf = dict(CONSUMER_BASE)
    conf.update({"bootstrap.servers": broker.bootstrap_servers, **broker.client_security(), "group.id": f"bench-{uuid.uuid4().hex[:8]}"})

    def tail() -> None:
        nonlocal received
        c = Consumer(conf)
        try:
            c.assign([TopicPartition(topic, p, o) for p, o in enumerate(start_offsets)])
            ready.set()
            deadline = time.monotonic() + seconds + 60
            while not stop.is_set() and received < total and time.monotonic() < deadline:
                # poll, not consume(n, timeout): consume waits for n records or the timeout.
                m = c.poll(0.1)
                if m is None or m.error() is not None:
                    continue
                now = time.monotonic_ns()
                v = m.value()
                (sent,) = _TS.unpack_from(v, 0)
                received += 1
                if _TS.unpack_from(v, 8)[0] >= warm:
                    e2e_ms.append((now - sent) / 1e6)
        finally:
            c.close()

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            return
        now = time.monotonic_ns()
        v = msg.value()
        if _TS.unpack_from(v, 8)[0] >= warm:
            produce_ms.append((now - _TS.unpack_from(v, 0)[0]) / 1e6)

    th = threading.Thread(target=tail, daemon=True)
    th.start()
    ready.wait(30)
    p = _producer(broker, acks, "none", overrides=producer_overrides)
    nv = len(values)
    w = _Window(broker)
    t0 = w.t0
    interval = 1.0 / rate
    i = 0
    while i < total:
        # Send every record that is due, then wait for the next one in poll() (which serves
        # delivery reports meanwhile). poll() counts whole milliseconds, so never ask for less:
        # a shorter timeout becomes 0 and the loop would spin, taking a core from the brokers.
        now = time.monotonic()
        while i < total and t0 + i * interval <= now:
            base = values[i % nv]
            v = _TS.pack(time.monotonic_ns()) + _TS.pack(i) + base[16:]
            try:
                p.produce(topic, v, partition=i % partitions, on_delivery=on_delivery)
            except BufferError:
                p.poll(0.001)
                continue
            i += 1
        p.poll(max(t0 + i * interval - time.monotonic(), 0.001) if i < total else 0)
    p.flush(60)
    m = w.close(total, total * size)
    th.join(timeout=seconds + 60)
    stop.set()
    for k, v in _percentiles(produce_ms).items():
        m.extra[f"produce_{k}"] = v
    for k, v in _percentiles(e2e_ms).items():
        m.extra[f"e2e_{k}"] = v
    m.extra["received"] = received
    return m
