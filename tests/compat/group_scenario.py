"""The consumer-group scenario every client must pass (issue 4's "done when").

Three members of one group share a 6-partition topic while a producer keeps writing. One member
is killed with SIGKILL (it never leaves); its partitions must reach the two others soon after the
session timeout. A fourth member joins and must get its share. Meanwhile a monitor polls the
group's committed offsets (OffsetFetch) and records any that go backwards. At the end every
produced record must have been consumed at least once and every partition's committed offset
must equal its end offset.

Members run as separate processes (:mod:`tests.compat.group_member`); the broker is an
:class:`~zurau.embedded.EmbeddedBroker` of the test's own with short group timeouts.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.component.kafka_wire import KafkaWireClient

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 6
SESSION_MS = 6000
# Broker settings: short joins and, for KIP-848 groups, a short broker-side session timeout.
BROKER_CONFIGS = {
    "group.initial.rebalance.delay.ms": "300",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.session.timeout.ms": str(SESSION_MS),
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


def wait_until(
    cond: Callable[[], bool], timeout: float, what: str, diag: Callable[[], str] = lambda: ""
) -> float:
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; {diag()}")
        time.sleep(0.05)
    return time.monotonic() - start


class Member:
    """One member process and what it reported."""

    def __init__(
        self, name: str, args: list[str], consumed: set[tuple[int, int]], lock: threading.Lock, log: Path
    ) -> None:
        self.name = name
        self._log = open(log, "wb")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.compat.group_member", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self.assigned: list[int] = []
        self.ready = False
        self.commit_failures = 0
        self._consumed = consumed
        self._lock = lock
        self._reader = threading.Thread(target=self._read, name=f"member-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = json.loads(line)
            kind = ev["ev"]
            with self._lock:
                if kind == "ready":
                    self.ready = True
                elif kind == "assigned":
                    self.assigned = ev["parts"]
                elif kind == "recs":
                    self._consumed.update((ev["p"], o) for o in ev["o"])
                elif kind == "commit_failed":
                    self.commit_failures += 1

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.wait()

    def stop(self) -> None:
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
        self.wait()

    def wait(self) -> None:
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._reader.join(10)
        self._log.close()


class CommitMonitor:
    """Polls the group's committed offsets; notes every partition whose offset went backwards."""

    def __init__(self, host: str, port: int, group: str) -> None:
        self.group = group
        self.latest: dict[int, int] = {}
        self.regressions: list[tuple[int, int, int]] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run(host, port)), daemon=True)
        self._thread.start()

    async def _run(self, host: str, port: int) -> None:
        client = await KafkaWireClient.connect(host, port, client_id="commit-monitor")
        try:
            while not self._stop.is_set():
                r = await client.request(
                    9, 8, {"groups": [{"group_id": self.group, "topics": None}], "require_stable": False}
                )
                (g,) = r["groups"]
                if g["error_code"] == 0:
                    for t in g["topics"]:
                        for p in t["partitions"]:
                            i, off = p["partition_index"], p["committed_offset"]
                            prev = self.latest.get(i, -1)
                            if off < prev:
                                self.regressions.append((i, prev, off))
                            self.latest[i] = max(prev, off)
                    self.samples += 1
                await asyncio.sleep(0.05)
        finally:
            await client.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


class Producer:
    """Writes numbered records round-robin over the partitions until stopped; keeps their offsets."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer as CkProducer

        self.produced: set[tuple[int, int]] = set()
        self.errors: list[Any] = []
        self._p = CkProducer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "log_level": 3})
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.produced.add((msg.partition(), msg.offset()))

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            for _ in range(PARTITIONS * 2):
                self._p.produce(
                    self._topic,
                    value=f"r{i}".encode(),
                    partition=i % PARTITIONS,
                    on_delivery=self._on_delivery,
                )
                i += 1
            self._p.poll(0)
            time.sleep(0.05)
        assert self._p.flush(30) == 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def run_group_scenario(client: str, tmp_path: Path, protocol: str = "classic") -> dict[str, float]:
    """Run the scenario for ``client``; returns timings (seconds) for the test's report."""
    from zurau.embedded import EmbeddedBroker

    topic = f"grp-{client}-{uuid.uuid4().hex[:6]}"
    group = f"g-{client}-{protocol}-{uuid.uuid4().hex[:6]}"
    timings: dict[str, float] = {}
    with EmbeddedBroker(tmp_path / "data", **BROKER_CONFIGS) as broker:
        broker.create_topic(topic, PARTITIONS)
        host, port = broker.broker.advertised
        consumed: set[tuple[int, int]] = set()
        lock = threading.Lock()
        members: list[Member] = []

        def start_member() -> Member:
            name = f"m{len(members) + 1}"
            m = Member(
                name,
                [client, broker.bootstrap_servers, topic, group, str(SESSION_MS), protocol],
                consumed,
                lock,
                tmp_path / f"{name}.log",
            )
            members.append(m)
            return m

        def live() -> list[Member]:
            return [m for m in members if m.alive]

        def balanced(n: int) -> Callable[[], bool]:
            def check() -> bool:
                with lock:
                    parts = [m.assigned for m in live()]
                flat = [p for ps in parts for p in ps]
                share = PARTITIONS // n
                return (
                    len(parts) == n
                    and sorted(flat) == list(range(PARTITIONS))
                    and all(len(ps) == share for ps in parts)
                )

            return check

        def diag() -> str:
            with lock:
                return f"assignments: {[(m.name, m.alive, m.assigned) for m in members]}"

        producer = Producer(broker.bootstrap_servers, topic)
        monitor = CommitMonitor(host, port, group)
        try:
            for _ in range(3):
                start_member()
            timings["three_members_balanced"] = wait_until(
                balanced(3), 60, "3 members sharing 6 partitions", diag
            )
            wait_until(lambda: len(consumed) > 100, 30, "records being consumed")
            victim = members[1]
            victim.kill()
            timings["takeover_after_kill"] = wait_until(
                balanced(2), SESSION_MS / 1000 + 20, "the 2 survivors owning all partitions", diag
            )
            start_member()
            timings["fourth_member_balanced"] = wait_until(
                balanced(3), 60, "the new member getting its share", diag
            )
            time.sleep(1.0)
            producer.stop()
            assert not producer.errors, producer.errors[:3]
            produced = set(producer.produced)
            ends = {p: max(o for q, o in produced if q == p) + 1 for p in range(PARTITIONS)}

            def drained() -> bool:
                with lock:
                    done = produced <= consumed
                return done and all(monitor.latest.get(p, -1) == ends[p] for p in range(PARTITIONS))

            def drain_diag() -> str:
                with lock:
                    missing = len(produced - consumed)
                return f"{missing} records unconsumed; committed {monitor.latest}, ends {ends}; {diag()}"

            timings["drain"] = wait_until(drained, 60, "every record consumed and committed", drain_diag)
        finally:
            producer.stop()
            for m in members:
                m.stop()
            monitor.stop()
        assert monitor.samples > 10
        assert monitor.regressions == [], f"committed offsets went backwards: {monitor.regressions[:5]}"
        with lock:
            assert produced <= consumed
        timings["records"] = len(produced)
    return timings
