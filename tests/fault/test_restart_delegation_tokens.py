"""Delegation tokens survive restarts of node processes, and their expiry still holds, on three
combined nodes (:class:`~zurau.testing.cluster_process.ClusterProcesses`).

The nodes listen on ``SASL_PLAINTEXT`` (PLAIN for alice, SCRAM-SHA-256 for token logins) with
``delegation.token.secret.key`` and a 500 ms expiry check. alice creates a long-lived token, a
short one (max lifetime 45 s, past the first restart) and one she expires at once. Node 1 is stopped with SIGTERM and
started again, then node 2 killed with ``kill -9`` and started again; after each restart
confluent-kafka logs in to *every* node with the long token (user = token id, password = its
HMAC; each node knows the token from the replicated metadata log), produces to a topic with
replication factor 3 and ``min.insync.replicas=2``, and the expired token still fails everywhere.
Once the short token's max lifetime has passed, a login with it fails on every node and the active
controller's periodic check removes it: DescribeDelegationToken no longer lists it, after one
more ``kill -9`` and restart (of the active controller) too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.fault.test_elastic_cluster import active_controller
from zurau.client import ClientConfig
from zurau.client.delegation_token_admin import DelegationToken, DelegationTokenAdmin
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ALICE = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-pw"}
TOPIC = "tokens-restart"
CONFIGS: dict[str, Any] = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "connection.failed.authentication.delay.ms": "0",
    "delegation.token.secret.key": "restart-secret",
    "delegation.token.expiry.check.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "offsets.topic.num.partitions": "1",
    "metrics.http.listener": "",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterProcesses]:
    with ClusterProcesses(tmp_path / "cluster", security="SASL_PLAINTEXT", users={"alice": "alice-pw"}, **CONFIGS) as c:
        admin = AdminClient(dict(c.client_config("alice")))
        admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
        yield c


def _admin(c: ClusterProcesses) -> DelegationTokenAdmin:
    return DelegationTokenAdmin(ClientConfig.from_props({**ALICE, "bootstrap.servers": c.bootstrap_servers}))


def _token_props(bootstrap: str, token: DelegationToken) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": token.token_id,
        "sasl.password": token.hmac_base64,
    }


def _produce_as(c: ClusterProcesses, token: DelegationToken) -> None:
    errors: list[KafkaError | None] = []
    producer = Producer({**_token_props(c.bootstrap_servers, token), "message.timeout.ms": 20000})
    producer.produce(TOPIC, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(25)
    assert errors == [None]


def _nodes(c: ClusterProcesses) -> list[str]:
    """Each running node's own address, so that a login reaches that node and no other."""
    return [c.nodes[i].bootstrap_servers for i in c.broker_ids if c.nodes[i].running]


def _login_fails(bootstrap: str, token: DelegationToken) -> bool:
    """True when librdkafka reports an authentication error for a login with ``token`` at ``bootstrap``."""
    seen: list[KafkaError] = []
    consumer = Consumer({**_token_props(bootstrap, token), "group.id": "probe", "error_cb": seen.append})
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            consumer.poll(0.1)
            if any(e.code() == KafkaError._AUTHENTICATION for e in seen):
                return True
            try:
                consumer.list_topics(timeout=0.5)
                return False
            except Exception:
                continue
        raise AssertionError(f"no answer to a login: {seen}")
    finally:
        consumer.close()


def _described(c: ClusterProcesses) -> set[str]:
    async def run() -> set[str]:
        async with _admin(c) as admin:
            return {t.token_id for t in await admin.describe()}

    return asyncio.run(run())


def _everywhere(c: ClusterProcesses, token: DelegationToken) -> set[bool]:
    """Whether a login with ``token`` fails, for each running node (by node in the message)."""
    per_node = {node: _login_fails(node, token) for node in _nodes(c)}
    assert len(set(per_node.values())) == 1, per_node
    return set(per_node.values())


def test_tokens_survive_sigterm_and_kill9_and_still_expire(cluster: ClusterProcesses) -> None:
    async def create() -> tuple[DelegationToken, DelegationToken, DelegationToken]:
        async with _admin(cluster) as admin:
            long_token = await admin.create()
            short = await admin.create(max_lifetime_ms=45_000)  # outlives the first restart
            gone = await admin.create()
            await admin.expire(gone.hmac, -1)
            return long_token, short, gone

    long_token, short, gone = asyncio.run(create())
    _produce_as(cluster, long_token)
    assert _everywhere(cluster, gone) == {True}

    node1 = cluster.nodes[1]
    assert node1.stop() == 0, "node 1 did not exit cleanly on SIGTERM"
    node1.launch()
    node1.wait_ready(60)
    _produce_as(cluster, long_token)
    assert _everywhere(cluster, short) == {False} and _everywhere(cluster, gone) == {True}

    cluster.restart(2)  # kill -9, then start over the same data
    _produce_as(cluster, long_token)
    assert _everywhere(cluster, long_token) == {False} and _everywhere(cluster, gone) == {True}
    assert {long_token.token_id, short.token_id} <= _described(cluster)
    assert gone.token_id not in _described(cluster)

    time.sleep(max(0.0, short.max_timestamp_ms / 1000 - time.time()) + 0.2)
    assert _everywhere(cluster, short) == {True}
    deadline = time.monotonic() + 15
    while short.token_id in _described(cluster):
        assert time.monotonic() < deadline, "the expired token was not removed"
        time.sleep(0.2)
    cluster.restart(active_controller(AdminClient(dict(cluster.client_config("alice")))))
    assert _described(cluster) == {long_token.token_id}
    _produce_as(cluster, long_token)
    assert _everywhere(cluster, long_token) == {False}
