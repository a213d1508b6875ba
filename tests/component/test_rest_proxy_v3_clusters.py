"""The REST proxy's v3 clusters, brokers and broker configs against one embedded broker.

Answers are compared with what a real Kafka client (confluent-kafka) and Zurau's own admin
client see of the same cluster: the cluster id and controller, the brokers' hosts and ports,
each partition replica of a broker, every broker config with its value, source, flags and
synonyms. Zurau refuses dynamic broker config changes: the proxy must answer that refusal as a
400 with the broker's message (never a 500), whether asked by PUT, DELETE or ``:alter``, with or
without ``validate_only``, and the config must be unchanged afterwards. Unknown clusters,
brokers and configs are 404; malformed broker ids and bodies are 400.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient as KafkaAdmin
from confluent_kafka.admin import ConfigResource as KafkaConfigResource
from confluent_kafka.admin import ConfigSource as KafkaConfigSource
from confluent_kafka.admin import ResourceType as KafkaResourceType

from zurau import EmbeddedBroker
from zurau.client.admin import AdminClient, ConfigResource, ResourceType
from zurau.client.config import ClientConfig
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy

pytestmark = pytest.mark.timeout(120)

TOPIC = "v3-clusters-topic"
PARTITIONS = 3
MAX_REQUEST_BYTES = 65_536
REFUSED = "Cannot update these configs dynamically: Set(num.partitions)"  # read-only in Kafka too


class Env:
    def __init__(self, broker: EmbeddedBroker, proxy: EmbeddedRestProxy, http: httpx.Client, cluster_id: str) -> None:
        self.broker = broker
        self.proxy = proxy
        self.http = http
        self.cluster_id = cluster_id
        self.kafka = KafkaAdmin({"bootstrap.servers": broker.bootstrap_servers})
        self.node_id = broker.config.node_id

    @property
    def base(self) -> str:
        return f"{self.proxy.url}/v3/clusters/{self.cluster_id}"


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with EmbeddedBroker() as broker, EmbeddedRestProxy(
        broker.bootstrap_servers, **{"max.request.bytes": MAX_REQUEST_BYTES}
    ) as proxy:
        broker.create_topic(TOPIC, PARTITIONS)
        with httpx.Client(base_url=proxy.url, timeout=30) as http:
            cluster_id = KafkaAdmin({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).cluster_id
            assert cluster_id
            yield Env(broker, proxy, http, cluster_id)


def _error(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error_code", "message"}, body
    assert isinstance(body["error_code"], int) and isinstance(body["message"], str)
    return str(body["message"])


def _zurau_describe(bootstrap: str, res: ConfigResource) -> Any:
    async def run() -> Any:
        async with AdminClient(ClientConfig.from_props({"bootstrap.servers": bootstrap})) as admin:
            return (await admin.describe_configs([res]))[res]

    return asyncio.run(run())


# ------------------------------------------------------------------ clusters
def test_list_and_get_cluster(env: Env) -> None:
    md = env.kafka.list_topics(timeout=10)
    r = env.http.get("/v3/clusters")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "KafkaClusterList"
    assert body["metadata"] == {"self": f"{env.proxy.url}/v3/clusters", "next": None}
    assert len(body["data"]) == 1
    cluster = body["data"][0]
    base = env.base
    assert cluster == {
        "kind": "KafkaCluster",
        "metadata": {"self": base, "resource_name": f"crn:///kafka={md.cluster_id}"},
        "cluster_id": md.cluster_id,
        "controller": {"related": f"{base}/brokers/{md.controller_id}"},
        "acls": {"related": f"{base}/acls"},
        "brokers": {"related": f"{base}/brokers"},
        "broker_configs": {"related": f"{base}/broker-configs"},
        "consumer_groups": {"related": f"{base}/consumer-groups"},
        "topics": {"related": f"{base}/topics"},
        "partition_reassignments": {"related": f"{base}/topics/-/partitions/-/reassignment"},
    }
    # The cluster's own self link answers the same resource.
    got = env.http.get(cluster["metadata"]["self"])
    assert got.status_code == 200 and got.json() == cluster
    # The controller link leads to a broker that exists.
    assert env.http.get(cluster["controller"]["related"]).status_code == 200


def test_unknown_cluster_is_404_everywhere(env: Env) -> None:
    n = env.node_id
    calls: list[tuple[str, str, Any]] = [
        ("GET", "", None),
        ("GET", "/brokers", None),
        ("GET", f"/brokers/{n}", None),
        ("GET", f"/brokers/{n}/partition-replicas", None),
        ("GET", "/brokers/-/configs", None),
        ("GET", f"/brokers/{n}/configs", None),
        ("GET", f"/brokers/{n}/configs/num.partitions", None),
        ("PUT", f"/brokers/{n}/configs/num.partitions", {"value": "2"}),
        ("DELETE", f"/brokers/{n}/configs/num.partitions", None),
        ("POST", f"/brokers/{n}/configs:alter", {"data": [{"name": "num.partitions", "value": "2"}]}),
        ("GET", "/broker-configs", None),
        ("GET", "/broker-configs/num.partitions", None),
        ("PUT", "/broker-configs/num.partitions", {"value": "2"}),
        ("DELETE", "/broker-configs/num.partitions", None),
        ("POST", "/broker-configs:alter", {"data": [{"name": "num.partitions", "value": "2"}]}),
    ]
    for method, tail, body in calls:
        r = env.http.request(method, f"/v3/clusters/no-such-cluster{tail}", json=body)
        assert _error(r, 404) == "Cluster no-such-cluster cannot be found.", (method, tail)


# ------------------------------------------------------------------ brokers
def test_brokers_as_the_client_sees_them(env: Env) -> None:
    md = env.kafka.list_topics(timeout=10)
    r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "KafkaBrokerList"
    assert body["metadata"] == {"self": f"{env.base}/brokers", "next": None}
    assert [b["broker_id"] for b in body["data"]] == sorted(md.brokers) == [env.node_id]
    for b in body["data"]:
        node = md.brokers[b["broker_id"]]
        url = f"{env.base}/brokers/{node.id}"
        assert b == {
            "kind": "KafkaBroker",
            "metadata": {"self": url, "resource_name": f"crn:///kafka={env.cluster_id}/broker={node.id}"},
            "cluster_id": env.cluster_id,
            "broker_id": node.id,
            "host": node.host,
            "port": node.port,
            "rack": None,
            "configs": {"related": f"{url}/configs"},
            "partition_replicas": {"related": f"{url}/partition-replicas"},
        }
        one = env.http.get(b["metadata"]["self"])
        assert one.status_code == 200 and one.json() == b


def test_unknown_and_malformed_broker_ids(env: Env) -> None:
    for tail in ("", "/configs", "/configs/num.partitions", "/partition-replicas"):
        r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/4242{tail}")
        assert _error(r, 404) == "Broker 4242 cannot be found.", tail
    for bad in ("abc", "1.5", "99999999999", "-", "%20"):
        r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{bad}")
        assert "broker_id" in _error(r, 400), bad
    r = env.http.put(f"/v3/clusters/{env.cluster_id}/brokers/4242/configs/num.partitions", json={"value": "2"})
    assert _error(r, 404) == "Broker 4242 cannot be found."
    r = env.http.post(f"/v3/clusters/{env.cluster_id}/brokers/4242/configs:alter",
                      json={"data": [{"name": "num.partitions", "value": "2"}]})
    assert _error(r, 404) == "Broker 4242 cannot be found."


def test_partition_replicas_of_a_broker(env: Env) -> None:
    md = env.kafka.list_topics(timeout=10)
    n = env.node_id
    expected = {
        (t.topic, p.id): (p.leader == n, n in p.isrs)
        for t in md.topics.values()
        for p in t.partitions.values()
        if n in p.replicas
    }
    assert {(TOPIC, i) for i in range(PARTITIONS)} <= set(expected)
    r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{n}/partition-replicas")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "KafkaReplicaList"
    assert body["metadata"] == {"self": f"{env.base}/brokers/{n}/partition-replicas", "next": None}
    got = {(d["topic_name"], d["partition_id"]): (d["is_leader"], d["is_in_sync"]) for d in body["data"]}
    assert got == expected
    keys = [(d["topic_name"], d["partition_id"]) for d in body["data"]]
    assert keys == sorted(keys)
    first = next(d for d in body["data"] if d["topic_name"] == TOPIC and d["partition_id"] == 2)
    assert first == {
        "kind": "KafkaReplica",
        "metadata": {
            "self": f"{env.base}/topics/{TOPIC}/partitions/2/replicas/{n}",
            "resource_name": f"crn:///kafka={env.cluster_id}/topic={TOPIC}/partition=2/replica={n}",
        },
        "cluster_id": env.cluster_id,
        "topic_name": TOPIC,
        "partition_id": 2,
        "broker_id": n,
        "is_leader": True,
        "is_in_sync": True,
        "broker": {"related": f"{env.base}/brokers/{n}"},
    }


# ------------------------------------------------------------------ broker configs
def _kafka_broker_configs(env: Env) -> dict[str, Any]:
    res = KafkaConfigResource(KafkaResourceType.BROKER, str(env.node_id))
    return dict(env.kafka.describe_configs([res])[res].result(10))


def test_broker_configs_as_a_kafka_client_sees_them(env: Env) -> None:
    n = env.node_id
    r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "KafkaBrokerConfigList"
    assert body["metadata"] == {"self": f"{env.base}/brokers/{n}/configs", "next": None}
    data = body["data"]
    names = [c["name"] for c in data]
    assert names == sorted(names)
    kafka = _kafka_broker_configs(env)
    assert set(names) == set(kafka) and len(names) == len(kafka) > 50
    for c in data:
        k = kafka[c["name"]]
        assert c["kind"] == "KafkaBrokerConfig"
        assert c["metadata"] == {
            "self": f"{env.base}/brokers/{n}/configs/{c['name']}",
            "resource_name": f"crn:///kafka={env.cluster_id}/broker={n}/config={c['name']}",
        }
        assert (c["cluster_id"], c["broker_id"]) == (env.cluster_id, n)
        assert c["value"] == k.value, c["name"]
        assert c["is_read_only"] == k.is_read_only and c["is_sensitive"] == k.is_sensitive, c["name"]
        assert c["source"] == KafkaConfigSource(k.source).name, c["name"]
        assert c["is_default"] == (c["source"] == "DEFAULT_CONFIG"), c["name"]
        assert {s["name"] for s in c["synonyms"]} == set(k.synonyms), c["name"]
        if c["is_sensitive"]:
            assert c["value"] is None and all(s["value"] is None for s in c["synonyms"])
    # A static setting of the embedded broker and a default, with their synonyms in priority order.
    by_name = {c["name"]: c for c in data}
    rf = by_name["offsets.topic.replication.factor"]  # EmbeddedBroker sets 1 for its single node
    assert (rf["value"], rf["source"], rf["is_default"]) == ("1", "STATIC_BROKER_CONFIG", False)
    assert rf["synonyms"] == [
        {"name": "offsets.topic.replication.factor", "value": "1", "source": "STATIC_BROKER_CONFIG"},
        {"name": "offsets.topic.replication.factor", "value": "3", "source": "DEFAULT_CONFIG"},
    ]
    assert by_name["num.partitions"]["is_default"] and by_name["num.partitions"]["source"] == "DEFAULT_CONFIG"
    password = by_name["ssl.key.password"]
    assert password["is_sensitive"] and password["value"] is None
    # Zurau's own admin client agrees on every value and source.
    zurau = {e.name: e for e in _zurau_describe(env.broker.bootstrap_servers, ConfigResource(ResourceType.BROKER, str(n)))}
    assert {name: (c["value"], c["source"]) for name, c in by_name.items()} == {
        name: (e.value, e.source.name) for name, e in zurau.items()
    }


def test_get_one_broker_config(env: Env) -> None:
    n = env.node_id
    listed = {c["name"]: c for c in env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs").json()["data"]}
    for name in ("num.partitions", "log.retention.hours", "node.id"):
        r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs/{name}")
        assert r.status_code == 200, r.text
        assert r.json() == listed[name]
        again = env.http.get(listed[name]["metadata"]["self"])
        assert again.status_code == 200 and again.json() == listed[name]
    for missing in ("no.such.config", "no%20such", "NUM.PARTITIONS"):
        r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs/{missing}")
        message = _error(r, 404)
        assert "cannot be found" in message and f"BROKER {n}" in message, message


def test_all_brokers_configs(env: Env) -> None:
    n = env.node_id
    r = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/-/configs")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "KafkaBrokerConfigList"
    assert body["metadata"] == {"self": f"{env.base}/brokers/-/configs", "next": None}
    one = env.http.get(f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs").json()["data"]
    assert body["data"] == one


def test_broker_config_changes_are_refused_with_the_brokers_message(env: Env) -> None:
    n = env.node_id
    url = f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs"
    before = env.http.get(f"{url}/num.partitions").json()
    answers = [
        env.http.put(f"{url}/num.partitions", json={"value": "7"}),
        env.http.put(f"{url}/num.partitions", json={"value": 7}),  # a number is taken as its text
        env.http.post(f"{url}:alter", json={"data": [{"name": "num.partitions", "value": "7"},
                                                     {"name": "log.retention.hours", "operation": "DELETE"}]}),
        env.http.post(f"{url}:alter", json={"data": [{"name": "num.partitions", "value": "7"}], "validate_only": True}),
    ]
    for r in answers:
        message = _error(r, 400)
        assert REFUSED in message and "INVALID_REQUEST" in message, message
        assert r.json()["error_code"] == 400
    # Deleting a dynamic override that is not there changes nothing and is no error (as in Kafka).
    assert env.http.delete(f"{url}/num.partitions").status_code == 204
    assert env.http.get(f"{url}/num.partitions").json() == before
    assert _kafka_broker_configs(env)["num.partitions"].value == before["value"]
    # The broker's own checks come through too: the same key twice in one batch.
    r = env.http.post(f"{url}:alter", json={"data": [{"name": "num.partitions", "value": "7"},
                                                     {"name": "num.partitions", "operation": "DELETE"}]})
    assert "duplicate config keys" in _error(r, 400)


def test_broker_config_changes_of_unknown_configs_are_404(env: Env) -> None:
    n = env.node_id
    url = f"/v3/clusters/{env.cluster_id}/brokers/{n}/configs"
    expected = f"Config no.such.config cannot be found for BROKER {n} in cluster {env.cluster_id}."
    assert _error(env.http.put(f"{url}/no.such.config", json={"value": "1"}), 404) == expected
    assert _error(env.http.delete(f"{url}/no.such.config"), 404) == expected
    r = env.http.post(f"{url}:alter", json={"data": [{"name": "num.partitions", "value": "2"},
                                                     {"name": "no.such.config", "value": "1"}]})
    assert _error(r, 404) == expected


BAD_UPDATE_BODIES: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("not JSON", b"{value: 1"),
    ("not UTF-8", b'{"value": "\xff"}'),
    ("an array", b'[{"value": "1"}]'),
    ("a string", b'"1"'),
    ("an object value", b'{"value": {"a": 1}}'),
    ("an array value", b'{"value": ["1"]}'),
    ("too deep", b'{"value": ' + b"[" * 100 + b"]" * 100 + b"}"),
]

BAD_BATCH_BODIES: list[tuple[str, Any]] = [
    ("no data", {}),
    ("null data", {"data": None}),
    ("data an object", {"data": {"name": "num.partitions"}}),
    ("an entry not an object", {"data": ["num.partitions"]}),
    ("an entry without a name", {"data": [{"value": "1"}]}),
    ("an empty name", {"data": [{"name": "", "value": "1"}]}),
    ("a numeric name", {"data": [{"name": 5, "value": "1"}]}),
    ("an unknown operation", {"data": [{"name": "num.partitions", "operation": "APPEND", "value": "1"}]}),
    ("an operation not a string", {"data": [{"name": "num.partitions", "operation": 0}]}),
    ("an object value", {"data": [{"name": "num.partitions", "value": {"v": 1}}]}),
    ("validate_only not a boolean", {"data": [{"name": "num.partitions", "value": "1"}], "validate_only": 3}),
    ("an array", [{"name": "num.partitions", "value": "1"}]),
]


@pytest.mark.parametrize("path", ["/brokers/{n}/configs/num.partitions", "/broker-configs/num.partitions"])
@pytest.mark.parametrize(("what", "raw"), BAD_UPDATE_BODIES, ids=[w for w, _ in BAD_UPDATE_BODIES])
def test_bad_update_bodies_are_400(env: Env, path: str, what: str, raw: bytes) -> None:
    url = f"/v3/clusters/{env.cluster_id}" + path.format(n=env.node_id)
    r = env.http.put(url, content=raw, headers={"Content-Type": "application/json"})
    _error(r, 400)


@pytest.mark.parametrize("path", ["/brokers/{n}/configs:alter", "/broker-configs:alter"])
@pytest.mark.parametrize(("what", "body"), BAD_BATCH_BODIES, ids=[w for w, _ in BAD_BATCH_BODIES])
def test_bad_batch_bodies_are_400(env: Env, path: str, what: str, body: Any) -> None:
    url = f"/v3/clusters/{env.cluster_id}" + path.format(n=env.node_id)
    _error(env.http.post(url, json=body), 400)


def test_too_large_body_is_413(env: Env) -> None:
    limit = env.proxy.config.max_request_bytes
    assert limit == MAX_REQUEST_BYTES
    url = f"/v3/clusters/{env.cluster_id}/brokers/{env.node_id}/configs:alter"
    r = env.http.post(url, content=b" " * (limit + 1), headers={"Content-Type": "application/json"})
    _error(r, 413)


# ------------------------------------------------------------------ cluster-wide broker configs
def test_cluster_wide_broker_configs(env: Env) -> None:
    r = env.http.get(f"/v3/clusters/{env.cluster_id}/broker-configs")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["kind"] == "KafkaClusterConfigList"
    assert body["metadata"] == {"self": f"{env.base}/broker-configs", "next": None}
    # Kafka's default BROKER resource lists only the configs set at that level: Zurau has none.
    zurau = _zurau_describe(env.broker.bootstrap_servers, ConfigResource(ResourceType.BROKER, ""))
    assert [c["name"] for c in body["data"]] == sorted(e.name for e in zurau) == []
    message = _error(env.http.get(f"/v3/clusters/{env.cluster_id}/broker-configs/num.partitions"), 404)
    assert "num.partitions" in message


def test_cluster_wide_changes_are_refused_with_the_brokers_message(env: Env) -> None:
    url = f"/v3/clusters/{env.cluster_id}/broker-configs"
    answers = [
        env.http.put(f"{url}/num.partitions", json={"value": "7"}),
        env.http.post(f"{url}:alter", json={"data": [{"name": "num.partitions", "value": "7"}]}),
        env.http.post(f"{url}:alter", json={"data": [{"name": "num.partitions", "value": "8"}],
                                            "validate_only": True}),
    ]
    for r in answers:
        message = _error(r, 400)
        assert REFUSED in message and "INVALID_REQUEST" in message, message
    assert env.http.get(url).json()["data"] == []
    assert KafkaConfigSource(_kafka_broker_configs(env)["num.partitions"].source).name == "DEFAULT_CONFIG"
    # A null value is refused by the broker's own check, passed through as 400.
    r = env.http.put(f"{url}/num.partitions", json={})
    assert "Null value not supported" in _error(r, 400)


def test_methods_not_served_are_405_with_allow(env: Env) -> None:
    r = env.http.post(f"/v3/clusters/{env.cluster_id}/brokers/{env.node_id}/configs/num.partitions", json={})
    _error(r, 405)
    assert r.headers["allow"] == "DELETE, GET, HEAD, PUT"
    r = env.http.delete(f"/v3/clusters/{env.cluster_id}/brokers")
    _error(r, 405)
    r = env.http.get(f"/v3/clusters/{env.cluster_id}/broker-configs:alter")
    _error(r, 405)
    assert r.headers["allow"] == "POST"
