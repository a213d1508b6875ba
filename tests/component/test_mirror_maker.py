"""MirrorMaker 2 in dedicated mode (in this process) between two embedded brokers ``A`` and ``B``,
flow ``A->B``: a topic arrives as ``A.orders`` with its records and its non-default configs (not
the excluded ones), later config changes follow, its topic ACLs arrive as MM2 maps them; the
heartbeats of ``A->B`` are in ``B``'s ``heartbeats`` and those of ``B->A`` (a pair that runs only
for heartbeats) come back to ``B`` as ``A.heartbeats``, so ``MirrorClient`` on ``B`` sees ``A``
one hop upstream; and a consumer group that fails over from ``A`` to ``B`` resumes at its
translated offsets, reading every record once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.client.acl_admin import AclAdmin
from zurau.client.config import ClientConfig
from zurau.client.types import TopicPartition as Partition
from zurau.connect.mirror.client import MirrorClient
from zurau.connect.mirror.formats import Heartbeat
from zurau.connect.mirror.maker import EmbeddedMirrorMaker
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

SECURED = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": 0,
}
PER_PARTITION = 10


def topic_acl(
    name: str, principal: str, op: AclOperation, pattern: PatternType = PatternType.LITERAL
) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, principal, "*", op, AclPermissionType.ALLOW)


def configs_of(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(10)
    return {name: e.value for name, e in entries.items() if not e.is_default}


def mm2_props(a: str, b: str, **extra: str) -> dict[str, str]:
    return {
        "clusters": "A, B",
        "A.bootstrap.servers": a,
        "B.bootstrap.servers": b,
        "A->B.enabled": "true",
        "A->B.topics": "orders",
        "replication.factor": "1",
        "refresh.topics.interval.seconds": "1",
        "sync.topic.configs.interval.seconds": "1",
        "sync.topic.acls.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "A.offset.flush.interval.ms": "200",
        "B.offset.flush.interval.ms": "200",
        **extra,
    }


def test_flow_copies_topics_configs_acls_heartbeats_and_group_offsets() -> None:
    with EmbeddedBroker(**SECURED) as a, EmbeddedBroker(**SECURED) as b:
        a.create_topic("orders", 3, {"retention.ms": "3600000", "unclean.leader.election.enable": "true"})
        a.create_topic("ignored", 1)

        async def add_acls() -> None:
            async with AclAdmin(ClientConfig.from_props({"bootstrap.servers": a.bootstrap_servers})) as acls:
                assert (
                    await acls.create(
                        [
                            topic_acl("orders", "User:alice", AclOperation.READ),
                            topic_acl("orders", "User:bob", AclOperation.ALL),  # becomes READ
                            topic_acl("orders", "User:carol", AclOperation.WRITE),  # not copied
                            topic_acl(
                                "ord", "User:dave", AclOperation.READ, PatternType.PREFIXED
                            ),  # not copied
                            topic_acl("ignored", "User:erin", AclOperation.READ),  # topic not replicated
                        ]
                    )
                    == [None] * 5
                )

        asyncio.run(add_acls())
        producer = Producer({"bootstrap.servers": a.bootstrap_servers})
        for i in range(3 * PER_PARTITION):
            producer.produce("orders", key=b"k%d" % i, value=b"r%d" % i, partition=i % 3)
        producer.flush(10)
        every = {b"r%d" % i for i in range(3 * PER_PARTITION)}

        with EmbeddedMirrorMaker(mm2_props(a.bootstrap_servers, b.bootstrap_servers)):
            # Records and the non-default configs arrive; the excluded one does not.
            lister = AdminClient({"bootstrap.servers": b.bootstrap_servers})
            wait_for(lambda: "A.orders" in lister.list_topics(timeout=5).topics, what="A.orders on B")
            got = configs_of(b.bootstrap_servers, "A.orders")
            assert got.get("retention.ms") == "3600000" and "unclean.leader.election.enable" not in got

            # A config changed on the source follows within a sync interval.
            admin = AdminClient({"bootstrap.servers": a.bootstrap_servers})
            resource = ConfigResource(
                "topic",
                "orders",
                set_config={"retention.ms": "7200000", "unclean.leader.election.enable": "true"},
            )
            admin.alter_configs([resource])[resource].result(10)
            wait_for(
                lambda: configs_of(b.bootstrap_servers, "A.orders").get("retention.ms") == "7200000",
                what="retention.ms synced",
            )

            # ACLs as MM2 maps them.
            async def remote_acls() -> set[AclBinding]:
                async with AclAdmin(
                    ClientConfig.from_props({"bootstrap.servers": b.bootstrap_servers})
                ) as acls:
                    return set(await acls.describe(AclBindingFilter(resource_type=ResourceType.TOPIC)))

            wanted = {
                topic_acl("A.orders", "User:alice", AclOperation.READ),
                topic_acl("A.orders", "User:bob", AclOperation.READ),
            }
            assert wait_for(lambda: asyncio.run(remote_acls()) == wanted or None, what="ACLs synced")

            # A group reads 2/3 of the records on A and commits; the checkpoints carry its
            # offsets to B (committed there too, as nobody consumes there).
            on_a = Consumer(
                {
                    "bootstrap.servers": a.bootstrap_servers,
                    "group.id": "app",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            on_a.subscribe(["orders"])
            read_on_a: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(read_on_a) < 2 * PER_PARTITION:
                assert time.monotonic() < deadline, f"read {len(read_on_a)} on A"
                msg = on_a.poll(0.5)
                if msg is not None and not msg.error():
                    read_on_a.append(msg.value())
            committed = on_a.commit(asynchronous=False) or []
            committed_a = {tp.partition: tp.offset for tp in committed if tp.offset >= 0}
            on_a.close()

            def translated() -> Any:
                probe = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "app"})
                try:
                    tps = probe.committed([TopicPartition("A.orders", p) for p in range(3)], timeout=5)
                finally:
                    probe.close()
                got = {tp.partition: tp.offset for tp in tps if tp.offset >= 0}
                return got if got == committed_a else None

            wait_for(translated, what="group offsets translated to B")

            async def mirror_view() -> tuple[Any, ...]:
                async with MirrorClient(
                    ClientConfig.from_props({"bootstrap.servers": b.bootstrap_servers})
                ) as mm:
                    return (
                        await mm.heartbeat_topics(),
                        await mm.upstream_clusters(),
                        await mm.replication_hops("A"),
                        await mm.remote_consumer_offsets("app", "A"),
                        await mm.heartbeats(),
                        await mm.heartbeats("A.heartbeats"),
                        await mm.remote_topics(),
                    )

            expected_offsets = {Partition("A.orders", p): o for p, o in committed_a.items()}

            def complete(v: tuple[Any, ...]) -> Any:
                return v if v[4] and v[5] and v[3] == expected_offsets else None

            view = wait_for(
                lambda: complete(asyncio.run(mirror_view())), what="heartbeats and checkpoints on B"
            )
            topics, upstream, hops, _, beats, replicated_beats, remote_topics = view
            assert topics == {"heartbeats", "A.heartbeats"} and upstream == {"A"} and hops == 1
            assert {Heartbeat(h.source_cluster_alias, h.target_cluster_alias, 0) for h in beats} == {
                Heartbeat("A", "B", 0)
            }
            assert {(h.source_cluster_alias, h.target_cluster_alias) for h in replicated_beats} == {
                ("B", "A")
            }
            assert remote_topics == {"A.orders", "A.heartbeats"}  # not A.ignored

            # The group fails over to B: it resumes at the translated offsets and reads the rest,
            # nothing twice, nothing lost.
            on_b = Consumer(
                {
                    "bootstrap.servers": b.bootstrap_servers,
                    "group.id": "app",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            on_b.subscribe(["A.orders"])
            read_on_b: list[bytes] = []
            deadline = time.monotonic() + 30
            quiet_until = None
            while quiet_until is None or time.monotonic() < quiet_until:
                assert time.monotonic() < deadline, f"read {len(read_on_b)} on B"
                msg = on_b.poll(0.2)
                if msg is not None and not msg.error():
                    read_on_b.append(msg.value())
                if quiet_until is None and len(read_on_a) + len(read_on_b) >= len(every):
                    quiet_until = time.monotonic() + 1.0
            on_b.close()
            assert not set(read_on_a) & set(read_on_b)
            assert sorted(read_on_a + read_on_b) == sorted(every)
