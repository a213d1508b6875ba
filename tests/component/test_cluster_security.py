"""Security between the nodes of a cluster: replication, transaction markers, Raft and broker
heartbeats over TLS and SASL (EmbeddedCluster with ``security=``), driven by confluent-kafka.

* SASL_SSL everywhere: both followers hold every acknowledged record (they fetched over
  SASL_SSL); a stopped leader's partition moves to a follower that holds them all; a transaction spanning partitions led by three nodes commits (its markers
  travel between brokers) and read_committed sees exactly its records.
* SSL with ``ssl.client.auth=required`` on the controller listener: the nodes present their
  certificates to each other, or the quorum would never form.
* A broker whose inter-broker login is wrong is refused by the leaders: it never replicates and
  leaves the ISR, while the others keep serving acks=all.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import INTERNAL_USER, EmbeddedCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

USERS = {"alice": "alice-secret"}
FAST = {
    "replica.lag.time.max.ms": "1500",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "50",
}


def _create(c: EmbeddedCluster, topic: str, partitions: int = 1, rf: int = 3, **configs: str) -> None:
    admin = AdminClient(c.client_config("alice") if c.users else c.client_config())
    futures = admin.create_topics([NewTopic(topic, partitions, rf, config=configs)])
    futures[topic].result(30)
    deadline = time.monotonic() + 30
    while not all(b is None or b.image.get(topic) is not None for b in c.brokers):
        assert time.monotonic() < deadline, "topic did not reach every node"
        time.sleep(0.02)


def _produce(props: dict[str, str], topic: str, values: list[bytes], **extra: Any) -> None:
    p = Producer({**props, "acks": "all", "enable.idempotence": True, "message.timeout.ms": 30_000, **extra})
    errors: list[Any] = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert p.flush(60) == 0
    assert errors == []


def _consume_all(props: dict[str, str], topic: str, expected: int, **extra: Any) -> list[bytes]:
    c = Consumer({**props, "group.id": f"g-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest", **extra})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m.value())
    finally:
        c.close()
    return got


def _leader(c: EmbeddedCluster, topic: str, index: int = 0) -> int:
    for b in c.brokers:
        if b is not None:
            t = b.image.get(topic)
            assert t is not None
            return int(t.partitions[index].leader)
    raise AssertionError("no node running")


def _isr(c: EmbeddedCluster, node: int, topic: str, index: int = 0) -> list[int]:
    t = c.node(node).image.get(topic)
    assert t is not None
    return list(t.partitions[index].isr)


def _replicated(c: EmbeddedCluster, topic: str, count: int, nodes: tuple[int, ...] = (1, 2, 3)) -> bool:
    logs = [c.node(n).replica_manager.get(topic, 0) for n in nodes]
    return all(lg is not None and lg.log_end_offset == count and lg.high_watermark == count for lg in logs)


def _wait(predicate: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in time"
        time.sleep(0.05)


def test_sasl_ssl_cluster_replicates_and_fails_over(tmp_path: Any) -> None:
    with EmbeddedCluster(3, tmp_path / "data", security="SASL_SSL", users=USERS, **FAST) as c:
        props = c.client_config("alice")
        _create(c, "secure", 1, 3, **{"min.insync.replicas": "2"})
        first = [f"a-{i}".encode() for i in range(200)]
        _produce(props, "secure", first)
        # Every replica holds every record: the followers fetched over SASL_SSL.
        _wait(lambda: _replicated(c, "secure", 200), "replication to both followers")

        leader = _leader(c, "secure")
        c.call(c.stop_node, leader)
        _wait(lambda: _leader(c, "secure") not in (leader, -1), "a new leader")
        survivors = tuple(b.node_id for b in c.brokers if b is not None)
        props = {**props, "bootstrap.servers": c.bootstrap_servers}
        second = [f"b-{i}".encode() for i in range(100)]
        _produce(props, "secure", second)
        _wait(lambda: _replicated(c, "secure", 300, survivors), "replication after the fail-over")
        assert _consume_all(props, "secure", 300) == first + second


def test_transaction_markers_travel_between_sasl_ssl_brokers(tmp_path: Any) -> None:
    with EmbeddedCluster(3, tmp_path / "data", security="SASL_SSL", users=USERS, **FAST) as c:
        props = c.client_config("alice")
        _create(c, "txn-out", 3, 3)
        leaders = {_leader(c, "txn-out", i) for i in range(3)}
        producer = Producer({**props, "transactional.id": "secure-txn", "acks": "all"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(30):
            producer.produce("txn-out", f"t-{i}".encode(), partition=i % 3)
        producer.commit_transaction(30)
        producer.begin_transaction()
        producer.produce("txn-out", b"aborted", partition=0)
        producer.abort_transaction(30)
        got = _consume_all(props, "txn-out", 30, **{"isolation.level": "read_committed"})
        assert sorted(got) == sorted(f"t-{i}".encode() for i in range(30))
        assert len(leaders) > 1, "the partitions should be led by several nodes"
        # The committed offsets end past the markers on every partition.
        consumer = Consumer({**props, "group.id": "probe", "isolation.level": "read_committed"})
        try:
            for i in range(3):
                low, high = consumer.get_watermark_offsets(TopicPartition("txn-out", i), timeout=10)
                assert high >= 10 + 1  # ten records and the commit marker at least
        finally:
            consumer.close()


def test_ssl_cluster_with_required_client_certificates_between_nodes(tmp_path: Any) -> None:
    configs = {"listener.name.controller.ssl.client.auth": "required", **FAST}
    with EmbeddedCluster(3, tmp_path / "data", security="SSL", **configs) as c:
        props = c.client_config()
        _create(c, "tls", 1, 3, **{"min.insync.replicas": "3"})
        values = [f"v-{i}".encode() for i in range(100)]
        _produce(props, "tls", values)
        assert _consume_all(props, "tls", 100) == values


def test_broker_with_a_wrong_inter_broker_password_never_replicates(tmp_path: Any) -> None:
    # Node 3 serves alice on its client listener but logs in to the other brokers with a wrong
    # password (its controller login is right, so it registers and is assigned replicas).
    jaas_key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    bad_login = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{INTERNAL_USER}" password="wrong" user_alice="{USERS["alice"]}";'
    )
    with EmbeddedCluster(
        3, tmp_path / "data", security="SASL_PLAINTEXT", users=USERS, node_configs={3: {jaas_key: bad_login}}, **FAST
    ) as c:
        props = c.client_config("alice")
        admin = AdminClient(props)
        admin.create_topics([NewTopic("guarded", 1, replica_assignment=[[1, 2, 3]], config={"min.insync.replicas": "2"})])[
            "guarded"
        ].result(30)
        _wait(lambda: all(b is None or b.image.get("guarded") is not None for b in c.brokers), "the topic everywhere")
        _wait(lambda: 3 not in _isr(c, 1, "guarded"), "node 3 leaving the ISR")
        values = [f"g-{i}".encode() for i in range(50)]
        _produce(props, "guarded", values)
        _wait(lambda: _replicated(c, "guarded", 50, (1, 2)), "replication to node 2")
        assert _consume_all(props, "guarded", 50) == values
        time.sleep(1.0)  # several fetch attempts of node 3
        follower = c.node(3).replica_manager.get("guarded", 0)
        assert follower is not None and follower.log_end_offset == 0
        assert 3 not in _isr(c, 1, "guarded")


def test_cluster_refuses_a_sasl_inter_broker_listener_without_a_mechanism(tmp_path: Any) -> None:
    with pytest.raises(Exception, match="sasl.mechanism.inter.broker.protocol"):
        EmbeddedCluster(
            3, tmp_path / "data", security="SASL_PLAINTEXT", users=USERS,
            **{"sasl.mechanism.inter.broker.protocol": "GSSAPI"},
        ).start()


def test_a_node_whose_controller_login_is_refused_says_so(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    bad_login = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{INTERNAL_USER}" password="wrong" user_alice="{USERS["alice"]}";'
    )
    c = EmbeddedCluster(
        3, tmp_path / "data", security="SASL_PLAINTEXT", users=USERS,
        node_configs={3: {"listener.name.controller.plain.sasl.jaas.config": bad_login,
                          "initial.broker.registration.timeout.ms": "4000"}},
    )
    with caplog.at_level("ERROR", logger="zurau.raft"), pytest.raises(TimeoutError, match="broker 3 did not register"):
        c.start()
    c.stop()
    refused = [r.getMessage() for r in caplog.records if "refused this node's login on its controller listener" in r.getMessage()]
    assert any(m.startswith("raft node 3:") and "Invalid username or password" in m for m in refused)
