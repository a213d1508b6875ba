"""The REST proxy's v3 topic endpoints against an embedded broker: what is created, changed and
deleted over HTTP is checked with confluent-kafka's own admin client (and records produced with its
producer); answers are checked for Confluent's shapes (``kind``, ``metadata.self``, CRNs,
``related`` links) and error bodies, bad inputs included."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy

DEFAULT_PARTITIONS = 2  # the broker's num.partitions, which a topic created without a count gets
TOPIC_OPS = {"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}


class Env:
    def __init__(self, broker: EmbeddedBroker, proxy: EmbeddedRestProxy) -> None:
        self.bootstrap = broker.bootstrap_servers
        self.url = proxy.url
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        md = self.admin.list_topics(timeout=10)
        self.cluster_id: str = md.cluster_id
        self.broker_id: int = next(iter(md.brokers))
        self.http = httpx.Client(base_url=proxy.url, timeout=30)
        self.base = f"/v3/clusters/{self.cluster_id}"

    def topics_url(self, *parts: object) -> str:
        return "/".join([f"{self.base}/topics", *(str(p) for p in parts)])

    def abs(self, path: str) -> str:
        return f"{self.url}{path}"

    def topic_configs(self, topic: str) -> dict[str, Any]:
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        return self.admin.describe_configs([res])[res].result(10)

    def partitions(self, topic: str) -> int | None:
        # Every topic's metadata: asking for one by name would auto-create it.
        t = self.admin.list_topics(timeout=10).topics.get(topic)
        return None if t is None or t.error is not None else len(t.partitions)

    def create(self, **body: Any) -> httpx.Response:
        return self.http.post(self.topics_url(), json=body)


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with EmbeddedBroker(num_partitions=DEFAULT_PARTITIONS, group_initial_rebalance_delay_ms=0) as broker, \
            EmbeddedRestProxy(broker.bootstrap_servers) as proxy:
        e = Env(broker, proxy)
        try:
            yield e
        finally:
            e.http.close()


def fresh(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def make_topic(env: Env, partitions: int = 1, **configs: str) -> str:
    name = fresh()
    env.admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(10)
    wait_for(lambda: env.partitions(name) == partitions, 20, f"topic {name}")
    return name


def error(resp: httpx.Response, status: int, code: int) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    return str(body["message"])


# ---------------------------------------------------------------------------------- topics


def test_created_topic_is_seen_by_the_admin_client_with_its_configs(env: Env) -> None:
    name = fresh()
    resp = env.create(
        topic_name=name, partitions_count=3, replication_factor=1,
        configs=[{"name": "cleanup.policy", "value": "compact"}, {"name": "retention.ms", "value": 12345}],
    )
    assert resp.status_code == 201, resp.text
    self_url = env.abs(env.topics_url(name))
    assert resp.headers["location"] == self_url
    assert resp.json() == {
        "kind": "KafkaTopic",
        "metadata": {"self": self_url, "resource_name": f"crn:///kafka={env.cluster_id}/topic={name}"},
        "cluster_id": env.cluster_id,
        "topic_name": name,
        "is_internal": False,
        "replication_factor": 1,
        "partitions_count": 3,
        "partitions": {"related": f"{self_url}/partitions"},
        "configs": {"related": f"{self_url}/configs"},
        "partition_reassignments": {"related": f"{self_url}/partitions/-/reassignment"},
    }
    wait_for(lambda: env.partitions(name) == 3, 20, "3 partitions")
    configs = env.topic_configs(name)
    assert configs["cleanup.policy"].value == "compact" and configs["retention.ms"].value == "12345"
    assert not configs["cleanup.policy"].is_default and not configs["retention.ms"].is_default

    got = env.http.get(env.topics_url(name))
    assert got.status_code == 200 and got.json() == {**resp.json()}
    listed = env.http.get(env.topics_url())
    assert listed.status_code == 200
    body = listed.json()
    assert body["kind"] == "KafkaTopicList" and body["metadata"] == {"self": env.abs(env.topics_url()), "next": None}
    names = [t["topic_name"] for t in body["data"]]
    assert name in names and names == sorted(names)
    assert next(t for t in body["data"] if t["topic_name"] == name) == resp.json()


def test_create_with_broker_defaults_assignments_and_dry_run(env: Env) -> None:
    name = fresh()
    resp = env.create(topic_name=name)
    assert resp.status_code == 201, resp.text
    assert (resp.json()["partitions_count"], resp.json()["replication_factor"]) == (DEFAULT_PARTITIONS, 1)
    wait_for(lambda: env.partitions(name) == DEFAULT_PARTITIONS, 20, "default partitions")

    assigned = fresh()
    resp = env.create(topic_name=assigned, partitions_count=7,
                      replicas_assignments={"0": [env.broker_id], "1": [env.broker_id], "2": [env.broker_id]})
    assert resp.status_code == 201, resp.text
    assert (resp.json()["partitions_count"], resp.json()["replication_factor"]) == (3, 1)
    wait_for(lambda: env.partitions(assigned) == 3, 20, "assigned partitions")

    dry = fresh()
    resp = env.create(topic_name=dry, partitions_count=4, validate_only=True)
    assert resp.status_code == 200, resp.text
    assert resp.json()["partitions_count"] == 4 and resp.headers["location"].endswith(f"/topics/{dry}")
    assert env.partitions(dry) is None
    error(env.http.get(env.topics_url(dry)), 404, 40401)


def test_create_refusals(env: Env) -> None:
    name = make_topic(env)
    assert "already exists" in error(env.create(topic_name=name), 400, 40002)
    error(env.create(topic_name=name, validate_only=True), 400, 40002)
    error(env.create(topic_name=fresh(), replication_factor=3), 400, 40002)
    error(env.create(topic_name=fresh(), partitions_count=0), 400, 40002)
    error(env.create(topic_name="bad name!"), 400, 40002)
    error(env.create(topic_name="x" * 250), 400, 40002)
    error(env.create(topic_name=fresh(), configs=[{"name": "no.such.config", "value": "1"}]), 400, 40002)
    error(env.create(topic_name=fresh(), configs=[{"name": "retention.ms", "value": "soon"}]), 400, 40002)
    error(env.create(topic_name=fresh(), replicas_assignments={"0": [99]}), 400, 40002)
    # Bodies that are not the documented JSON never reach the broker.
    post = env.http.post
    assert "empty" in error(post(env.topics_url(), content=b""), 400, 400)
    error(post(env.topics_url(), content=b"{not json"), 400, 400)
    error(post(env.topics_url(), json=[name]), 400, 400)
    error(env.create(partitions_count=1), 400, 400)
    error(env.create(topic_name=7), 400, 400)
    error(env.create(topic_name=fresh(), partitions_count="3"), 400, 400)
    error(env.create(topic_name=fresh(), partitions_count=2**31), 400, 400)
    error(env.create(topic_name=fresh(), partitions_count=1.5), 400, 400)
    error(env.create(topic_name=fresh(), replication_factor=2**15), 400, 400)
    error(env.create(topic_name=fresh(), replicas_assignments={"zero": [1]}), 400, 400)
    error(env.create(topic_name=fresh(), replicas_assignments={"0": 1}), 400, 400)
    error(env.create(topic_name=fresh(), configs={"retention.ms": "1"}), 400, 400)
    error(env.create(topic_name=fresh(), configs=[{"value": "1"}]), 400, 400)
    error(env.create(topic_name=fresh(), configs=[{"name": "a", "value": {}}]), 400, 400)
    error(env.create(topic_name=fresh(), configs=[{"name": "retention.ms"}, {"name": "retention.ms"}]), 400, 400)
    error(env.create(topic_name=fresh(), validate_only="yes"), 400, 400)
    error(env.http.post("/v3/clusters/nope/topics", json={"topic_name": fresh()}), 404, 404)


def test_internal_topics_are_not_listed_but_described(env: Env) -> None:
    topic = make_topic(env)
    consumer = Consumer({"bootstrap.servers": env.bootstrap, "group.id": fresh("g"), "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    internal = env.http.get(env.topics_url("__consumer_offsets"))
    assert internal.status_code == 200, internal.text
    assert internal.json()["is_internal"] is True
    listed = [t["topic_name"] for t in env.http.get(env.topics_url()).json()["data"]]
    assert topic in listed and "__consumer_offsets" not in listed
    assert all(not t["is_internal"] for t in env.http.get(env.topics_url()).json()["data"])
    all_configs = env.http.get(env.topics_url("-", "configs")).json()
    assert {c["topic_name"] for c in all_configs["data"]} >= {topic}
    assert "__consumer_offsets" not in {c["topic_name"] for c in all_configs["data"]}
    error(env.http.delete(env.topics_url("__consumer_offsets")), 400, 40002)


def test_get_topic_unknown_and_authorized_operations(env: Env) -> None:
    name = make_topic(env, 2)
    body = env.http.get(env.topics_url(name), params={"include_authorized_operations": "true"}).json()
    assert set(body["authorized_operations"]) == TOPIC_OPS
    assert "authorized_operations" not in env.http.get(env.topics_url(name)).json()
    listed = env.http.get(env.topics_url(), params={"include_authorized_operations": "true"}).json()["data"]
    assert set(next(t for t in listed if t["topic_name"] == name)["authorized_operations"]) == TOPIC_OPS
    error(env.http.get(env.topics_url(fresh())), 404, 40401)
    error(env.http.get(env.topics_url("bad%20name")), 404, 40401)
    error(env.http.get(env.topics_url("y" * 300)), 404, 40401)
    error(env.http.get(f"/v3/clusters/nope/topics/{name}"), 404, 404)
    assert env.http.put(env.topics_url()).status_code == 405


def test_partition_count_update(env: Env) -> None:
    name = make_topic(env, 2)
    resp = env.http.patch(env.topics_url(name), json={"partitions_count": 5})
    assert resp.status_code == 200, resp.text
    assert resp.json()["kind"] == "KafkaTopic" and resp.json()["partitions_count"] == 5
    wait_for(lambda: env.partitions(name) == 5, 20, "5 partitions")
    assert "already has 5" in error(env.http.patch(env.topics_url(name), json={"partitions_count": 5}), 400, 40002)
    error(env.http.patch(env.topics_url(name), json={"partitions_count": 3}), 400, 40002)
    error(env.http.patch(env.topics_url(name), json={}), 400, 400)
    error(env.http.patch(env.topics_url(name), json={"partitions_count": "9"}), 400, 400)
    error(env.http.patch(env.topics_url(name), json={"partitions_count": 2**40}), 400, 400)
    error(env.http.patch(env.topics_url(name), content=b""), 400, 400)
    error(env.http.patch(env.topics_url(fresh()), json={"partitions_count": 3}), 404, 40401)
    assert env.partitions(name) == 5


def test_delete_topic(env: Env) -> None:
    name = make_topic(env)
    resp = env.http.delete(env.topics_url(name))
    assert resp.status_code == 204 and resp.content == b""
    wait_for(lambda: env.partitions(name) is None, 20, "topic gone")
    error(env.http.delete(env.topics_url(name)), 404, 40401)
    error(env.http.delete(env.topics_url("bad!name")), 404, 40401)


# ---------------------------------------------------------------------------------- configs


def config_by_name(env: Env, topic: str, name: str) -> dict[str, Any]:
    resp = env.http.get(env.topics_url(topic, "configs", name))
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def test_topic_configs_listed_with_synonyms(env: Env) -> None:
    topic = make_topic(env, **{"cleanup.policy": "compact"})
    resp = env.http.get(env.topics_url(topic, "configs"))
    assert resp.status_code == 200
    body = resp.json()
    assert body["kind"] == "KafkaTopicConfigList"
    assert body["metadata"] == {"self": env.abs(env.topics_url(topic, "configs")), "next": None}
    names = [c["name"] for c in body["data"]]
    assert names == sorted(names) and {"cleanup.policy", "retention.ms", "min.insync.replicas"} <= set(names)
    cleanup = next(c for c in body["data"] if c["name"] == "cleanup.policy")
    assert cleanup == config_by_name(env, topic, "cleanup.policy")
    assert cleanup["kind"] == "KafkaTopicConfig"
    assert cleanup["metadata"] == {
        "self": env.abs(env.topics_url(topic, "configs", "cleanup.policy")),
        "resource_name": f"crn:///kafka={env.cluster_id}/topic={topic}/config=cleanup.policy",
    }
    assert (cleanup["value"], cleanup["source"], cleanup["is_default"]) == ("compact", "DYNAMIC_TOPIC_CONFIG", False)
    assert cleanup["topic_name"] == topic and cleanup["cluster_id"] == env.cluster_id
    assert cleanup["is_read_only"] is False and cleanup["is_sensitive"] is False
    assert cleanup["synonyms"][0] == {"name": "cleanup.policy", "value": "compact", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert {"name": "log.cleanup.policy", "value": "delete", "source": "DEFAULT_CONFIG"} in cleanup["synonyms"]
    retention = config_by_name(env, topic, "retention.ms")
    assert retention["is_default"] is True and retention["source"] == "DEFAULT_CONFIG"

    everything = env.http.get(env.topics_url("-", "configs")).json()
    assert everything["metadata"]["self"] == env.abs(env.topics_url("-", "configs"))
    mine = [c for c in everything["data"] if c["topic_name"] == topic]
    assert mine == body["data"]

    error(env.http.get(env.topics_url(topic, "configs", "no.such.config")), 404, 404)
    error(env.http.get(env.topics_url(fresh(), "configs")), 404, 40401)
    error(env.http.get(env.topics_url(fresh(), "configs", "retention.ms")), 404, 40401)


def test_config_set_and_reset(env: Env) -> None:
    topic = make_topic(env)
    url = env.topics_url(topic, "configs", "retention.ms")
    assert env.http.put(url, json={"value": "3600000"}).status_code == 204
    assert env.topic_configs(topic)["retention.ms"].value == "3600000"
    assert config_by_name(env, topic, "retention.ms")["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert env.http.put(url, json={"value": 7200000}).status_code == 204  # a number stands for its text
    assert env.topic_configs(topic)["retention.ms"].value == "7200000"
    resp = env.http.delete(url)
    assert resp.status_code == 204 and resp.content == b""
    assert env.topic_configs(topic)["retention.ms"].is_default
    assert config_by_name(env, topic, "retention.ms")["is_default"] is True

    error(env.http.put(url, json={"value": "forever"}), 400, 40002)
    error(env.http.put(url, json={"value": ["1"]}), 400, 400)
    error(env.http.put(url, content=b"nope"), 400, 400)
    error(env.http.put(env.topics_url(topic, "configs", "no.such.config"), json={"value": "1"}), 404, 404)
    error(env.http.delete(env.topics_url(topic, "configs", "no.such.config")), 404, 404)
    error(env.http.put(env.topics_url(fresh(), "configs", "retention.ms"), json={"value": "1"}), 404, 40401)
    assert env.topic_configs(topic)["retention.ms"].is_default


def test_config_batch_alter(env: Env) -> None:
    topic = make_topic(env, **{"cleanup.policy": "compact"})
    url = env.topics_url(topic, "configs:alter")
    dry = {"data": [{"name": "cleanup.policy", "operation": "DELETE"},
                    {"name": "compression.type", "value": "gzip"}], "validate_only": True}
    assert env.http.post(url, json=dry).status_code == 204
    configs = env.topic_configs(topic)
    assert configs["cleanup.policy"].value == "compact" and configs["compression.type"].is_default

    resp = env.http.post(url, json={"data": [{"name": "cleanup.policy", "operation": "DELETE"},
                                             {"name": "compression.type", "value": "gzip", "operation": "SET"}]})
    assert resp.status_code == 204, resp.text
    configs = env.topic_configs(topic)
    assert configs["cleanup.policy"].is_default and configs["compression.type"].value == "gzip"

    error(env.http.post(url, json={"data": [{"name": "compression.type", "value": "brotli"}]}), 400, 40002)
    error(env.http.post(url, json={"data": [{"name": "no.such.config", "value": "1"}]}), 404, 404)
    error(env.http.post(url, json={"data": [{"name": "compression.type", "operation": "APPEND"}]}), 400, 400)
    error(env.http.post(url, json={"data": {"name": "compression.type"}}), 400, 400)
    error(env.http.post(url, json={}), 400, 400)
    error(env.http.post(env.topics_url(fresh(), "configs:alter"), json={"data": []}), 404, 40401)
    assert env.topic_configs(topic)["compression.type"].value == "gzip"


# ---------------------------------------------------------------------------------- partitions


def test_partitions_replicas_and_offsets(env: Env) -> None:
    topic = make_topic(env, 2)
    producer = Producer({"bootstrap.servers": env.bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"v%d" % i, partition=1)
    assert producer.flush(10) == 0

    listed = env.http.get(env.topics_url(topic, "partitions")).json()
    assert listed["kind"] == "KafkaPartitionList" and [p["partition_id"] for p in listed["data"]] == [0, 1]
    p1 = env.http.get(env.topics_url(topic, "partitions", 1)).json()
    assert p1 == listed["data"][1]
    p_url = env.abs(env.topics_url(topic, "partitions", 1))
    assert p1 == {
        "kind": "KafkaPartition",
        "metadata": {"self": p_url, "resource_name": f"crn:///kafka={env.cluster_id}/topic={topic}/partition=1"},
        "cluster_id": env.cluster_id,
        "topic_name": topic,
        "partition_id": 1,
        "leader": {"related": f"{p_url}/replicas/{env.broker_id}"},
        "replicas": {"related": f"{p_url}/replicas"},
        "reassignment": {"related": f"{p_url}/reassignment"},
    }

    offsets = env.http.get(env.topics_url(topic, "partitions", 1, "offset"))
    assert offsets.status_code == 200, offsets.text
    assert offsets.json() == {
        "kind": "KafkaPartitionWithOffsets",
        "metadata": {
            "self": f"{p_url}/offset",
            "resource_name": f"crn:///kafka={env.cluster_id}/topic={topic}/partition=1/offset_type=earliest_and_latest",
        },
        "cluster_id": env.cluster_id, "topic_name": topic, "partition_id": 1,
        "earliest_offset": 0, "latest_offset": 5,
    }
    explicit = env.http.get(env.topics_url(topic, "partitions", 0, "offset"), params={"offset_type": "earliest_and_latest"})
    assert (explicit.json()["earliest_offset"], explicit.json()["latest_offset"]) == (0, 0)
    assert "latest" in error(env.http.get(env.topics_url(topic, "partitions", 1, "offset"),
                                          params={"offset_type": "latest"}), 400, 400)

    replicas = env.http.get(env.topics_url(topic, "partitions", 1, "replicas")).json()
    assert replicas["kind"] == "KafkaReplicaList" and len(replicas["data"]) == 1
    replica = env.http.get(env.topics_url(topic, "partitions", 1, "replicas", env.broker_id)).json()
    assert replica == replicas["data"][0]
    assert replica["metadata"]["resource_name"] == (
        f"crn:///kafka={env.cluster_id}/topic={topic}/partition=1/replica={env.broker_id}")
    assert (replica["broker_id"], replica["is_leader"], replica["is_in_sync"]) == (env.broker_id, True, True)
    assert replica["broker"] == {"related": env.abs(f"{env.base}/brokers/{env.broker_id}")}

    for path in (("partitions", 9), ("partitions", 9, "offset"), ("partitions", 9, "replicas"),
                 ("partitions", -1), ("partitions", 9, "reassignment")):
        error(env.http.get(env.topics_url(topic, *path)), 404, 40402)
    error(env.http.get(env.topics_url(topic, "partitions", 0, "replicas", 99)), 404, 404)
    error(env.http.get(env.topics_url(topic, "partitions", "one")), 400, 400)
    error(env.http.get(env.topics_url(topic, "partitions", 2**33)), 400, 400)
    error(env.http.get(env.topics_url(topic, "partitions", 0, "replicas", "x")), 400, 400)
    error(env.http.get(env.topics_url(fresh(), "partitions")), 404, 40401)
    error(env.http.get(env.topics_url(fresh(), "partitions", 0, "offset")), 404, 40401)


def test_reassignments_none_ongoing(env: Env) -> None:
    topic = make_topic(env)
    every = env.http.get(env.topics_url("-", "partitions", "-", "reassignment"))
    assert every.status_code == 200
    assert every.json() == {
        "kind": "KafkaReassignmentList",
        "metadata": {"self": env.abs(env.topics_url("-", "partitions", "-", "reassignment")), "next": None},
        "data": [],
    }
    mine = env.http.get(env.topics_url(topic, "partitions", "-", "reassignment")).json()
    assert mine["data"] == [] and mine["metadata"]["self"].endswith(f"/topics/{topic}/partitions/-/reassignment")
    error(env.http.get(env.topics_url(topic, "partitions", 0, "reassignment")), 404, 404)
    error(env.http.get(env.topics_url(fresh(), "partitions", "-", "reassignment")), 404, 40401)
