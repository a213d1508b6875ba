"""confluent-kafka's ``ShareConsumer`` (librdkafka's KIP-932 share consumer) against Zurau:
ShareGroupHeartbeat v1, ShareFetch v1 and ShareAcknowledge v1 on one broker.

Several consumers on ONE partition each get a share and every record is accepted exactly once;
RELEASE delivers a record again with delivery count 2, REJECT never again; a consumer killed with
records acquired has them delivered to another member once the acquisition lock expires; the
delivery limit archives a record. The broker runs short share-group timers
(``group.share.record.lock.duration.ms``, heartbeat interval) so each scenario takes seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import EmbeddedBroker

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
LOCK_MS = 3000
CONFIGS = {
    "group_share_enable": True,
    "group.share.heartbeat.interval.ms": 300,
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.record.lock.duration.ms": LOCK_MS,
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.delivery.count.limit": 3,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(**CONFIGS) as b:
        yield b


def _topic(bootstrap: str) -> str:
    name = f"q-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(15)
    return name


def _produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=f"job-{i}".encode())
    assert p.flush(15) == 0


def _consumer(bootstrap: str, group: str, topic: str, **extra: object) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    c.subscribe([topic])
    return c


def _poll_until(c: ShareConsumer, want: int, seconds: float, sink: list, ack: object = None) -> None:
    deadline = time.monotonic() + seconds
    while len(sink) < want and time.monotonic() < deadline:
        for m in c.poll(0.5):
            assert m.error() is None, m.error()
            sink.append((m.offset(), m.value(), m.delivery_count()))
            if ack is not None:
                c.acknowledge(m, ack)


def _join(bootstrap: str, group: str, topic: str, n: int = 1, **extra: object) -> list[ShareConsumer]:
    consumers = [_consumer(bootstrap, group, topic, **extra) for _ in range(n)]
    deadline = time.monotonic() + 6  # a few heartbeat intervals: every member assigned
    while time.monotonic() < deadline:
        for c in consumers:
            assert not [m for m in c.poll(0.1) if m.error() is None]
    return consumers


def test_several_consumers_share_one_partition_each_record_accepted_once(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    consumers = _join(bs, "g-share", topic, 3, **{"max.poll.records": 7})
    total = 600
    got: dict[int, list] = {i: [] for i in range(3)}
    stop = threading.Event()

    def run(i: int) -> None:
        while not stop.is_set():
            for m in consumers[i].poll(0.3):
                assert m.error() is None, m.error()
                got[i].append(m.offset())
                time.sleep(0.002)  # work: lets the others take their share

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    try:
        _produce(bs, topic, total)
        deadline = time.monotonic() + 60
        while sum(len(v) for v in got.values()) < total and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # anything delivered twice would show up now
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        for c in consumers:
            c.close()
    offsets = Counter(o for v in got.values() for o in v)
    assert sorted(offsets) == list(range(total)), f"missing {set(range(total)) - set(offsets)}"
    assert max(offsets.values()) == 1, [o for o, n in offsets.items() if n > 1]
    assert sum(1 for v in got.values() if v) >= 2, {i: len(v) for i, v in got.items()}


def test_release_redelivers_with_count_two_and_reject_never(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    (c,) = _join(bs, "g-explicit", topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        _produce(bs, topic, 4)
        first: list = []
        deadline = time.monotonic() + 20
        while len(first) < 4 and time.monotonic() < deadline:
            for m in c.poll(0.5):
                assert m.error() is None
                first.append((m.offset(), m.delivery_count()))
                # 0: accept, 1: release, 2: reject, 3: accept
                kind = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.RELEASE, 2: AcknowledgeType.REJECT}
                c.acknowledge(m, kind.get(m.offset(), AcknowledgeType.ACCEPT))
        assert sorted(first) == [(0, 1), (1, 1), (2, 1), (3, 1)]
        again: list = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not again:
            for m in c.poll(0.5):
                assert m.error() is None
                again.append((m.offset(), m.delivery_count()))
                c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync()
        assert again == [(1, 2)]
        # nothing else comes back: 0 and 3 accepted, 2 rejected, 1 accepted on its 2nd delivery
        assert not [m for _ in range(4) for m in c.poll(0.5) if m.error() is None]
    finally:
        c.close()


def test_killed_consumer_records_go_to_another_member_after_the_lock(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    group = "g-kill"
    log = open(tmp_path / "member.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.compat.share_member", bs, group, topic],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )
    survivor = None
    try:
        time.sleep(4)  # the member joins and is assigned the partition (it starts at latest)
        _produce(bs, topic, 10)
        assert proc.stdout is not None
        held = json.loads(proc.stdout.readline())
        assert held, "the member process got no records"
        proc.send_signal(signal.SIGKILL)  # it never acknowledges nor leaves
        proc.wait(10)
        # Another member joins (a consumer that fetched before the kill would also hold buffered
        # copies of its first fetch, which librdkafka hands out with their old delivery count).
        survivor = _consumer(bs, group, topic)
        got: list = []
        _poll_until(survivor, 10, 40, got)
        offsets = sorted(o for o, _v, _n in got)
        assert offsets == list(range(10)), got
        redelivered = {o: n for o, _v, n in got if o in held}
        assert redelivered and all(n == 2 for n in redelivered.values()), got
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        if survivor is not None:
            survivor.close()


def test_delivery_limit_archives_a_record(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    (c,) = _join(bs, "g-limit", topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        _produce(bs, topic, 2)
        counts: list = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msgs = [m for m in c.poll(0.5) if m.error() is None]
            for m in msgs:
                counts.append((m.offset(), m.delivery_count()))
                # offset 0 is always released: archived after delivery.count.limit (3) deliveries
                c.acknowledge(m, AcknowledgeType.RELEASE if m.offset() == 0 else AcknowledgeType.ACCEPT)
            if not msgs and (0, 3) in counts:
                break
        c.commit_sync()
        assert [n for o, n in counts if o == 0] == [1, 2, 3], counts
        assert [n for o, n in counts if o == 1] == [1], counts
        assert not [m for _ in range(4) for m in c.poll(0.5) if m.error() is None]
    finally:
        c.close()
