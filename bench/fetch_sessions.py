"""Fetch sessions (KIP-227): what a fetch of 1,000 partitions costs when only a few have data.

    .venv/bin/python -m bench.fetch_sessions [--partitions 1000] [--hot 5] [--seconds 5] [--repeats 1]

The consumer is a hand-built Fetch loop (Fetch v12, topics by name) over one connection, because
librdkafka, kafka-python and aiokafka do not use fetch sessions (Java clients do). It reads every
partition of a topic of ``--partitions`` partitions, from the end, while a confluent-kafka
producer writes 1,000 records/s of 100 B round-robin into ``--hot`` of them. Three runs:

* Zurau with sessions: a full fetch (epoch 0) then incremental fetches naming only the partitions
  whose offset moved;
* Zurau without: every fetch is a full one (epoch -1, as librdkafka's);
* Tansu 0.6 (memory storage), asked for a session; it answers session id 0, so the loop falls back
  to full fetches.

Two phases per run: *poll*, ``max_wait_ms=0`` fetches back to back (fetches/s, broker CPU ms per
fetch, response bytes per fetch), and *tail*, ``max_wait_ms=500`` (the broker's CPU share while
records stream, records received/s). Brokers are processes on 127.0.0.1, stopped by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench._brokers import BrokerUnderTest, TansuBroker, ZurauBroker, process_cpu_seconds, system_busy_seconds
from bench._provenance import provenance_line
from bench._workloads import create_topic
from zurau.client.connection import BrokerConnection
from zurau.protocol.api_keys import ApiKey


def _part(i: int, offset: int) -> dict[str, Any]:
    return {"partition": i, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}  # fmt: skip


class SessionConsumer:
    """A Fetch loop over every partition of ``topic``, with a fetch session when ``sessions``
    and the broker grants one (KIP-227 client rules: epoch 0 asks, the session's epoch moves on
    by one per fetch, only partitions whose offset changed are named)."""

    def __init__(self, conn: BrokerConnection, topic: str, offsets: dict[int, int], sessions: bool) -> None:
        self.conn = conn
        self.topic = topic
        self.offsets = offsets
        self.sessions = sessions
        self.session_id = 0
        self.epoch = 0 if sessions else -1
        self.sent: dict[int, int] = {}
        self.records = 0
        self.bytes = 0
        self.version = conn.version(ApiKey.FETCH, 12)

    async def fetch(self, max_wait_ms: int) -> None:
        if self.session_id and self.epoch > 0:
            changed = [i for i, o in self.offsets.items() if self.sent.get(i) != o]
        else:
            changed = list(self.offsets)
        body = {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 50 << 20,
            "isolation_level": 0, "session_id": self.session_id, "session_epoch": self.epoch,
            "topics": [{"topic": self.topic, "partitions": [_part(i, self.offsets[i]) for i in changed]}] if changed else [],
            "forgotten_topics_data": [], "rack_id": "",
        }  # fmt: skip
        resp = await self.conn.request(ApiKey.FETCH, body, version=self.version, timeout=30)
        if resp.get("error_code"):
            self.session_id, self.epoch, self.sent = 0, (0 if self.sessions else -1), {}
            return
        for i in changed:
            self.sent[i] = self.offsets[i]
        if self.sessions:
            if resp.get("session_id"):
                self.session_id = resp["session_id"]
                self.epoch = self.epoch + 1
            else:
                self.session_id, self.epoch = 0, 0
        for t in resp["responses"]:
            for p in t["partitions"]:
                recs = p.get("records")
                if recs and not p["error_code"]:
                    self.bytes += len(recs)
                    self.offsets[p["partition_index"]] = p["high_watermark"]
                    self.records += 1


def _producer_thread(broker: BrokerUnderTest, topic: str, hot: int, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "enable.idempotence": False})
        value = b"x" * 100
        n = 0
        started = time.monotonic()
        while not stop.is_set():
            p.produce(topic, value=value, partition=n % hot)
            n += 1
            p.poll(0)
            ahead = n / 1000 - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        p.flush(10)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


async def _measure(broker: BrokerUnderTest, topic: str, partitions: int, sessions: bool, seconds: float) -> dict[str, float]:
    conn = await BrokerConnection("127.0.0.1", broker.port).connect()
    try:
        # Start at the end of every partition (a full fetch with offset 0 answers the HW).
        c = SessionConsumer(conn, topic, dict.fromkeys(range(partitions), 0), sessions)
        await c.fetch(0)
        out: dict[str, float] = {}
        for phase, wait in (("poll", 0), ("tail", 500)):
            fetches = 0
            c.records = c.bytes = 0
            cpu0, busy0, t0 = process_cpu_seconds(broker.pid), system_busy_seconds(), time.monotonic()
            while time.monotonic() - t0 < seconds:
                await c.fetch(wait)
                fetches += 1
            elapsed = time.monotonic() - t0
            cpu = process_cpu_seconds(broker.pid) - cpu0
            out[f"{phase} fetches/s"] = fetches / elapsed
            out[f"{phase} broker CPU ms/fetch"] = 1000 * cpu / max(fetches, 1)
            out[f"{phase} broker CPU %"] = 100 * cpu / elapsed
            out[f"{phase} answers with records/s"] = c.records / elapsed
            out[f"{phase} machine busy cores"] = (system_busy_seconds() - busy0) / elapsed
        out["session"] = float(c.session_id != 0)
        return out
    finally:
        await conn.close()


def run_case(kind: str, partitions: int, hot: int, seconds: float, workdir: Path) -> dict[str, float]:
    broker: BrokerUnderTest = TansuBroker(workdir) if kind == "tansu" else ZurauBroker(workdir)
    broker.start()
    stop = threading.Event()
    try:
        topic = create_topic(broker, partitions, prefix="sessions")
        t = _producer_thread(broker, topic, hot, stop)
        time.sleep(0.5)
        result = asyncio.run(_measure(broker, topic, partitions, kind != "zurau-sessionless", seconds))
        stop.set()
        t.join(15)
        return result
    finally:
        stop.set()
        broker.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--hot", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    kinds = ["zurau-sessions", "zurau-sessionless", "tansu"]
    best: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as d:
        for _ in range(args.repeats):
            for kind in kinds:
                r = run_case(kind, args.partitions, args.hot, args.seconds, Path(d))
                if kind not in best or r["poll fetches/s"] > best[kind]["poll fetches/s"]:
                    best[kind] = r
    print(provenance_line())
    print(f"{args.partitions} partitions, {args.hot} with data (1,000 records/s of 100 B), {args.seconds:.0f} s per phase")
    metrics = [m for m in best[kinds[0]] if m != "session"]
    print("| Metric | " + " | ".join(kinds) + " | sessions/sessionless | sessions/Tansu |")
    print("|---|" + "---|" * (len(kinds) + 2))
    for m in metrics:
        vals = [best[k][m] for k in kinds]
        a, b, c = vals
        r1 = a / b if b else float("nan")
        r2 = a / c if c else float("nan")
        print(f"| {m} | " + " | ".join(f"{v:.3g}" for v in vals) + f" | {r1:.2f}x | {r2:.2f}x |")
    print("session granted: " + ", ".join(f"{k}={'yes' if best[k]['session'] else 'no'}" for k in kinds))


if __name__ == "__main__":
    main()
