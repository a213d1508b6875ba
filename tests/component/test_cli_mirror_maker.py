"""``zurau mirror-maker mm2.properties`` as a process (Kafka's ``connect-mirror-maker.sh``): two
flows ``A->B`` and ``B->A`` between two embedded brokers copy each cluster's topic to the other
and no topic travels back (no ``B.A.orders``); each side has the other's heartbeats; SIGTERM stops
it cleanly; a bad file is one line on stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker

ZURAU = [sys.executable, "-m", "zurau.cli.main"]


def topics(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5).topics)


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"%s-%d" % (topic.encode(), i))
    p.flush(10)


def count(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(topic, timeout=5).topics.get(topic)
    if md is None or md.error is not None:
        return -1
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "counter"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1] for p in md.partitions)
    finally:
        c.close()


def test_two_flows_in_one_process(tmp_path: Path) -> None:
    with (
        EmbeddedBroker(group_initial_rebalance_delay_ms=0) as a,
        EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b,
    ):
        a.create_topic("orders", 2)
        b.create_topic("payments", 1)
        produce(a.bootstrap_servers, "orders", 20)
        produce(b.bootstrap_servers, "payments", 5)
        config = tmp_path / "mm2.properties"
        config.write_text(
            "clusters = A, B\n"
            f"A.bootstrap.servers = {a.bootstrap_servers}\n"
            f"B.bootstrap.servers = {b.bootstrap_servers}\n"
            "A->B.enabled = true\n"
            "B->A.enabled = true\n"
            "B->A.topics = payments, A\\..*\n"  # A.* named on purpose: a cycle is never copied
            "replication.factor = 1\n"
            "refresh.topics.interval.seconds = 1\n"
            "sync.topic.acls.enabled = false\n"
            "A.offset.flush.interval.ms = 500\n"
            "B.offset.flush.interval.ms = 500\n"
        )
        log = tmp_path / "mm2.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [*ZURAU, "mirror-maker", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:

            def copied() -> bool:
                assert proc.poll() is None, log.read_text()
                return (
                    count(b.bootstrap_servers, "A.orders") == 20
                    and count(a.bootstrap_servers, "B.payments") == 5
                )

            wait_for(copied, 60, "topics copied both ways")

            def heartbeats() -> bool:
                return "A.heartbeats" in topics(b.bootstrap_servers) and "B.heartbeats" in topics(
                    a.bootstrap_servers
                )

            wait_for(heartbeats, 60, "heartbeats copied both ways")
            # Let a few refreshes pass: nothing comes back.
            produce(a.bootstrap_servers, "orders", 1)
            wait_for(lambda: count(b.bootstrap_servers, "A.orders") == 21, 30, "a new record copied")
            on_a, on_b = topics(a.bootstrap_servers), topics(b.bootstrap_servers)
            assert not {t for t in on_a if t.startswith("B.A.")}, on_a
            assert not {t for t in on_b if t.startswith("A.B.")}, on_b
            assert {"A.orders", "A.heartbeats", "heartbeats", "A.checkpoints.internal"} <= on_b
            assert {"B.payments", "B.heartbeats", "heartbeats", "B.checkpoints.internal"} <= on_a
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_bad_files(tmp_path: Path) -> None:
    missing = subprocess.run(
        [*ZURAU, "mirror-maker", str(tmp_path / "nope.properties")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    bad = tmp_path / "bad.properties"
    bad.write_text("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\n")
    out = subprocess.run([*ZURAU, "mirror-maker", str(bad)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.strip().endswith("cluster B has no B.bootstrap.servers")
    bad.write_text("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:2\n")
    out = subprocess.run(
        [*ZURAU, "mirror-maker", str(bad), "--clusters", "C"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1 and "--clusters names C" in out.stderr
