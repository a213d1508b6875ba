"""Real clients against a KRaft cluster of real processes (:class:`ClusterProcesses`), each on the
protocol versions it negotiates by default: confluent-kafka (librdkafka), kafka-python, aiokafka
and Debian's kcat.

Most tests share one module-scoped cluster of three combined (broker + controller) nodes, ids 1-3;
one test runs the other shape, three dedicated controllers (1-3) and three brokers (4-6).

* Metadata names every broker (id and client address) and a controller: in combined mode the
  active controller, which is also DescribeQuorum's leader; with dedicated controllers a live
  broker (as Kafka does, since clients cannot reach the controllers).
* CreateTopics, (Incremental)AlterConfigs and DeleteTopics through each broker in turn, the
  client bootstrapped with that broker's address alone; every broker's view converges after each.
  The clients address CreateTopics and DeleteTopics to the controller Metadata names, which in
  combined mode is the active controller itself, and the config requests to any broker; so
  kafka-python and aiokafka send every request to the bootstrap broker (their node choice is
  pinned to it), and a node which is *not* the active controller must forward. librdkafka cannot
  be pinned: it forwards in the dedicated-controller test, where every admin request reaches a
  broker first.
* Produce and consume a six-partition topic whose leaders are striped over the three brokers.
* Consumer groups commit and resume (the coordinator is the leader of the group's
  ``__consumer_offsets`` partition); idempotent producers get producer ids through each broker.
* ``zurau metadata-quorum describe --status | --replication`` against each broker.

Convergence is checked node by node with a tiny probe (one request on one socket to one node,
framed by Zurau's own codec), because the clients themselves pick whichever broker they like.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.frame import decode_response, encode_request
from zurau.testing.cluster_process import ClusterProcesses

# Debian's kcat is installed by `make test`; without it the kcat cases fail (they never skip).
KCAT = shutil.which("kcat") or shutil.which("kafkacat")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 6
PER_PARTITION = 200
CONVERGE_S = 20.0
# Short first joins for the group tests (Kafka's default initial delay is 3 s per empty group).
BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "300"}
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC = 2  # resource type of DescribeConfigs
CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka", "kcat"]
ADMIN_CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka"]


# --------------------------------------------------------------------------------------------
# Waiting, and probing one node at a time
# --------------------------------------------------------------------------------------------


def wait_until(
    cond: Callable[[], bool], what: str, timeout: float = CONVERGE_S, diag: Callable[[], object] = lambda: ""
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if cond():
                return
        except OSError:
            pass  # a node not answering yet: keep polling until the deadline
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; {diag()}")
        time.sleep(0.05)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def probe(
    address: str, key: ApiKey, version: int, body: dict[str, Any], timeout: float = 5.0
) -> dict[str, Any]:
    """One request to the node at ``address`` (host:port) on a fresh connection; its decoded response."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(encode_request(key, version, 7, "kraft-compat-probe", body))
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        correlation_id, resp = decode_response(key, version, _recv_exactly(sock, size))
    assert correlation_id == 7
    return resp


def node_metadata(addr: str) -> dict[str, Any]:
    """This node's Metadata (v12, all topics): brokers, controller_id, topics by name."""
    resp = probe(
        addr,
        ApiKey.METADATA,
        12,
        {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
    )
    resp["topics"] = {t["name"]: t for t in resp["topics"]}
    return resp


def leaders(md: dict[str, Any], topic: str) -> dict[int, int] | None:
    """Partition -> leader in one node's Metadata, or None unless the topic is there and led."""
    t = md["topics"].get(topic)
    if t is None or t["error_code"] != 0:
        return None
    got = {p["partition_index"]: p["leader_id"] for p in t["partitions"]}
    return got if all(v >= 0 for v in got.values()) else None


def node_topic_config(addr: str, topic: str, name: str) -> str | None:
    resp = probe(
        addr,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [{"resource_type": TOPIC, "resource_name": topic, "configuration_keys": [name]}],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    result = resp["results"][0]
    assert result["error_code"] == 0, result
    return next(c["value"] for c in result["configs"] if c["name"] == name)


def quorum(addr: str) -> dict[str, Any]:
    """DescribeQuorum's partition (``__cluster_metadata``-0) as this node answers it."""
    resp = probe(
        addr,
        ApiKey.DESCRIBE_QUORUM,
        2,
        {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
    )
    assert resp["error_code"] == 0, resp
    part = resp["topics"][0]["partitions"][0]
    assert part["error_code"] == 0, part
    return part


def expected_brokers(c: ClusterProcesses) -> dict[int, str]:
    return {i: c.nodes[i].bootstrap_servers for i in c.broker_ids}


def addr(c: ClusterProcesses, node_id: int) -> str:
    return c.nodes[node_id].bootstrap_servers


def wait_converged(c: ClusterProcesses, cond: Callable[[dict[str, Any]], bool], what: str) -> None:
    """Every broker's own Metadata satisfies ``cond``."""
    views: dict[int, Any] = {}

    def check() -> bool:
        for i in c.broker_ids:
            views[i] = node_metadata(addr(c, i))
        return all(cond(v) for v in views.values())

    wait_until(
        check,
        f"every broker's metadata: {what}",
        diag=lambda: {i: {n: leaders(v, n) for n in v["topics"]} for i, v in views.items()},
    )


def wait_cluster_ready(c: ClusterProcesses) -> None:
    """Every broker lists every broker and names a controller."""
    want = sorted(c.broker_ids)
    wait_converged(
        c,
        lambda md: sorted(b["node_id"] for b in md["brokers"]) == want and md["controller_id"] != -1,
        f"brokers {want} and a controller",
    )


def start_cluster(root: Path, **shape: int) -> ClusterProcesses:
    c = ClusterProcesses(root, **shape, **BROKER_CONFIGS)
    c.start()
    try:
        wait_cluster_ready(c)
    except BaseException:
        c.stop()
        raise
    return c


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    """Three combined broker + controller nodes, ids 1-3."""
    c = start_cluster(tmp_path_factory.mktemp("kraft-combined"), controllers=3)
    try:
        yield c
    finally:
        c.stop()


def fresh_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(c: ClusterProcesses, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    """Create through confluent-kafka; wait until every broker knows every partition's leader."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    wait_converged(
        c,
        lambda md: leaders(md, topic) is not None and len(leaders(md, topic) or {}) == partitions,
        f"{topic} with {partitions} led partitions",
    )
    led = leaders(node_metadata(c.bootstrap_servers.split(",")[0]), topic)
    assert led is not None
    return led


def java_hash_abs(s: str) -> int:
    """Kafka's ``Utils.abs(s.hashCode())`` (UTF-16 code units; abs(MIN_VALUE) is 0)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return 0 if h == -(1 << 31) else abs(h)


# --------------------------------------------------------------------------------------------
# Per client: metadata (brokers and controller) from one bootstrap broker
# --------------------------------------------------------------------------------------------


# Each returns (what, brokers by id as host:port, controller id) for every view the client gives.
View = tuple[str, dict[int, str], int]
QUORUM_LEADER = "DescribeQuorum leader"


def metadata_confluent(bootstrap: str) -> list[View]:
    """Metadata (list_topics) and DescribeCluster (describe_cluster)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=15)
    dc = admin.describe_cluster(request_timeout=15).result(15)
    return [
        ("Metadata", {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}, md.controller_id),
        ("DescribeCluster", {n.id: f"{n.host}:{n.port}" for n in dc.nodes}, dc.controller.id),
    ]


def metadata_kafka_python(bootstrap: str) -> list[View]:
    """DescribeCluster (describe_cluster) and DescribeQuorum (describe_metadata_quorum)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        dc = admin.describe_cluster()
        q = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
    finally:
        admin.close()
    assert q["error"] is None, q
    assert sorted(v["replica_id"] for v in q["current_voters"]) == [1, 2, 3], q
    brokers = {b["broker_id"]: f"{b['host']}:{b['port']}" for b in dc["brokers"]}
    return [("DescribeCluster", brokers, dc["controller_id"]), (QUORUM_LEADER, brokers, q["leader_id"])]


def metadata_aiokafka(bootstrap: str) -> list[View]:
    """Metadata (describe_cluster)."""

    async def go() -> dict[str, Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await admin.describe_cluster()
        finally:
            await admin.close()

    dc = asyncio.run(go())
    return [
        ("Metadata", {b["node_id"]: f"{b['host']}:{b['port']}" for b in dc["brokers"]}, dc["controller_id"])
    ]


def kcat(bootstrap: str, *args: str, stdin: bytes | None = None, timeout: float = 60) -> bytes:
    assert KCAT is not None, "kcat is not installed (make test installs Debian's kcat)"
    proc = subprocess.run(
        [KCAT, "-b", bootstrap, *args], input=stdin, capture_output=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, (
        f"kcat {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}"
    )
    return proc.stdout


def metadata_kcat(bootstrap: str) -> list[View]:
    """Metadata (kcat -L -J)."""
    md = json.loads(kcat(bootstrap, "-L", "-J"))
    return [("Metadata", {b["id"]: b["name"] for b in md["brokers"]}, md["controllerid"])]


METADATA = {
    "confluent-kafka": metadata_confluent,
    "kafka-python": metadata_kafka_python,
    "aiokafka": metadata_aiokafka,
    "kcat": metadata_kcat,
}


def check_metadata(c: ClusterProcesses, client: str, expect_controller: Callable[[int], None]) -> None:
    """Through each broker alone: all brokers at their client addresses, and the controller."""
    want = expected_brokers(c)
    leader = quorum(addr(c, c.broker_ids[0]))["leader_id"]
    for node_id in c.broker_ids:
        for what, brokers, controller in METADATA[client](addr(c, node_id)):
            where = f"{client} {what} through broker {node_id}"
            assert brokers == want, f"{where}: {brokers} != {want}"
            if what == QUORUM_LEADER:
                assert controller == leader, f"{where}: {controller}, probe says {leader}"
            else:
                expect_controller(controller)


@pytest.mark.parametrize("client", CLIENTS)
def test_metadata_lists_brokers_and_active_controller(cluster: ClusterProcesses, client: str) -> None:
    # The active controller, as every node's DescribeQuorum answers it.
    leaders_seen = {quorum(addr(cluster, i))["leader_id"] for i in cluster.broker_ids}
    assert len(leaders_seen) == 1, leaders_seen
    active = leaders_seen.pop()
    assert active in cluster.controller_ids

    def expect(controller: int) -> None:
        assert controller == active, f"{client}: controller {controller}, DescribeQuorum leader {active}"

    check_metadata(cluster, client, expect)


# --------------------------------------------------------------------------------------------
# Per client: create, alter and delete a topic through one broker
# --------------------------------------------------------------------------------------------

RETENTION = "retention.ms"


class AdminOps:
    """create / alter (one topic config) / read back / delete, through one bootstrap broker."""

    def create(self, topic: str, partitions: int) -> None: ...
    def alter(self, topic: str, name: str, value: str) -> None: ...
    def read(self, topic: str, name: str) -> str | None: ...
    def delete(self, topic: str) -> None: ...
    def close(self) -> None: ...


class ConfluentAdmin(AdminOps):
    def __init__(self, bootstrap: str, node_id: int) -> None:
        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def create(self, topic: str, partitions: int) -> None:
        self.admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=20)[topic].result(30)

    def alter(self, topic: str, name: str, value: str) -> None:
        res = ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
        )
        for fut in self.admin.incremental_alter_configs([res], request_timeout=20).values():
            fut.result(30)

    def read(self, topic: str, name: str) -> str | None:
        (fut,) = self.admin.describe_configs(
            [ConfigResource(ResourceType.TOPIC, topic)], request_timeout=20
        ).values()
        return fut.result(30)[name].value

    def delete(self, topic: str) -> None:
        self.admin.delete_topics([topic], request_timeout=20)[topic].result(30)

    def close(self) -> None:
        del self.admin


class KafkaPythonAdmin(AdminOps):
    def __init__(self, bootstrap: str, node_id: int) -> None:
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        # Every request to the bootstrap broker: the ones for "the controller" (CreateTopics,
        # DeleteTopics) and the ones for any broker (DescribeConfigs, IncrementalAlterConfigs).
        manager = self.admin._manager
        send = manager.send

        pinned_id = node_id

        async def pinned(request: Any, node_id: int | None = None, **kw: Any) -> Any:
            return await send(request, node_id=pinned_id, **kw)

        manager.send = pinned

    def create(self, topic: str, partitions: int) -> None:
        self.admin.create_topics(
            {topic: {"num_partitions": partitions, "replication_factor": 1}}, timeout_ms=20000
        )

    def alter(self, topic: str, name: str, value: str) -> None:
        result = self.admin.alter_configs(
            [KpConfigResource(KpConfigResourceType.TOPIC, topic, configs={name: value})]
        )
        assert result == {"topic": {topic: "OK"}}, result

    def read(self, topic: str, name: str) -> str | None:
        result = self.admin.describe_configs(
            [KpConfigResource(KpConfigResourceType.TOPIC, topic, configs=[name])]
        )
        return result["topic"][topic][name]["value"]

    def delete(self, topic: str) -> None:
        self.admin.delete_topics([topic], timeout_ms=20000)

    def close(self) -> None:
        self.admin.close()


class AiokafkaAdmin(AdminOps):
    def __init__(self, bootstrap: str, node_id: int) -> None:
        self.loop = asyncio.new_event_loop()

        async def start() -> AIOKafkaAdminClient:  # aiokafka binds to the running loop
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            return admin

        self.admin = admin = self.run(start())

        # Every request to the bootstrap broker: the ones for "the controller" (CreateTopics,
        # DeleteTopics) and the ones for a random broker (AlterConfigs, DescribeConfigs).
        async def pinned(request: Any) -> Any:
            return await admin._send_request_to_node(node_id, request)

        admin._send_to_controller = pinned
        admin._client.get_random_node = lambda: node_id

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def create(self, topic: str, partitions: int) -> None:
        resp = self.run(self.admin.create_topics([AioNewTopic(topic, partitions, 1)], timeout_ms=20000))
        errors = [t[1] for t in resp.topic_errors]
        assert errors == [0], resp

    def alter(self, topic: str, name: str, value: str) -> None:
        for resp in self.run(
            self.admin.alter_configs([AioConfigResource(AioConfigResourceType.TOPIC, topic, {name: value})])
        ):
            assert all(r[0] == 0 for r in resp.resources), resp

    def read(self, topic: str, name: str) -> str | None:
        for resp in self.run(
            self.admin.describe_configs([AioConfigResource(AioConfigResourceType.TOPIC, topic, None)])
        ):
            for res in resp.resources:
                for entry in res[4]:
                    if entry[0] == name:
                        return entry[1]
        return None

    def delete(self, topic: str) -> None:
        resp = self.run(self.admin.delete_topics([topic], timeout_ms=20000))
        assert [t[1] for t in resp.topic_error_codes] == [0], resp

    def close(self) -> None:
        self.run(self.admin.close())
        self.loop.close()


ADMINS: dict[str, type[AdminOps]] = {
    "confluent-kafka": ConfluentAdmin,
    "kafka-python": KafkaPythonAdmin,
    "aiokafka": AiokafkaAdmin,
}


def admin_cycle_through(c: ClusterProcesses, client: str, node_id: int, partitions: int = 3) -> None:
    topic = fresh_topic(f"adm-{client}-{node_id}")
    ops = ADMINS[client](addr(c, node_id), node_id)
    try:
        ops.create(topic, partitions)
        wait_converged(
            c, lambda md: len(leaders(md, topic) or {}) == partitions, f"{topic} created through {node_id}"
        )

        value = str(3_600_000 + node_id)
        ops.alter(topic, RETENTION, value)
        wait_until(
            lambda: all(node_topic_config(addr(c, i), topic, RETENTION) == value for i in c.broker_ids),
            f"{RETENTION}={value} of {topic} on every broker",
            diag=lambda: {i: node_topic_config(addr(c, i), topic, RETENTION) for i in c.broker_ids},
        )
        assert ops.read(topic, RETENTION) == value, (
            f"{client} reads back {RETENTION} through broker {node_id}"
        )

        ops.delete(topic)
        wait_converged(c, lambda md: topic not in md["topics"], f"{topic} deleted through {node_id}")
        for i in c.broker_ids:
            resp = probe(
                addr(c, i),
                ApiKey.METADATA,
                12,
                {
                    "topics": [{"topic_id": None, "name": topic}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            assert resp["topics"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION, (i, resp["topics"])
    finally:
        ops.close()


@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_create_alter_delete_topics_through_each_broker(cluster: ClusterProcesses, client: str) -> None:
    for node_id in cluster.broker_ids:
        admin_cycle_through(cluster, client, node_id)


# --------------------------------------------------------------------------------------------
# Per client: produce to and consume from six partitions led by three brokers
# --------------------------------------------------------------------------------------------


def records_for(
    tag: str, partitions: int = PARTITIONS, per_partition: int = PER_PARTITION
) -> dict[int, list[tuple[bytes, bytes]]]:
    return {
        p: [(f"k{p}-{i}".encode(), f"v{p}-{i}-{tag}".encode()) for i in range(per_partition)]
        for p in range(partitions)
    }


def produce_confluent(
    bootstrap: str, topic: str, recs: dict[int, list[tuple[bytes, bytes]]], **conf: Any
) -> None:
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    for part, items in recs.items():
        for k, v in items:
            p.produce(
                topic,
                value=v,
                key=k,
                partition=part,
                on_delivery=lambda err, _msg: errors.append(err) if err is not None else None,
            )
            p.poll(0)
    assert p.flush(30) == 0, "records left undelivered"
    assert not errors, errors[:3]


def consume_confluent(
    bootstrap: str, topic: str, counts: dict[int, int]
) -> dict[int, list[tuple[bytes, bytes]]]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": fresh_topic("assign"),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in counts])
        got: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in counts}
        deadline = time.monotonic() + 30
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    continue
                got[m.partition()].append((m.key(), m.value()))
        return got
    finally:
        c.close()


def produce_kafka_python(bootstrap: str, topic: str, recs: dict[int, list[tuple[bytes, bytes]]]) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap)  # idempotent by default
    try:
        futures = [
            p.send(topic, value=v, key=k, partition=part) for part, items in recs.items() for k, v in items
        ]
        p.flush(30)
        for f in futures:
            f.get(10)
    finally:
        p.close()


def consume_kafka_python(
    bootstrap: str, topic: str, counts: dict[int, int]
) -> dict[int, list[tuple[bytes, bytes]]]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        tps = [KpTopicPartition(topic, p) for p in counts]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in counts}
        deadline = time.monotonic() + 30
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=500, max_records=5000).items():
                got[tp.partition].extend((m.key, m.value) for m in msgs)
        return got
    finally:
        c.close()


def produce_aiokafka(bootstrap: str, topic: str, recs: dict[int, list[tuple[bytes, bytes]]]) -> None:
    async def go() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await p.start()
        try:
            futures = [
                await p.send(topic, value=v, key=k, partition=part)
                for part, items in recs.items()
                for k, v in items
            ]
            await p.flush()
            await asyncio.gather(*futures)
        finally:
            await p.stop()

    asyncio.run(go())


def consume_aiokafka(
    bootstrap: str, topic: str, counts: dict[int, int]
) -> dict[int, list[tuple[bytes, bytes]]]:
    async def go() -> dict[int, list[tuple[bytes, bytes]]]:
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await c.start()
        try:
            tps = [AioTopicPartition(topic, p) for p in counts]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            got: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in counts}
            deadline = time.monotonic() + 30
            while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
                for tp, msgs in (await c.getmany(timeout_ms=500, max_records=5000)).items():
                    got[tp.partition].extend((m.key, m.value) for m in msgs)
            return got
        finally:
            await c.stop()

    return asyncio.run(go())


def produce_kcat(bootstrap: str, topic: str, recs: dict[int, list[tuple[bytes, bytes]]]) -> None:
    for part, items in recs.items():
        lines = b"".join(k + b"\t" + v + b"\n" for k, v in items)
        kcat(bootstrap, "-P", "-t", topic, "-p", str(part), "-K", "\t", stdin=lines)


def consume_kcat(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list[tuple[bytes, bytes]]]:
    out = kcat(bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p\t%k\t%s\n")
    got: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in counts}
    for line in out.split(b"\n")[:-1]:
        part, k, v = line.split(b"\t")
        got[int(part)].append((k, v))
    return got


PRODUCE = {
    "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
    "kcat": produce_kcat,
}
CONSUME = {
    "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python,
    "aiokafka": consume_aiokafka,
    "kcat": consume_kcat,
}


def check_striped(c: ClusterProcesses, led: dict[int, int]) -> None:
    """Six partitions over three brokers: each broker leads two (leaders are different brokers)."""
    assert sorted(led) == list(range(PARTITIONS)), led
    per_broker = Counter(led.values())
    assert set(per_broker) == set(c.broker_ids), f"leaders {led} do not cover brokers {c.broker_ids}"
    assert set(per_broker.values()) == {PARTITIONS // len(c.broker_ids)}, f"uneven leaders {led}"


def produce_consume(c: ClusterProcesses, client: str) -> None:
    topic = fresh_topic(f"pc-{client}")
    led = create_topic(c, topic)
    check_striped(c, led)
    recs = records_for(client)
    PRODUCE[client](c.bootstrap_servers, topic, recs)
    got = CONSUME[client](c.bootstrap_servers, topic, {p: len(v) for p, v in recs.items()})
    counts = {p: len(v) for p, v in got.items()}
    assert counts == {p: PER_PARTITION for p in range(PARTITIONS)}, f"{client}: per-partition counts {counts}"
    for p in recs:
        assert got[p] == recs[p], f"{client}: partition {p} (leader {led[p]}) differs"


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_consume_six_partitions_over_three_leaders(cluster: ClusterProcesses, client: str) -> None:
    produce_consume(cluster, client)


# --------------------------------------------------------------------------------------------
# Consumer groups: commit, leave, resume from the committed offsets
# --------------------------------------------------------------------------------------------


class GroupRound:
    """What one member read before it committed and left: records and first offset per partition,
    and the offsets the group then had committed."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.first: dict[int, int] = {}
        self.committed: dict[int, int | None] = {}

    def saw(self, partition: int, offset: int, n: int = 1) -> None:
        self.counts[partition] += n
        self.first.setdefault(partition, offset)


def group_round_confluent(bootstrap: str, topic: str, group: str, want: int) -> GroupRound:
    """Subscribe, read ``want`` records, commit synchronously, leave."""
    r = GroupRound()
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 40
        while r.counts.total() < want and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    r.saw(m.partition(), m.offset())
        c.commit(asynchronous=False)
        tps = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 15)
        r.committed = {tp.partition: tp.offset for tp in tps}
        return r
    finally:
        c.close()


def group_round_kafka_python(bootstrap: str, topic: str, group: str, want: int) -> GroupRound:
    r = GroupRound()
    c = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 40
        while r.counts.total() < want and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=500).items():
                if msgs:
                    r.saw(tp.partition, msgs[0].offset, len(msgs))
        c.commit()
        r.committed = {p: c.committed(KpTopicPartition(topic, p)) for p in range(PARTITIONS)}
        return r
    finally:
        c.close()


GROUP_ROUNDS = {"confluent-kafka": group_round_confluent, "kafka-python": group_round_kafka_python}


@pytest.mark.parametrize("client", list(GROUP_ROUNDS))
def test_consumer_group_commits_and_resumes(cluster: ClusterProcesses, client: str) -> None:
    half = 50
    every = dict.fromkeys(range(PARTITIONS), half)
    topic = fresh_topic(f"grp-{client}")
    create_topic(cluster, topic)
    group = fresh_topic(f"g-{client}")
    round_ = GROUP_ROUNDS[client]
    produce_confluent(cluster.bootstrap_servers, topic, records_for("a", per_partition=half))

    r = round_(cluster.bootstrap_servers, topic, group, PARTITIONS * half)
    assert dict(r.counts) == every, f"first member read {dict(r.counts)}"
    assert r.first == dict.fromkeys(range(PARTITIONS), 0), r.first
    assert r.committed == every, r.committed

    # The group's coordinator: the same on every broker, and the leader of its partition of
    # __consumer_offsets (Utils.abs(groupId.hashCode) % partitions, as in Kafka).
    coords = set()
    for i in cluster.broker_ids:
        resp = probe(
            addr(cluster, i), ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]}
        )
        (co,) = resp["coordinators"]
        assert co["error_code"] == 0, co
        coords.add((co["node_id"], f"{co['host']}:{co['port']}"))
    assert len(coords) == 1, coords
    ((coordinator, coordinator_addr),) = coords
    assert coordinator_addr == addr(cluster, coordinator)
    offsets_leaders = leaders(node_metadata(addr(cluster, cluster.broker_ids[0])), "__consumer_offsets")
    assert offsets_leaders is not None
    partition = java_hash_abs(group) % len(offsets_leaders)
    assert coordinator == offsets_leaders[partition], (group, partition, coordinator, offsets_leaders)

    # More records; a new member of the group resumes at the committed offsets.
    produce_confluent(cluster.bootstrap_servers, topic, records_for("b", per_partition=half))
    r = round_(cluster.bootstrap_servers, topic, group, PARTITIONS * half)
    assert dict(r.counts) == every, f"second member read {dict(r.counts)}"
    assert r.first == every, f"second member started at {r.first}, not at the committed offsets"
    assert r.committed == dict.fromkeys(range(PARTITIONS), 2 * half), r.committed


# --------------------------------------------------------------------------------------------
# Idempotent producers: producer ids handed out through every broker
# --------------------------------------------------------------------------------------------


def idempotent_through_each_broker(c: ClusterProcesses) -> None:
    topic = fresh_topic("idem")
    create_topic(c, topic)
    per = 30
    for node_id in c.broker_ids:
        # Bootstrapped with one broker: librdkafka asks that broker for a producer id first.
        produce_confluent(
            addr(c, node_id),
            topic,
            records_for(f"n{node_id}", per_partition=per),
            **{"enable.idempotence": True},
        )
    got = consume_confluent(
        c.bootstrap_servers, topic, {p: per * len(c.broker_ids) for p in range(PARTITIONS)}
    )
    for p in range(PARTITIONS):
        want = [rec for n in c.broker_ids for rec in records_for(f"n{n}", per_partition=per)[p]]
        assert got[p] == want, f"partition {p}: {len(got[p])} records, expected {len(want)} (no duplicates)"

    # Three producers, three distinct producer ids on every partition, each with its 30 records
    # (DescribeProducers, sent by kafka-python to each partition's leader).
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        described = admin.describe_producers([KpTopicPartition(topic, p) for p in range(PARTITIONS)])
    finally:
        admin.close()
    ids = set()
    for tp, state in described.items():
        rows = sorted((s.producer_id, s.producer_epoch, s.last_sequence) for s in state.active_producers)
        assert len(rows) == len(c.broker_ids), (tp, rows)
        assert all(pid >= 0 and epoch == 0 and seq == per - 1 for pid, epoch, seq in rows), (tp, rows)
        ids.add(tuple(pid for pid, _, _ in rows))
    assert len(ids) == 1 and len(set(ids.pop())) == len(c.broker_ids), described


def test_idempotent_producer_through_each_broker(cluster: ClusterProcesses) -> None:
    idempotent_through_each_broker(cluster)


# --------------------------------------------------------------------------------------------
# zurau metadata-quorum describe
# --------------------------------------------------------------------------------------------


def quorum_cli(bootstrap: str, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zurau.cli.main",
            "metadata-quorum",
            "describe",
            f"--{mode}",
            "--bootstrap-server",
            bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}: {err[-2000:]}"
    return out


def status_fields(out: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^(\w+):\s+(.*)$", out, re.M)}


def check_quorum_cli(c: ClusterProcesses) -> int:
    """--status and --replication through every broker; returns the leader id."""
    procs = {
        (i, mode): quorum_cli(addr(c, i), mode) for i in c.broker_ids for mode in ("status", "replication")
    }
    outs = {key: finish(p) for key, p in procs.items()}
    leader_ids = set()
    for i in c.broker_ids:
        st = status_fields(outs[i, "status"])
        assert st["ClusterId"] == c.cluster_id, st
        leader = int(st["LeaderId"])
        leader_ids.add(leader)
        assert leader in c.controller_ids, st
        assert int(st["LeaderEpoch"]) >= 1, st
        assert int(st["HighWatermark"]) > 0, st
        voters = json.loads(st["CurrentVoters"])
        assert sorted(v["id"] for v in voters) == sorted(c.controller_ids), voters
        for v in voters:
            port = c.nodes[v["id"]].controller_port
            assert v.get("endpoints") == [f"CONTROLLER://127.0.0.1:{port}"], voters

        rows = [line.split() for line in outs[i, "replication"].strip().splitlines()]
        assert rows[0] == [
            "NodeId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status",
        ]
        voter_rows = {int(r[0]): r[5] for r in rows[1:] if r[5] in ("Leader", "Follower")}
        assert voter_rows == {v: ("Leader" if v == leader else "Follower") for v in c.controller_ids}, rows
        observers = sorted(int(r[0]) for r in rows[1:] if r[5] == "Observer")
        assert observers == sorted(set(c.broker_ids) - set(c.controller_ids)), rows
    assert len(leader_ids) == 1, leader_ids
    return leader_ids.pop()


def test_metadata_quorum_cli_through_each_broker(cluster: ClusterProcesses) -> None:
    leader = check_quorum_cli(cluster)
    assert leader == quorum(addr(cluster, 1))["leader_id"]
    # Combined nodes: Metadata's controller is the quorum's leader.
    assert {node_metadata(addr(cluster, i))["controller_id"] for i in cluster.broker_ids} == {leader}


# --------------------------------------------------------------------------------------------
# The other shape: three dedicated controllers (1-3), three brokers (4-6)
# --------------------------------------------------------------------------------------------


def test_dedicated_controllers_and_brokers(tmp_path: Path) -> None:
    c = start_cluster(tmp_path / "kraft-dedicated", controllers=3, brokers=3)
    try:
        assert c.broker_ids == [4, 5, 6]

        # Metadata: the brokers, and as controller a live broker (clients cannot reach controllers).
        def expect(controller: int) -> None:
            assert controller in c.broker_ids, f"controller {controller} is not a broker"

        for client in CLIENTS:
            check_metadata(c, client, expect)

        # Every admin request now reaches a broker first, which forwards it to the quorum
        # (librdkafka's too: the "controller" it addresses is a broker).
        for client in ADMIN_CLIENTS:
            for node_id in c.broker_ids:
                admin_cycle_through(c, client, node_id)

        produce_consume(c, "confluent-kafka")
        idempotent_through_each_broker(c)
        leader = check_quorum_cli(c)
        assert leader in c.controller_ids
    finally:
        c.stop()
