"""A tiered partition moved to a new broker on a three-node in-process cluster (``file`` plugin,
one remote directory shared by every node, as an object store would be).

A topic created with RF 1 has its closed segments copied and deleted locally; reassigning it to
[its broker, another] makes the new replica start from the remote tier (the leader answers
OFFSET_MOVED_TO_TIERED_STORAGE; the follower rebuilds its state from the remote metadata, logs
"log restarts at ... from remote storage" and keeps log start 0 with a local log start above 0)
and join the ISR without copying the remote part. Reassigned to the new broker alone, that
broker leads and serves offset 0 byte-exact to confluent-kafka from the remote tier. Then a
dynamic ``remote.log.manager.fetch.max.bytes.per.second`` (KIP-956) on that broker makes a fetch
of a remote offset come back without records, counted as throttled.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.waiting import wait_for
from zurau.client.admin import AdminClient, AlterConfigOp, ConfigResource, NewTopic, ResourceType
from zurau.client.config import ClientConfig
from zurau.client.types import TopicPartition as ZTopicPartition
from zurau.embedded import EmbeddedCluster

pytestmark = pytest.mark.timeout(120)

N = 300
VALUE = 10_000  # 300 x 10 kB over 1 MiB segments (Kafka's smallest): two closed, one active
TOPIC = "moving-tier"


def _configs(tmp_path: Path) -> dict[str, str]:
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "file",
        "rsm.config.dir": str(tmp_path / "remote"),  # one remote store for every node
        "remote.log.manager.task.interval.ms": "200",
        "log.retention.check.interval.ms": "200",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "replica.lag.time.max.ms": "1500",
        "replica.fetch.wait.max.ms": "200",
        "replica.fetch.backoff.ms": "50",
        "broker.heartbeat.interval.ms": "500",
        "auto.leader.rebalance.enable": "false",
    }


def _admin(c: EmbeddedCluster) -> AdminClient:
    return AdminClient(ClientConfig.from_props({"bootstrap.servers": c.bootstrap_servers}))


def _on_loop(c: EmbeddedCluster, fn: Any) -> Any:
    """``fn()`` on the cluster's event loop (the brokers' state is the loop's)."""

    async def run() -> Any:
        return fn()

    return c.call(run)


def _partition(c: EmbeddedCluster, node: int) -> Any:
    return _on_loop(c, lambda: c.node(node).image.get(TOPIC).partitions[0])


def _replica(c: EmbeddedCluster, node: int) -> Any:
    """The node's replica (``replication.partition.Partition``) of the partition, or None."""
    return _on_loop(c, lambda: c.node(node).replica_manager.get(TOPIC, 0))


def _replica_log(c: EmbeddedCluster, node: int) -> Any:
    return _replica(c, node).log


def _everywhere(c: EmbeddedCluster, check: Any) -> bool:
    return all(check(_partition(c, n)) for n in (1, 2, 3))


def _produce(bs: str) -> list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]]:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "enable.idempotence": True})
    sent = []
    base = int(time.time() * 1000) - N
    for i in range(N):
        key, value = f"k{i}".encode(), f"v{i}-".encode() + bytes([i % 251]) * VALUE
        headers = [("h", str(i).encode())]
        p.produce(TOPIC, value, key, timestamp=base + i, headers=headers)
        sent.append((key, value, base + i, headers))
        if i % 50 == 49:
            p.flush(10)
    assert p.flush(10) == 0
    return sent


def _read_all(bs: str) -> list[Any]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "reader", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out: list[Any] = []
    deadline = time.monotonic() + 30
    while len(out) < N and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append(m)
    c.close()
    return out


def test_a_new_replica_of_a_tiered_partition_starts_from_remote_and_serves_offset_zero(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="zurau.replication")
    with EmbeddedCluster(3, data_dir=tmp_path / "cluster", **_configs(tmp_path)) as c:
        bs = c.bootstrap_servers
        topic_configs = {
            "remote.storage.enable": "true",
            "segment.bytes": "1048576",
            "local.retention.bytes": "1048576",
            "retention.ms": "-1",
        }

        async def create() -> None:
            async with _admin(c) as admin:
                assert (await admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs)]))[TOPIC] is None
            await c.wait_for_topic(TOPIC)

        c.call(create)
        (first,) = _partition(c, 1).replicas
        new = next(n for n in (1, 2, 3) if n != first)
        sent = _produce(bs)

        # Closed segments are copied, then deleted locally: the first broker's log starts above 0.
        wait_for(
            lambda: _replica_log(c, first).local_log_start_offset > 0, timeout=30, what="segments tiered"
        )
        leader_local_start = _replica_log(c, first).local_log_start_offset
        assert _replica_log(c, first).log_start_offset == 0

        async def reassign(replicas: list[int]) -> None:
            tp = ZTopicPartition(TOPIC, 0)
            async with _admin(c) as admin:
                assert await admin.alter_partition_reassignments({tp: replicas}) == {tp: None}

        # RF 1 -> 2: the new replica bootstraps from the remote tier and joins the ISR.
        c.call(reassign, [first, new])
        wait_for(
            lambda: _everywhere(
                c, lambda p: p.replicas == (first, new) and not p.reassigning and set(p.isr) == {first, new}
            ),
            timeout=30,
            what="the new replica in the ISR",
        )
        follower = _replica_log(c, new)
        assert follower.log_start_offset == 0
        assert follower.local_log_start_offset >= leader_local_start > 0  # nothing below came over
        assert follower.log_end_offset == N
        restarts = [r.getMessage() for r in caplog.records if "from remote storage" in r.getMessage()]
        assert any(f"{TOPIC}-0: log restarts at" in m for m in restarts), restarts

        # Leadership to the new replica alone: the first broker drops the partition.
        c.call(reassign, [new])
        wait_for(
            lambda: _everywhere(c, lambda p: p.replicas == (new,) and p.leader == new and not p.reassigning),
            timeout=30,
            what="the new broker leading alone",
        )
        wait_for(lambda: _replica(c, first) is None, timeout=30, what="the old replica removed")
        wait_for(lambda: _replica(c, new).leader_id == new, timeout=30, what="the new leader serving")

        got = _read_all(bs)
        assert [m.offset() for m in got] == list(range(N))
        assert [(m.key(), m.value(), m.timestamp()[1], m.headers()) for m in got] == sent
        stats = _on_loop(c, lambda: c.node(new).tiered.rlm.stats)
        assert stats.bytes_read > 0  # the part below the local start came from the remote tier

        # KIP-956: a dynamic remote fetch quota of 1 B/s on that broker (the read above is well
        # over it): a fetch of offset 0 gets no records (and no error), counted as throttled.
        async def limit_remote_fetches() -> None:
            resource = ConfigResource(ResourceType.BROKER, str(new))
            op = AlterConfigOp("remote.log.manager.fetch.max.bytes.per.second", value="1")
            async with _admin(c) as admin:
                assert (await admin.incremental_alter_configs({resource: [op]}))[resource] is None

        c.call(limit_remote_fetches)
        wait_for(
            lambda: (
                _on_loop(
                    c,
                    lambda: (
                        c.node(new).effective_config().get("remote.log.manager.fetch.max.bytes.per.second")
                    ),
                )
                == 1
            ),
            timeout=10,
            what="the dynamic quota applied",
        )
        # The quota's window (11 s) still holds the read above unless the machine was slow
        # enough for it to pass; then the first fetch is served and recorded, and the next one
        # from offset 0 must be throttled.
        for attempt in range(2):
            throttled = stats.fetch_throttles
            consumer = Consumer({"bootstrap.servers": bs, "group.id": f"throttled-{attempt}", "fetch.wait.max.ms": 100})
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            served = consumer.poll(2)
            consumer.close()
            if served is None:
                break
        assert served is None
        assert stats.fetch_throttles > throttled
