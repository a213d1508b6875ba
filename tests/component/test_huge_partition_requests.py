"""Requests for huge numbers of partitions (found by fuzzing the REST proxy's PATCH of a topic's
partition count): the controller refuses them from their numbers, as Kafka's does, without
building anything, and a controller write that fails anyway fails that request only. The broker
keeps answering, on one node and in a three-node cluster (where the request is forwarded)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.component.kafka_wire import KafkaWireClient
from zurau.embedded import EmbeddedBroker, EmbeddedCluster
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    InvalidReplicationFactorError,
    PolicyViolationError,
    RecordListTooLargeError,
)

pytestmark = pytest.mark.timeout(60)

HUGE = 16_777_215  # what the fuzzer sent through the REST proxy
POLICY = PolicyViolationError.code
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."
FAST_S = 3.0  # a refusal is decided from the numbers: no placement, no records


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _port(bootstrap: str) -> int:
    return int(bootstrap.split(",")[0].rsplit(":", 1)[1])


def _new_topic(name: str, partitions: int, rf: int = 1) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [], "configs": []}


async def _create_topics(c: KafkaWireClient, *topics: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
    body = {"topics": list(topics), "timeout_ms": 15_000, "validate_only": False}
    r = await c.request(ApiKey.CREATE_TOPICS, 5, body, timeout=30)
    return {t["name"]: (t["error_code"], t["error_message"]) for t in r["topics"]}


async def _create_partitions(c: KafkaWireClient, *counts: tuple[str, int]) -> dict[str, tuple[int, str | None]]:
    body = {
        "topics": [{"name": n, "count": k, "assignments": None} for n, k in counts],
        "timeout_ms": 15_000,
        "validate_only": False,
    }
    r = await c.request(ApiKey.CREATE_PARTITIONS, 1, body, timeout=30)
    return {t["name"]: (t["error_code"], t["error_message"]) for t in r["results"]}


async def _partition_counts(c: KafkaWireClient) -> dict[str, int]:
    r = await c.request(ApiKey.METADATA, 1, {"topics": None}, timeout=10)
    return {t["name"]: len(t["partitions"]) for t in r["topics"]}


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------ one node


async def test_huge_create_partitions_fails_its_topic_and_the_others_grow(broker: EmbeddedBroker) -> None:
    a, b = _unique("cp-a"), _unique("cp-b")
    async with await KafkaWireClient.connect("127.0.0.1", _port(broker.bootstrap_servers)) as c:
        assert await _create_topics(c, _new_topic(a, 1), _new_topic(b, 1)) == {a: (0, None), b: (0, None)}
        started = time.monotonic()
        res = await _create_partitions(c, (a, HUGE), (b, 3))
        assert time.monotonic() - started < FAST_S
        assert res[b] == (0, None)
        assert res[a] == (
            POLICY,
            f"Excessively large number of partitions per request: adding {HUGE - 1} partition(s) to {a} would make "
            f"{HUGE - 1} new partitions in this request, above the limit of 10000.",
        )
        # The same connection keeps being answered, and only b changed.
        assert (await c.request(ApiKey.API_VERSIONS, 0, {}))["error_code"] == 0
        counts = await _partition_counts(c)
        assert counts[a] == 1 and counts[b] == 3


async def test_huge_create_topics_is_refused_whole_then_served_again(broker: EmbeddedBroker) -> None:
    huge, normal = _unique("ct-huge"), _unique("ct-normal")
    async with await KafkaWireClient.connect("127.0.0.1", _port(broker.bootstrap_servers)) as c:
        started = time.monotonic()
        # Kafka refuses a CreateTopics request over the bound whole: every topic gets the error.
        res = await _create_topics(c, _new_topic(huge, HUGE), _new_topic(normal, 2))
        assert time.monotonic() - started < FAST_S
        assert res == {huge: (POLICY, TOO_MANY_PARTITIONS), normal: (POLICY, TOO_MANY_PARTITIONS)}
        # Partitions times replicas: the partition count decides first.
        res = await _create_topics(c, _new_topic(huge, HUGE, 32767))
        assert res == {huge: (POLICY, TOO_MANY_PARTITIONS)}
        counts = await _partition_counts(c)
        assert huge not in counts and normal not in counts
        # The normal topic alone is created, on the same connection.
        assert await _create_topics(c, _new_topic(normal, 2)) == {normal: (0, None)}
        assert (await _partition_counts(c))[normal] == 2


def test_kafka_clients_get_kafkas_errors_and_the_broker_keeps_serving(broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topic, other = _unique("ck"), _unique("ck-other")

    def error_of(futures: dict[str, Any], name: str) -> Any:
        with pytest.raises(KafkaException) as e:
            futures[name].result(15)
        return e.value.args[0]

    started = time.monotonic()
    # librdkafka lets a client ask for at most 100,000 partitions: enough to be refused.
    err = error_of(admin.create_topics([NewTopic(topic, 100_000, 1)], request_timeout=15), topic)
    assert (err.code(), err.str()) == (POLICY, TOO_MANY_PARTITIONS)
    # One topic of 10,000 partitions is 10,001 records: refused, as by Kafka.
    err = error_of(admin.create_topics([NewTopic(topic, 10_000, 1)], request_timeout=15), topic)
    assert (err.code(), err.str()) == (POLICY, TOO_MANY_RECORDS)
    # A replication factor no cluster has (librdkafka's most).
    err = error_of(admin.create_topics([NewTopic(topic, 3, 10_000)], request_timeout=15), topic)
    assert err.code() == InvalidReplicationFactorError.code and "10000" in err.str()
    assert time.monotonic() - started < 3 * FAST_S

    for f in admin.create_topics([NewTopic(topic, 1, 1), NewTopic(other, 1, 1)], request_timeout=15).values():
        f.result(15)
    futures = admin.create_partitions(
        [NewPartitions(topic, 100_000), NewPartitions(other, 2)], request_timeout=15
    )
    futures[other].result(15)
    err = error_of(futures, topic)
    assert err.code() == POLICY and err.str().startswith("Excessively large number of partitions per request:")
    md = admin.list_topics(timeout=10)
    assert len(md.topics[topic].partitions) == 1 and len(md.topics[other].partitions) == 2

    # Produce and consume on the grown topic, byte for byte.
    sent = [(b"key-%d" % i, bytes(range(i, i + 64))) for i in range(10)]
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
    for k, v in sent:
        p.produce(other, key=k, value=v, partition=1)
    assert p.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": _unique("g"),
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(other, 1, 0)])
        got: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 15
        while len(got) < len(sent) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.key(), m.value()))
        assert got == sent
    finally:
        consumer.close()


async def test_a_refused_metadata_write_fails_that_request_only(
    broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write the metadata log refuses (here: as if over segment.bytes) is answered with its
    error for every topic, on an open connection; nothing changed, and the next request works."""
    metadata_log = broker.broker.controller.log
    real_append = metadata_log.append
    refused: list[int] = []

    def refuse_once(records: Any, now_ms: int) -> int:
        if not refused:
            refused.append(len(records))
            raise RecordListTooLargeError("record set of 99999999 bytes exceeds segment.bytes 67108864")
        return real_append(records, now_ms)

    monkeypatch.setattr(metadata_log, "append", refuse_once)
    t1, t2 = _unique("w1"), _unique("w2")
    async with await KafkaWireClient.connect("127.0.0.1", _port(broker.bootstrap_servers)) as c:
        offset_before = broker.broker.controller.image.offset
        res = await _create_topics(c, _new_topic(t1, 2), _new_topic(t2, 1))
        assert refused == [5]  # both topics' records, in one batch
        code = RecordListTooLargeError.code
        assert {n: r[0] for n, r in res.items()} == {t1: code, t2: code}
        assert "exceeds segment.bytes" in (res[t1][1] or "")
        assert broker.broker.controller.image.offset == offset_before
        assert (await c.request(ApiKey.API_VERSIONS, 0, {}))["error_code"] == 0
        counts = await _partition_counts(c)
        assert t1 not in counts and t2 not in counts
        assert await _create_topics(c, _new_topic(t1, 2)) == {t1: (0, None)}
        # CreatePartitions the same way.
        refused.clear()
        res = await _create_partitions(c, (t1, 4))
        assert res[t1][0] == code and refused == [2]
        assert await _create_partitions(c, (t1, 4)) == {t1: (0, None)}
        assert (await _partition_counts(c))[t1] == 4


# ------------------------------------------------------------------ three nodes


async def test_a_cluster_refuses_forwarded_huge_requests_and_keeps_serving(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path) as cluster:
        active = cluster.controller_id
        assert active in (1, 2, 3)
        other = next(b for b in cluster.brokers if b is not None and b.node_id != active)
        a, b = _unique("k-a"), _unique("k-b")
        async with await KafkaWireClient.connect("127.0.0.1", _port(other.bootstrap_servers)) as c:
            assert await _create_topics(c, _new_topic(a, 1, 3), _new_topic(b, 1, 3)) == {a: (0, None), b: (0, None)}
            started = time.monotonic()
            huge = _unique("k-huge")
            assert await _create_topics(c, _new_topic(huge, HUGE, 3)) == {huge: (POLICY, TOO_MANY_PARTITIONS)}
            res = await _create_partitions(c, (a, HUGE), (b, 2))
            assert time.monotonic() - started < FAST_S
            assert res[a][0] == POLICY and res[b] == (0, None)

            # A proposal the Raft log refuses: the forwarded request gets that error once (no
            # retry of the same write), and the cluster keeps deciding.
            raft = cluster.node(active).kraft.channel.raft  # type: ignore[union-attr]
            assert raft is not None
            real_propose = raft.propose
            proposals: list[int] = []

            def refuse_once(payloads: Any) -> int:
                proposals.append(len(payloads))
                if len(proposals) == 1:
                    raise RecordListTooLargeError("record set of 99999999 bytes exceeds segment.bytes 67108864")
                return real_propose(payloads)

            raft.propose = refuse_once  # type: ignore[method-assign]
            try:
                t = _unique("k-refused")
                res = await _create_topics(c, _new_topic(t, 1, 3))
                assert res[t][0] == RecordListTooLargeError.code and proposals == [2]
                assert await _create_topics(c, _new_topic(t, 1, 3)) == {t: (0, None)}
            finally:
                raft.propose = real_propose  # type: ignore[method-assign]

        # Every node answers and sees the topics as they are.
        deadline = time.monotonic() + 15
        for node in cluster.brokers:
            assert node is not None
            async with await KafkaWireClient.connect("127.0.0.1", _port(node.bootstrap_servers)) as c:
                while True:
                    counts = await _partition_counts(c)
                    if counts.get(t) == 1 or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.05)
                assert counts[a] == 1 and counts[b] == 2 and counts[t] == 1
