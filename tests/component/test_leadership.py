"""Leadership on a three-node KRaft cluster (EmbeddedCluster): preferred leader election
(ElectLeaders) after a leader restart, the automatic leader rebalance, partition reassignment
(RF 1 -> 3 -> 2 with the data intact, cancel) and controlled shutdown that moves leadership and
ISR membership away before the broker stops."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.component.test_replication import _connect, _partition, _running, _wait
from zurau.client.admin import AdminClient, ElectionType, NewTopic
from zurau.client.config import ClientConfig
from zurau.client.types import TopicPartition
from zurau.embedded import EmbeddedCluster
from zurau.metadata.image import PartitionRegistration
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ElectionNotNeededError,
    NoReassignmentInProgressError,
    NotEnoughReplicasError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.record import decode_batch_records

pytestmark = pytest.mark.timeout(180)

FAST = {
    "replica.lag.time.max.ms": "1500",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "50",
    "broker.heartbeat.interval.ms": "500",
    "auto.leader.rebalance.enable": "false",
}


def _admin(c: EmbeddedCluster) -> AdminClient:
    return AdminClient(ClientConfig.from_props({"bootstrap.servers": c.bootstrap_servers}))


def _everywhere(c: EmbeddedCluster, topic: str, check: Any) -> bool:
    return all(check(_partition(c, n, topic)) for n in _running(c))


async def _create(c: EmbeddedCluster, name: str, rf: int, **configs: str) -> PartitionRegistration:
    async with _admin(c) as admin:
        assert (await admin.create_topics([NewTopic(name, 1, rf, configs)]))[name] is None
    await c.wait_for_topic(name)
    await _wait(lambda: _everywhere(c, name, lambda p: len(p.isr) == rf), what="a full ISR")
    return _partition(c, _running(c)[0], name)


async def _produce(c: EmbeddedCluster, node: int, topic: str, values: list[bytes], acks: int = -1) -> dict[str, Any]:
    conn = await _connect(c, node)
    try:
        batch = build_batch([(None, v, [], 1_700_000_000_000 + i) for i, v in enumerate(values)])
        body = {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        resp = await conn.request(ApiKey.PRODUCE, body, max_version=12)
    finally:
        await conn.close()
    part: dict[str, Any] = resp["responses"][0]["partition_responses"][0]
    return part


async def _consume(c: EmbeddedCluster, node: int, topic: str) -> list[bytes]:
    conn = await _connect(c, node)
    out: list[bytes] = []
    offset = 0
    try:
        while True:
            body = {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}],
            }
            resp = await conn.request(ApiKey.FETCH, body, max_version=12)
            part = resp["responses"][0]["partitions"][0]
            assert part["error_code"] == 0, part
            data = bytes(part["records"] or b"")
            if not data:
                return out
            for pos, h in iter_batches(data):
                out += [bytes(r.value or b"") for r in decode_batch_records(memoryview(data)[pos : pos + h.size])]
                offset = h.last_offset + 1
    finally:
        await conn.close()


async def test_preferred_leader_election_after_the_leader_restarts(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **FAST) as c:
        p = await _create(c, "pref", 3)
        preferred = p.replicas[0]
        assert p.leader == preferred
        await c.stop_node(preferred)
        await _wait(lambda: _everywhere(c, "pref", lambda q: q.leader not in (preferred, -1)), what="a new leader")
        await c.start_node(preferred)
        await _wait(lambda: _everywhere(c, "pref", lambda q: preferred in q.isr), what="the restarted broker in the ISR")
        assert _partition(c, preferred, "pref").leader != preferred, "no automatic move back (rebalance is off)"
        tp = TopicPartition("pref", 0)
        async with _admin(c) as admin:
            assert await admin.elect_leaders(ElectionType.PREFERRED, [tp]) == {tp: None}
            await _wait(lambda: _everywhere(c, "pref", lambda q: q.leader == preferred), what="the preferred leader")
            again = await admin.elect_leaders(ElectionType.PREFERRED, [tp])
            assert isinstance(again[tp], ElectionNotNeededError)
            assert await admin.elect_leaders(ElectionType.PREFERRED, None) == {}, "all partitions: nothing needed"
            missing = await admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("nope", 0)])
            assert isinstance(missing[TopicPartition("nope", 0)], UnknownTopicOrPartitionError)
            unclean = await admin.elect_leaders(ElectionType.UNCLEAN, [tp])
            assert isinstance(unclean[tp], ElectionNotNeededError)
        part = await _produce(c, preferred, "pref", [b"x"])
        assert part["error_code"] == 0


async def test_auto_leader_rebalance_moves_leadership_back(tmp_path: Any) -> None:
    props = {**FAST, "auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"}
    async with EmbeddedCluster(3, data_dir=tmp_path, **props) as c:
        p = await _create(c, "auto", 3)
        preferred = p.replicas[0]
        await c.stop_node(preferred)
        await _wait(lambda: _everywhere(c, "auto", lambda q: q.leader not in (preferred, -1)), what="a new leader")
        await c.start_node(preferred)
        await _wait(lambda: _everywhere(c, "auto", lambda q: q.leader == preferred), what="the preferred leader again")


async def test_reassignment_grows_and_shrinks_the_replicas_with_the_data_intact(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **FAST) as c:
        p = await _create(c, "moving", 1)
        (first,) = p.replicas
        values = [b"v%d" % i for i in range(50)]
        for i in range(0, 50, 10):
            assert (await _produce(c, first, "moving", values[i : i + 10]))["error_code"] == 0
        others = [n for n in (1, 2, 3) if n != first]
        tp = TopicPartition("moving", 0)
        async with _admin(c) as admin:
            # RF 1 -> 3: the new replicas copy the log, join the ISR, then the reassignment completes.
            assert await admin.alter_partition_reassignments({tp: [first, *others]}) == {tp: None}
            await _wait(
                lambda: _everywhere(c, "moving", lambda q: q.replicas == (first, *others) and not q.reassigning
                                    and sorted(q.isr) == [1, 2, 3]),
                what="RF 3",
            )
            assert await admin.list_partition_reassignments() == {}
            for n in (1, 2, 3):
                plog = c.node(n).replica_manager.get("moving", 0)
                assert plog is not None and plog.log_end_offset == 50
            # RF 3 -> 2 without the leader: it completes at once, leadership moves, and the removed
            # broker stops hosting the partition.
            assert await admin.alter_partition_reassignments({tp: others}) == {tp: None}
            await _wait(
                lambda: _everywhere(c, "moving", lambda q: q.replicas == tuple(others) and q.leader == others[0]),
                what="RF 2",
            )
        await _wait(lambda: c.node(first).replica_manager.get("moving", 0) is None, what="the removed replica gone")
        assert not (c.configs[first - 1].log_dirs[0] / "moving-0").exists()
        await _wait(lambda: c.node(others[0]).replica_manager.get("moving", 0).leader_id == others[0])  # type: ignore[union-attr]
        assert (await _produce(c, others[0], "moving", [b"after"]))["error_code"] == 0
        assert await _consume(c, others[0], "moving") == values + [b"after"]


async def test_a_reassignment_that_cannot_finish_is_listed_and_cancelled(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **FAST) as c:
        p = await _create(c, "stuck", 1)
        (first,) = p.replicas
        down = next(n for n in (1, 2, 3) if n != first)
        await c.stop_node(down)  # registered but fenced: it can never catch up
        tp = TopicPartition("stuck", 0)
        async with _admin(c) as admin:
            assert await admin.alter_partition_reassignments({tp: [first, down]}) == {tp: None}
            listed = await admin.list_partition_reassignments()
            assert list(listed) == [tp]
            assert listed[tp].replicas == (first, down) and listed[tp].adding_replicas == (down,)
            assert listed[tp].target_replicas == (first, down) and listed[tp].removing_replicas == ()
            assert await admin.list_partition_reassignments([TopicPartition("stuck", 3)]) == {}
            assert await admin.alter_partition_reassignments({tp: None}) == {tp: None}
            await _wait(lambda: _everywhere(c, "stuck", lambda q: q.replicas == (first,) and not q.reassigning))
            assert await admin.list_partition_reassignments() == {}
            again = await admin.alter_partition_reassignments({tp: None})
            assert isinstance(again[tp], NoReassignmentInProgressError)
        assert (await _produce(c, first, "stuck", [b"ok"]))["error_code"] == 0


async def test_controlled_shutdown_moves_leadership_and_isr_before_the_broker_stops(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **FAST) as c:
        p = await _create(c, "cs", 3, **{"min.insync.replicas": "3"})
        leader = p.leader
        assert (await _produce(c, leader, "cs", [b"a"]))["error_code"] == 0
        # The controller confirms only once the other brokers know the new leader and ISR.
        assert await c.node(leader).controlled_shutdown()
        survivors = [n for n in (1, 2, 3) if n != leader]
        for n in survivors:
            q = _partition(c, n, "cs")
            assert q.leader in survivors and leader not in q.isr, (n, q)
        await c.stop_node(leader)
        new_leader = _partition(c, survivors[0], "cs").leader
        await _wait(lambda: c.node(new_leader).replica_manager.get("cs", 0).leader_id == new_leader)  # type: ignore[union-attr]
        # Two replicas left and min.insync.replicas=3: refused at once, not a timeout.
        started = time.monotonic()
        part = await _produce(c, new_leader, "cs", [b"b"])
        assert part["error_code"] == NotEnoughReplicasError.code
        assert time.monotonic() - started < 5
        assert (await _produce(c, new_leader, "cs", [b"c"], acks=1))["error_code"] == 0
