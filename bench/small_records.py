"""Small records against Tansu (issue 18, round two): ``.venv/bin/python -m bench.small_records``.

Two cases, each run ``--runs`` times per broker, Zurau and Tansu alternating, a fresh broker per run:

* ``consume``: read ``--records`` records of 100 B from offset 0 of ``--partitions`` partitions
  with librdkafka's default consumer settings (only ``bootstrap.servers``, ``group.id`` and
  ``auto.offset.reset``). Besides MB/s it reports what the client saw: Fetch requests, bytes per
  Fetch response, and how often librdkafka paused fetching for ``fetch.queue.backoff.ms``
  (default 1,000 ms) because its queue held ``queued.min.messages`` (100,000) or more (from
  ``debug=fetch`` lines and statistics, which only log: they change no fetch setting).
* ``lowrate``: 2,000 records/s of 100 B, ``linger.ms=0``, ``--acks`` (1) for ``--seconds``, with a
  consumer (librdkafka defaults) tailing the topic: broker CPU-seconds per 10,000 requests (every
  request either client sent, counted from librdkafka's statistics) and per second.

Broker CPU is the process's user + system time from ``/proc``; "other" is what every other
process on the machine used meanwhile (this machine is shared), in cores. ``--before OLD/src``
adds runs of Zurau from another tree (an A/B in the same loop).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from bench._brokers import BrokerUnderTest, TansuBroker, ZurauBroker
from bench._workloads import Measurement, _Window, create_topic, end_offsets, fill, make_values

SIZE = 100


class _Stats:
    """The latest librdkafka statistics of one client, and its debug lines' backoffs."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}
        self.queue_backoffs = 0  # per partition: one pause of fetch.queue.backoff.ms each

    def on_stats(self, raw: str) -> None:
        self.last = json.loads(raw)

    def requests(self, api: str | None = None) -> int:
        """Requests sent to brokers (not the bootstrap entry), of ``api`` or of every API."""
        total = 0
        for b in self.last.get("brokers", {}).values():
            if b.get("nodeid", -1) < 0:
                continue
            req = b.get("req", {})
            total += req.get(api, 0) if api else sum(req.values())
        return total

    def rx(self) -> tuple[int, int]:
        """(responses, bytes) received from brokers."""
        n = nbytes = 0
        for b in self.last.get("brokers", {}).values():
            if b.get("nodeid", -1) >= 0:
                n += b.get("rx", 0)
                nbytes += b.get("rxbytes", 0)
        return n, nbytes


class _BackoffCounter(logging.Handler):
    """Counts librdkafka's "Fetch backoff for <n>ms: Local: Queue full" debug lines."""

    def __init__(self, stats: _Stats) -> None:
        super().__init__()
        self.stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        if "Queue full" in record.getMessage():
            self.stats.queue_backoffs += 1


def consume_defaults(b: BrokerUnderTest, partitions: int, records: int) -> Measurement:
    """Fill a topic, then read it back with librdkafka's default consumer settings."""
    topic = create_topic(b, partitions)
    fill(b, topic, partitions, SIZE, records)
    st = _Stats()
    log = logging.getLogger(f"bench.small_records.{uuid.uuid4().hex[:6]}")
    log.addHandler(_BackoffCounter(st))
    log.setLevel(logging.DEBUG)
    log.propagate = False
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "statistics.interval.ms": 100,
            "stats_cb": st.on_stats,
            "debug": "fetch",
        },
        logger=log,
    )
    try:
        c.list_topics(topic, timeout=10)
        w = _Window(b)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got = 0
        while got < records and time.monotonic() < w.t0 + 300:
            msgs = c.consume(min(10000, records - got), 0.5)
            for m in msgs:
                if m.error() is not None:
                    raise KafkaException(m.error())
            got += len(msgs)
        m = w.close(got, got * SIZE)
        c.poll(0.3)  # one more statistics callback
    finally:
        c.close()
    responses, nbytes = st.rx()
    m.extra.update(
        fetches=st.requests("Fetch"),
        kb_per_response=nbytes / max(responses, 1) / 1e3,
        pauses_per_partition=st.queue_backoffs / partitions,
    )
    return m


def low_rate(b: BrokerUnderTest, seconds: float, rate: int = 2000, acks: str = "1") -> Measurement:
    """``rate`` records/s of 100 B, linger.ms=0, ``acks``, one partition, a consumer tailing it."""
    topic = create_topic(b, 1)
    start = end_offsets(b, topic, 1)[0]
    values = make_values(SIZE)
    pst, cst = _Stats(), _Stats()
    total = int(rate * seconds)
    received = 0
    stop = threading.Event()

    def tail() -> None:
        nonlocal received
        c = Consumer(
            {
                "bootstrap.servers": b.bootstrap_servers,
                "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                "statistics.interval.ms": 100,
                "stats_cb": cst.on_stats,
            }
        )
        try:
            c.assign([TopicPartition(topic, 0, start)])
            while not stop.is_set():
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    received += 1
        finally:
            c.close()

    th = threading.Thread(target=tail, daemon=True)
    th.start()
    p = Producer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "linger.ms": 0,
            "acks": acks,
            "enable.idempotence": False,
            "statistics.interval.ms": 100,
            "stats_cb": pst.on_stats,
        }
    )
    p.produce(topic, b"warm-up", partition=0)
    p.flush(30)
    time.sleep(1.0)  # the consumer's first fetches
    w = _Window(b)
    req0 = pst.requests() + cst.requests()
    interval = 1.0 / rate
    i = 0
    while i < total:
        now = time.monotonic()
        while i < total and w.t0 + i * interval <= now:
            try:
                p.produce(topic, values[i % len(values)], partition=0)
            except BufferError:
                p.poll(0.001)
                continue
            i += 1
        p.poll(max(w.t0 + i * interval - time.monotonic(), 0.001) if i < total else 0)
    p.flush(30)
    deadline = time.monotonic() + 10
    while received < total + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    m = w.close(total, total * SIZE)
    time.sleep(0.25)  # one more statistics callback from each client
    p.poll(0)
    stop.set()
    th.join(30)
    requests = pst.requests() + cst.requests() - req0
    m.extra.update(
        requests=requests,
        produce_requests=pst.requests("Produce"),
        fetch_requests=cst.requests("Fetch"),
        cpu_ms_per_10k_requests=1000 * m.broker_cpu_s / max(requests, 1) * 10_000,
        user_share=m.broker_user_s / max(m.broker_cpu_s, 1e-9),
        received=received,
    )
    return m


def _zurau_from(src: Path) -> type[BrokerUnderTest]:
    """Zurau run from another tree's ``src/`` (named Zurau-before in the output)."""

    class ZurauBefore(ZurauBroker):
        name = "Zurau-before"

        def __init__(self, workdir: Path) -> None:
            super().__init__(workdir, src=src)

    return ZurauBefore


def _run(
    name: str, fn: Callable[[BrokerUnderTest], Measurement], runs: int, brokers: list[type[BrokerUnderTest]]
) -> dict[str, list[Measurement]]:
    out: dict[str, list[Measurement]] = {cls.name: [] for cls in brokers}
    with tempfile.TemporaryDirectory(prefix="zurau-small-") as tmp:
        for r in range(runs):
            for cls in brokers:
                with cls(Path(tmp)) as b:
                    m = fn(b)
                out[cls.name].append(m)
                extra = ", ".join(f"{k} {v:.4g}" for k, v in m.extra.items())
                print(
                    f"  {name} run {r + 1} {cls.name}: {m.mb_per_s:.1f} MB/s, broker CPU {m.broker_cpu_s:.3f} s "
                    f"({100 * m.broker_cpu_s / m.seconds:.1f} % core), other {m.other_cpu_s / m.seconds:.2f} cores; {extra}",
                    flush=True,
                )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.small_records", description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="consume,lowrate")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=2_000_000, help="records to consume (consume)")
    ap.add_argument("--partitions", default="1,8", help="partition counts (consume)")
    ap.add_argument("--seconds", type=float, default=10.0, help="duration (lowrate)")
    ap.add_argument("--acks", default="1", help="producer acks (lowrate)")
    ap.add_argument("--brokers", default="zurau,tansu")
    ap.add_argument("--before", type=Path, help="another tree's src/: adds 'Zurau-before' runs (A/B)")
    args = ap.parse_args(argv)
    classes = {"zurau": ZurauBroker, "tansu": TansuBroker}
    brokers: list[type[BrokerUnderTest]] = [classes[n] for n in args.brokers.split(",")]
    if args.before is not None:
        brokers.insert(0, _zurau_from(args.before.resolve()))
    only = set(args.only.split(","))
    if "consume" in only:
        for parts in (int(x) for x in args.partitions.split(",")):
            res = _run(
                f"consume {parts}p",
                lambda b, parts=parts: consume_defaults(b, parts, args.records),
                args.runs,
                brokers,
            )
            print(f"consume 100 B, {parts} partition(s), librdkafka defaults (median of {args.runs}):")
            for name, ms in res.items():
                print(
                    f"  {name}: {statistics.median(m.mb_per_s for m in ms):.1f} MB/s, "
                    f"{statistics.median(m.extra['fetches'] for m in ms):.0f} fetches, "
                    f"{statistics.median(m.extra['kb_per_response'] for m in ms):.0f} kB/response, "
                    f"{statistics.median(m.extra['pauses_per_partition'] for m in ms):.1f} pauses of 1 s"
                )
    if "lowrate" in only:
        res = _run("lowrate", lambda b: low_rate(b, args.seconds, acks=args.acks), args.runs, brokers)
        print(f"low rate: 2,000 records/s of 100 B, linger.ms=0, acks={args.acks} (median of {args.runs}):")
        for name, ms in res.items():
            print(
                f"  {name}: {statistics.median(100 * m.broker_cpu_s / m.seconds for m in ms):.1f} % core, "
                f"{statistics.median(m.extra['cpu_ms_per_10k_requests'] for m in ms):.0f} ms CPU per 10,000 requests, "
                f"{statistics.median(m.extra['requests'] / m.seconds for m in ms):.0f} requests/s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
