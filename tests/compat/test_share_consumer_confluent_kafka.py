"""confluent-kafka's ``ShareConsumer`` (librdkafka's KIP-932 share consumer) against Zurau:
ShareGroupHeartbeat v1, ShareFetch v1 and ShareAcknowledge v1 on one broker.

Several consumers on ONE partition each get a share and every record is accepted exactly once;
RELEASE delivers a record again with delivery count 2, REJECT never again; a consumer killed with
records acquired has them delivered to another member once the acquisition lock expires; the
delivery limit archives a record. The broker runs short share-group timers
(``group.share.record.lock.duration.ms``, heartbeat interval) so each scenario takes seconds.
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
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.compat.test_metrics_confluent_kafka import scrape
from zurau.client.admin import AdminClient as AdminClient_
from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.share_groups_admin import ShareGroupAdmin
from zurau.embedded import EmbeddedBroker

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
LOCK_MS = 3000
CONFIGS = {
    "group_share_enable": True,
    "metrics_http_listener": "http://127.0.0.1:0",
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
        # everything finished: the start offset passed every record and nothing is left to deliver
        offsets = asyncio.run(_share_offsets(bs, "g-explicit"))
        assert [(o.start_offset, o.lag) for o in offsets.values()] == [(4, 0)], offsets
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


async def _share_offsets(bootstrap: str, group: str) -> dict:
    """DescribeShareGroupOffsets v1 through Zurau's admin client (confluent-kafka 2.16 has none)."""
    async with AdminClient_(ClientConfig(bootstrap_servers=parse_bootstrap(bootstrap))) as admin:
        return await ShareGroupAdmin(admin).list_offsets(group)


def _group_config(bootstrap: str, group: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()
    ]
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([res])[res].result(15)


def test_a_new_group_starts_at_latest_unless_earliest(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    _produce(bs, topic, 5)  # before either group exists
    _group_config(bs, "g-earliest", share_auto_offset_reset="earliest")
    latest = _join(bs, "g-latest", topic)[0]
    earliest = _consumer(bs, "g-earliest", topic)
    try:
        got_earliest: list = []
        _poll_until(earliest, 5, 20, got_earliest)  # what was there before it joined
        _produce(bs, topic, 3, start=5)
        got_latest: list = []
        _poll_until(latest, 3, 20, got_latest)
        _poll_until(earliest, 8, 20, got_earliest)
        assert [o for o, _v, _n in got_latest] == [5, 6, 7]
        assert [o for o, _v, _n in got_earliest] == list(range(8))
    finally:
        latest.close()
        earliest.close()


def test_dead_letters_of_rejected_and_exhausted_records(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    dlq = "dlq." + topic
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(dlq, 1, 1)])[dlq].result(15)
    group = "g-dlq"
    _group_config(
        bs,
        group,
        **{"errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.copy.record.enable": "true"},
    )
    (c,) = _join(bs, group, topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        p = Producer({"bootstrap.servers": bs})
        for i in range(3):
            p.produce(topic, key=f"k{i}".encode(), value=f"job-{i}".encode(), headers=[("trace", b"t%d" % i)])
        assert p.flush(15) == 0
        deadline = time.monotonic() + 30
        seen: list = []
        while time.monotonic() < deadline and (2, 3) not in seen:
            for m in c.poll(0.5):
                if m.error() is None:
                    seen.append((m.offset(), m.delivery_count()))
                    # 0 accepted, 1 rejected, 2 released until the delivery limit (3) archives it
                    kind = {1: AcknowledgeType.REJECT, 2: AcknowledgeType.RELEASE}.get(
                        m.offset(), AcknowledgeType.ACCEPT
                    )
                    c.acknowledge(m, kind)
        c.commit_sync()
        assert (2, 3) in seen, seen
    finally:
        c.close()
    reader = ShareConsumer({"bootstrap.servers": bs, "group.id": "dlq-reader"})
    _group_config(bs, "dlq-reader", share_auto_offset_reset="earliest")
    reader.subscribe([dlq])
    letters: list = []
    deadline = time.monotonic() + 30
    while len(letters) < 2 and time.monotonic() < deadline:
        letters += [m for m in reader.poll(0.5) if m.error() is None]
    reader.close()
    by_offset = {}
    for m in letters:
        h = {k: v for k, v in (m.headers() or [])}
        by_offset[int(h["__dlq.errors.offset"])] = (m.key(), m.value(), h)
    assert sorted(by_offset) == [1, 2]
    key, value, h = by_offset[1]
    assert (key, value, h["trace"]) == (b"k1", b"job-1", b"t1")
    assert h["__dlq.errors.reason"] == b"REJECTED" and h["__dlq.errors.delivery.count"] == b"1"
    assert h["__dlq.errors.topic"] == topic.encode() and h["__dlq.errors.group.id"] == group.encode()
    assert by_offset[2][2]["__dlq.errors.reason"] == b"DELIVERY_LIMIT"
    assert by_offset[2][2]["__dlq.errors.delivery.count"] == b"3"
    series = scrape(broker.metrics_url or "")
    assert series[("zurau_share_group_records_total", (("event", "dead_lettered"), ("group", group)))] == 2
    assert series[("zurau_share_group_records_total", (("event", "rejected"), ("group", group)))] == 1
    assert series[("zurau_share_group_records_total", (("event", "archived"), ("group", group)))] == 1


def test_redelivery_delay_holds_released_records_back(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = _topic(bs)
    _group_config(bs, "g-delay", **{"share.redelivery.delay.ms": "2000"})
    (c,) = _join(bs, "g-delay", topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        _produce(bs, topic, 1)
        released_at = None
        again = None
        deadline = time.monotonic() + 30
        while again is None and time.monotonic() < deadline:
            for m in c.poll(0.2):
                if m.error() is not None:
                    continue
                if released_at is None:
                    c.acknowledge(m, AcknowledgeType.RELEASE)
                    c.commit_sync()
                    released_at = time.monotonic()
                else:
                    again = (time.monotonic() - released_at, m.delivery_count())
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync()
        assert again is not None
        waited, count = again
        assert count == 2 and waited >= 1.9, again  # not before the delay (a lower bound only)
    finally:
        c.close()
