"""State derived from the metadata image stays right across restarts of cluster nodes (issue 27).

Three combined nodes (real processes, :class:`~zurau.testing.cluster_process.ClusterProcesses`)
on ``SASL_PLAINTEXT`` with the StandardAuthorizer, PLAIN and SCRAM-SHA-256, one cluster for the
whole module (each test makes its own topics, users and groups). Every check that matters is
asked of the restarted node itself, first thing once it serves clients again:

* **ACLs**: alice may do anything on ``rs-acl-*`` but is denied ``rs-acl-denied`` (a DENY beats
  the prefixed ALLOW); after a ``kill -9`` of the node her client uses (and the only replica of
  both topics), Metadata from that node, then confluent-kafka as alice through it: the allowed
  topic is read and written, the denied one fails with TOPIC_AUTHORIZATION_FAILED.
* **Client quotas**: a ``producer_byte_rate`` set with AlterClientQuotas is described by the
  restarted node and still throttles a Produce sent to it (``throttle_time_ms`` > 0).
* **SCRAM**: a user created with AlterUserScramCredentials logs in through the restarted node
  (raw SaslAuthenticate, then confluent-kafka producing to a topic that lives on that node only);
  a credential deleted before the restart stays deleted.
* **Coordinators**: a group's committed offsets and an open transaction survive a ``kill -9`` of
  the node coordinating both; once leadership is back on it (auto leader rebalance, 1 s), the
  restarted node answers OffsetFetch and DescribeTransactions as before, and the producer commits
  its transaction.
* **Producer ids**: after every node is killed and started again at once, InitProducerId on every
  node hands out only ids above all those handed out before; the ACL, SCRAM and quota state above
  holds on every node after that full restart too.

In process, no cluster: an authorizer that has not loaded the ACLs allows only super users (the
rule the controller listener needs before catch-up: a cluster node's authorizer completes its
initial load once the node has caught up). On the cluster: a user without CLUSTER_ACTION who can
log in to a controller listener cannot use it (admin requests there were not checked before).

The controller listener serves before the node's metadata has caught up (Raft needs it), so the
APIs a node answers from its own image are refused there until then: a node started alone after
every node was killed (its quorum has no leader, its image stays empty) answers neither Metadata
nor DescribeUserScramCredentials from that empty image, and answers both once the quorum is back
and it has caught up.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from zurau.broker.auth.authorizer import StandardAuthorizer
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.quota_admin import QuotaAdmin, QuotaAlteration
from zurau.client.security import ClientSecurity
from zurau.protocol import acl as zacl
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.records.builder import build_batch
from zurau.testing.broker_process import HOST, wait_for_port
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

T = TypeVar("T")

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SCRAM = "SCRAM-SHA-256"
OVERRIDES: dict[str, Any] = {  # Any: passed as keyword arguments (config names)
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:zurau-broker;User:admin",
    "sasl.enabled.mechanisms": f"PLAIN,{SCRAM}",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "100",
    "leader.imbalance.check.interval.seconds": "1",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.min.isr": "2",
}
TOPIC_AUTHORIZATION_FAILED = 29
READER_GROUPS = "rs-reader-"
CLUSTER_AUTHORIZATION_FAILED = 31
RETRIABLE = {7, 14, 15, 16, 51}  # timeout, load in progress, not available, not coordinator, concurrent txns


# --------------------------------------------------------------------------- the cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    c = ClusterProcesses(
        tmp_path_factory.mktemp("restart-derived-state"), 3, security="SASL_PLAINTEXT", users=USERS, **OVERRIDES
    ).start()
    try:
        # The readers' throwaway groups (confluent-kafka looks up a group's coordinator even for
        # assigned partitions).
        _create_acls(c, [AclBinding(ResourceType.GROUP, READER_GROUPS, ResourcePatternType.PREFIXED, "User:*", "*",
                                    AclOperation.READ, AclPermissionType.ALLOW)])
        yield c
    finally:
        c.stop()


@pytest.fixture(autouse=True)
def _every_node_up(cluster: ClusterProcesses) -> Iterator[None]:
    """Each test starts with all three nodes serving (a failed test may have left one down)."""
    _start_stopped(cluster)
    yield


def _start_stopped(c: ClusterProcesses, timeout: float = 60.0) -> None:
    """Launch every node that is not running, then wait until each serves clients."""
    for node in c.nodes.values():
        if not node.running:
            node.launch()
    for node in c.nodes.values():
        node.wait_ready(timeout)


def _address(c: ClusterProcesses, node_id: int) -> str:
    return c.nodes[node_id].bootstrap_servers


def _props(c: ClusterProcesses, user: str, node_id: int | None = None, **extra: str) -> dict[str, str]:
    """confluent-kafka properties as ``user`` (PLAIN), bootstrapped at ``node_id`` only if given."""
    props = {**c.client_config(user), "socket.timeout.ms": "10000", **extra}
    if node_id is not None:
        props["bootstrap.servers"] = _address(c, node_id)
    return props


def _admin(c: ClusterProcesses) -> AdminClient:
    props: dict[str, str | int | float | bool] = {**_props(c, "admin")}
    return AdminClient(props)


def _security(user: str, password: str, mechanism: str = "PLAIN") -> ClientSecurity:
    return ClientSecurity.from_props({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": user, "sasl.password": password,
    })


async def _connect(port: int, user: str, password: str | None = None, mechanism: str = "PLAIN") -> BrokerConnection:
    security = _security(user, password if password is not None else USERS[user], mechanism)
    return await BrokerConnection(HOST, port, security=security, request_timeout=10).connect(5)


async def _ask(port: int, user: str, api_key: int, body: dict[str, Any], version: int | None = None) -> dict[str, Any]:
    """One request as ``user`` (PLAIN) to 127.0.0.1:``port`` over a connection of its own."""
    conn = await _connect(port, user)
    try:
        return await conn.request(api_key, body, version=version)
    finally:
        await conn.close()


async def _eventually(check: Callable[[], Awaitable[T]], what: str, timeout: float = 30.0) -> T:
    """``check()``'s result once it returns without raising (AssertionError or a client error)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await check()
        except Exception as e:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still failing after {timeout:.0f} s: {e!r}") from e
        await asyncio.sleep(0.2)


def _kill_9_and_restart(c: ClusterProcesses, node_id: int) -> float:
    """``kill -9`` one node, start it over its data; seconds until it served clients again."""
    started = time.monotonic()
    c.restart(node_id)
    return time.monotonic() - started


def _create_topics(c: ClusterProcesses, topics: list[NewTopic]) -> None:
    admin = _admin(c)  # referenced until the futures are done: a collected client fails them
    for fut in admin.create_topics(topics, operation_timeout=30).values():
        fut.result(60)


def _allow_all(c: ClusterProcesses, topic: str, user: str) -> None:
    _create_acls(c, [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{user}", "*",
                                AclOperation.ALL, AclPermissionType.ALLOW)])


def _create_acls(c: ClusterProcesses, bindings: list[AclBinding]) -> None:
    admin = _admin(c)
    for fut in admin.create_acls(bindings).values():
        fut.result(30)


def _alter_scram(c: ClusterProcesses, alterations: list[UserScramCredentialAlteration]) -> None:
    admin = _admin(c)
    for fut in admin.alter_user_scram_credentials(alterations).values():
        fut.result(30)


def _produce(props: dict[str, str], topic: str, values: list[bytes], timeout: float = 30.0) -> list[KafkaError | None]:
    """Produce ``values`` with confluent-kafka; the delivery error of each (None: delivered)."""
    producer = Producer({**props, "message.timeout.ms": str(int(timeout * 1000)), "linger.ms": "0"})
    errors: list[KafkaError | None] = []
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(timeout + 5)
    assert len(errors) == len(values), f"{len(values) - len(errors)} deliveries never reported"
    return errors


def _consume_all(props: dict[str, str], topic: str, partitions: int, expected: int, timeout: float = 30.0) -> list[bytes]:
    """Read ``topic`` from the start (assigned, no group) until ``expected`` records or timeout."""
    from confluent_kafka import TopicPartition

    consumer = Consumer({**props, "group.id": f"{READER_GROUPS}{uuid.uuid4().hex[:8]}", "enable.auto.commit": "false",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error, value = msg.error(), msg.value()
            assert error is None or error.code() == KafkaError._PARTITION_EOF, error
            if error is None and value is not None:
                out.append(value)
        return out
    finally:
        consumer.close()


async def _topic_errors(port: int, user: str, topics: list[str]) -> dict[str, int]:
    """Metadata for ``topics`` as ``user``: the error code of each, as the node at ``port`` decides it."""
    md = await _ask(port, user, ApiKey.METADATA, {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False})
    return {t["name"]: t["error_code"] for t in md["topics"]}


async def _scram_login(port: int, user: str, password: str) -> None:
    """Log in with SCRAM-SHA-256 and ask for ApiVersions-free Metadata; raises if refused."""
    conn = await _connect(port, user, password, SCRAM)
    try:
        await conn.request(ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False})
    finally:
        await conn.close()


async def _quotas_of(port: int, user: str) -> dict[str, float]:
    """The quota values of entity ``user=<user>`` as the node at ``port`` describes them."""
    body = {"components": [{"entity_type": "user", "match_type": 0, "match": user}], "strict": True}
    resp = await _ask(port, "admin", ApiKey.DESCRIBE_CLIENT_QUOTAS, body)
    assert resp["error_code"] == 0, resp
    return {v["key"]: v["value"] for e in resp["entries"] or [] for v in e["values"]}


# --------------------------------------------------------------------------- ACLs


async def test_acls_survive_a_kill_9_of_the_node_the_client_uses(cluster: ClusterProcesses) -> None:
    c, node = cluster, 2
    allowed, denied = "rs-acl-allowed", "rs-acl-denied"
    _create_topics(c, [NewTopic(t, 1, replica_assignment=[[node]]) for t in (allowed, denied)])
    bindings = [
        AclBinding(ResourceType.TOPIC, "rs-acl-", ResourcePatternType.PREFIXED, "User:alice", "*",
                   AclOperation.ALL, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, denied, ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.ALL, AclPermissionType.DENY),
    ]
    _create_acls(c, bindings)
    port = c.nodes[node].port

    async def in_force() -> None:
        assert await _topic_errors(port, "alice", [allowed, denied]) == {allowed: 0, denied: TOPIC_AUTHORIZATION_FAILED}

    await _eventually(in_force, f"the ACLs in force on node {node}")
    alice = _props(c, "alice", node)
    assert _produce(alice, allowed, [b"before"]) == [None]

    took = _kill_9_and_restart(c, node)
    # First thing the restarted node serves: its ACLs already hold (no retry).
    assert await _topic_errors(port, "alice", [allowed, denied]) == {allowed: 0, denied: TOPIC_AUTHORIZATION_FAILED}
    assert await _topic_errors(port, "bob", [allowed]) == {allowed: TOPIC_AUTHORIZATION_FAILED}
    errors = _produce(alice, denied, [b"no"], timeout=15)
    assert errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors
    assert _produce(alice, allowed, [b"after"]) == [None]
    assert _consume_all(alice, allowed, 1, 2) == [b"before", b"after"]
    print(f"node {node} served clients again {took:.1f} s after kill -9")


# --------------------------------------------------------------------------- client quotas


async def _produce_throttle_ms(port: int, user: str, topic: str, payload: int) -> int:
    """Send one Produce of ``payload`` bytes as ``user`` to the node at ``port``; its throttle time."""
    batch = build_batch([(None, b"x" * payload, (), int(time.time() * 1000))])
    body = {
        "transactional_id": None, "acks": 1, "timeout_ms": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    resp = await _ask(port, user, ApiKey.PRODUCE, body, 9)  # v9: topics by name (v13 names them by id)
    errors = [p["error_code"] for t in resp["responses"] for p in t["partition_responses"]]
    assert errors == [0], errors
    return int(resp["throttle_time_ms"])


async def test_a_produce_quota_still_throttles_after_a_kill_9(cluster: ClusterProcesses) -> None:
    c, node = cluster, 3
    topic = "rs-quota-t"
    _create_topics(c, [NewTopic(topic, 1, replica_assignment=[[node]])])
    _allow_all(c, topic, "bob")
    async with QuotaAdmin(ClientConfig.from_props(_props(c, "admin"))) as quotas:
        [(_entity, error)] = await quotas.alter([QuotaAlteration({"user": "bob"}, {"producer_byte_rate": 1024.0})])
        assert error is None
    port = c.nodes[node].port

    async def throttled() -> None:
        assert await _quotas_of(port, "bob") == {"producer_byte_rate": 1024.0}
        assert await _produce_throttle_ms(port, "bob", topic, 32 * 1024) > 0

    await _eventually(throttled, f"bob's quota in force on node {node}")

    _kill_9_and_restart(c, node)
    assert await _quotas_of(port, "bob") == {"producer_byte_rate": 1024.0}
    throttle = await _produce_throttle_ms(port, "bob", topic, 32 * 1024)
    assert throttle > 0, "the restarted node no longer throttles bob's produce quota"
    # Someone without a quota is not throttled: the throttle above is bob's quota, not the restart.
    _allow_all(c, topic, "alice")

    async def alice_unthrottled() -> None:
        assert await _produce_throttle_ms(port, "alice", topic, 32 * 1024) == 0

    await _eventually(alice_unthrottled, "alice produces unthrottled")


# --------------------------------------------------------------------------- SCRAM


async def test_scram_credentials_log_in_through_a_restarted_node(cluster: ClusterProcesses) -> None:
    c, node = cluster, 1
    topic = "rs-scram-t"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    _alter_scram(c, [
        UserScramCredentialUpsertion("carol", info, b"carol-secret"),
        UserScramCredentialUpsertion("dave", info, b"dave-secret"),
    ])
    _alter_scram(c, [UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_256)])
    _create_topics(c, [NewTopic(topic, 1, replica_assignment=[[node]])])
    _allow_all(c, topic, "carol")
    port = c.nodes[node].port
    await _eventually(lambda: _scram_login(port, "carol", "carol-secret"), f"carol logs in to node {node}")

    _kill_9_and_restart(c, node)
    await _scram_login(port, "carol", "carol-secret")  # at once: no retry
    with pytest.raises(Exception, match="Authentication failed"):
        await _scram_login(port, "dave", "dave-secret")
    with pytest.raises(Exception, match="Authentication failed"):
        await _scram_login(port, "carol", "wrong-secret")
    carol = {
        "bootstrap.servers": _address(c, node), "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": SCRAM,
        "sasl.username": "carol", "sasl.password": "carol-secret",
    }
    assert _produce(carol, topic, [b"carol was here"]) == [None]
    assert _consume_all(carol, topic, 1, 1) == [b"carol was here"]


# --------------------------------------------------------------------------- coordinators


async def _coordinator(port: int, key_type: int, key: str) -> int:
    resp = await _ask(port, "admin", ApiKey.FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": [key]}, 4)
    entry = resp["coordinators"][0]
    assert entry["error_code"] == 0, entry
    return int(entry["node_id"])


async def _committed(port: int, group: str, topic: str, partitions: int) -> dict[int, int]:
    body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": list(range(partitions))}],
            "require_stable": False}
    resp = await _ask(port, "admin", ApiKey.OFFSET_FETCH, body, 7)
    assert resp["error_code"] == 0, resp
    parts = resp["topics"][0]["partitions"]
    assert all(p["error_code"] == 0 for p in parts), parts
    return {p["partition_index"]: p["committed_offset"] for p in parts}


async def _transaction(port: int, transactional_id: str) -> dict[str, Any]:
    resp = await _ask(port, "admin", ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]}, 0)
    state = resp["transaction_states"][0]
    assert state["error_code"] == 0, state
    return {
        "state": state["transaction_state"],
        "producer_id": state["producer_id"],
        "producer_epoch": state["producer_epoch"],
        "partitions": sorted((t["topic"], p) for t in state["topics"] for p in t["partitions"]),
    }


def _wait_balanced(c: ClusterProcesses, timeout: float = 45.0) -> None:
    """Until every partition is led by its preferred replica with all three in sync (the earlier
    restarts moved leaderships away; the auto leader rebalance brings them back)."""
    admin = _admin(c)
    deadline = time.monotonic() + timeout
    while True:
        topics = admin.list_topics(timeout=10).topics
        off = [f"{t}-{p}" for t, md in topics.items() for p, pm in md.partitions.items()
               if not pm.replicas or pm.leader != pm.replicas[0] or len(pm.isrs) != len(pm.replicas)]
        if not off:
            return
        assert time.monotonic() < deadline, f"partitions not back on their preferred leaders: {off}"
        time.sleep(0.2)


async def test_group_offsets_and_an_open_transaction_survive_a_kill_9_of_their_coordinator(
    cluster: ClusterProcesses,
) -> None:
    from confluent_kafka import TopicPartition

    c = cluster
    topic, partitions = "rs-coord-t", 3
    _create_topics(c, [NewTopic(topic, partitions, 3)])
    any_port = c.nodes[1].port
    group = f"rs-group-{uuid.uuid4().hex[:8]}"
    await _eventually(lambda: _coordinator(any_port, 1, "rs-txn-0"), "a transaction coordinator")  # topics exist
    _wait_balanced(c)
    coordinator = await _eventually(lambda: _coordinator(any_port, 0, group), "the group's coordinator")
    # A transactional id coordinated by the same node: one kill -9 covers both coordinators.
    transactional_id = ""
    for i in range(200):
        candidate = f"rs-txn-{i}"
        lookup = functools.partial(_coordinator, any_port, 1, candidate)
        if await _eventually(lookup, "a transaction coordinator") == coordinator:
            transactional_id = candidate
            break
    assert transactional_id, f"no transactional id among 200 is coordinated by node {coordinator}"

    committed = {0: 5, 1: 17, 2: 42}
    consumer = Consumer({**_props(c, "admin"), "group.id": group, "enable.auto.commit": "false"})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in committed.items()], asynchronous=False)
    finally:
        consumer.close()

    producer = Producer({**_props(c, "admin"), "transactional.id": transactional_id, "linger.ms": "0"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"committed-{i}".encode(), partition=i)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"open-{i}".encode(), partition=i)
    producer.flush(30)

    port = c.nodes[coordinator].port
    assert await _committed(port, group, topic, partitions) == committed
    before = await _eventually(lambda: _transaction(port, transactional_id), "the open transaction described")
    assert before["state"] == "Ongoing" and before["partitions"] == [(topic, 0), (topic, 1)], before

    took = _kill_9_and_restart(c, coordinator)

    async def back_on_the_restarted_node() -> None:
        assert await _coordinator(port, 0, group) == coordinator
        assert await _coordinator(port, 1, transactional_id) == coordinator

    # Leadership of both internal partitions returns to their preferred replica (leader rebalance).
    await _eventually(back_on_the_restarted_node, f"node {coordinator} coordinating again", timeout=45)
    assert await _eventually(lambda: _committed(port, group, topic, partitions), "offsets from the restarted node") == committed
    after = await _eventually(lambda: _transaction(port, transactional_id), "the transaction from the restarted node")
    assert after == before, f"the open transaction changed across the restart: {before} -> {after}"
    producer.commit_transaction(60)
    values = _consume_all({**_props(c, "admin"), "isolation.level": "read_committed"}, topic, partitions, 5)
    assert sorted(values) == sorted([b"committed-0", b"committed-1", b"committed-2", b"open-0", b"open-1"])

    async def complete() -> None:
        assert (await _transaction(port, transactional_id))["state"] in ("CompleteCommit", "Empty")

    await _eventually(complete, "the transaction completed on the restarted coordinator", timeout=20)
    print(f"coordinator node {coordinator} served clients again {took:.1f} s after kill -9")


# --------------------------------------------------------------------------- producer ids (every node)


async def _producer_ids(port: int, count: int) -> list[int]:
    """``count`` idempotent producer ids from the node at ``port`` (InitProducerId, no transactional id)."""
    out: list[int] = []
    body = {"transactional_id": None, "transaction_timeout_ms": -1, "producer_id": -1, "producer_epoch": -1}
    deadline = time.monotonic() + 30
    while len(out) < count:
        resp = await _ask(port, "admin", ApiKey.INIT_PRODUCER_ID, body, 4)
        if resp["error_code"] == 0:
            out.append(int(resp["producer_id"]))
            continue
        assert resp["error_code"] in RETRIABLE and time.monotonic() < deadline, resp
        await asyncio.sleep(0.1)
    return out


async def test_a_restart_of_every_node_reuses_no_producer_id_and_keeps_security_state(
    cluster: ClusterProcesses,
) -> None:
    c = cluster
    topic = "rs-full-denied"
    _create_topics(c, [NewTopic(topic, 1, 3)])
    _create_acls(c, [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                                AclOperation.ALL, AclPermissionType.DENY)])
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    _alter_scram(c, [UserScramCredentialUpsertion("erin", info, b"erin-secret")])
    async with QuotaAdmin(ClientConfig.from_props(_props(c, "admin"))) as quotas:
        [(_entity, error)] = await quotas.alter([QuotaAlteration({"user": "erin"}, {"consumer_byte_rate": 4096.0})])
        assert error is None

    async def state_holds(node_id: int) -> None:
        port = c.nodes[node_id].port
        assert await _topic_errors(port, "alice", [topic]) == {topic: TOPIC_AUTHORIZATION_FAILED}
        await _scram_login(port, "erin", "erin-secret")
        assert await _quotas_of(port, "erin") == {"consumer_byte_rate": 4096.0}

    for node_id in c.broker_ids:
        await _eventually(functools.partial(state_holds, node_id), f"the security state on node {node_id}")
    before = [pid for n in c.broker_ids for pid in await _producer_ids(c.nodes[n].port, 3)]
    assert len(set(before)) == len(before), f"ids handed out twice before any restart: {sorted(before)}"

    c.kill_all()
    started = time.monotonic()
    _start_stopped(c)
    took = time.monotonic() - started
    for node_id in c.broker_ids:
        await state_holds(node_id)  # the first answers after the full restart are right
    after = [pid for n in c.broker_ids for pid in await _producer_ids(c.nodes[n].port, 3)]
    assert len(set(after)) == len(after), f"ids handed out twice after the restart: {sorted(after)}"
    assert not set(before) & set(after), f"ids handed out again after a restart of every node: {set(before) & set(after)}"
    assert min(after) > max(before), f"a block below an earlier one was handed out: {sorted(before)} then {sorted(after)}"
    print(f"every node killed and started again; all served clients after {took:.1f} s")


# --------------------------------------------------------------------------- the authorizer before catch-up


def test_an_authorizer_that_has_not_loaded_the_acls_allows_only_super_users() -> None:
    """The rule the controller listener needs (Kafka's AuthorizerNotReadyException): until the
    image has caught up, neither its ACLs nor allow.everyone.if.no.acl.found decide. In process;
    a cluster node is wired so (app.py: ``loaded=False``, ``complete_initial_load()`` once caught
    up)."""
    deny = zacl.AclBinding(zacl.ResourceType.CLUSTER, zacl.CLUSTER_NAME, zacl.PatternType.LITERAL, "User:alice", "*",
                           zacl.AclOperation.CLUSTER_ACTION, zacl.AclPermissionType.DENY)
    acls: dict[uuid.UUID, zacl.AclBinding] = {}
    a = StandardAuthorizer(lambda: acls, frozenset({"User:zurau-broker"}), True, loaded=False)

    def may(principal: str) -> bool:
        return a.authorize(principal, "127.0.0.1", zacl.AclOperation.CLUSTER_ACTION, zacl.ResourceType.CLUSTER,
                           zacl.CLUSTER_NAME)

    assert may("User:zurau-broker")
    assert not may("User:alice"), "an empty, not yet replayed ACL set allowed everyone"
    assert not a.authorize_any("User:alice", "127.0.0.1", zacl.AclOperation.WRITE, zacl.ResourceType.TOPIC)
    acls[uuid.uuid4()] = deny  # the image catches up: alice has a DENY
    a.complete_initial_load()
    assert a.loaded and not may("User:alice")
    # A topic no binding applies to: allow.everyone.if.no.acl.found decides again.
    assert a.authorize("User:bob", "127.0.0.1", zacl.AclOperation.WRITE, zacl.ResourceType.TOPIC, "t")


# --------------------------------------------------------------------------- what is still wrong


async def test_the_controller_listener_does_not_answer_from_an_image_that_has_not_caught_up(
    cluster: ClusterProcesses,
) -> None:
    """Every node killed, one started alone: it can elect no leader, so its image stays what its
    own log had committed at start-up (here: nothing, there being no snapshot), while its
    controller listener serves. What it answers there must not be that empty image."""
    c = cluster
    topic = "rs-early-t"
    _create_topics(c, [NewTopic(topic, 1, 3)])
    _alter_scram(c, [UserScramCredentialUpsertion("frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"f")])
    c.kill_all()
    lone = c.nodes[c.controller_ids[0]]
    assert lone.controller_port is not None
    lone.launch()
    answers: dict[str, Any] = {}
    try:
        wait_for_port(lone.controller_port, 30, lone.proc)
        await asyncio.sleep(1.0)  # give it every chance: it still has no leader to catch up from
        port = lone.controller_port
        try:
            md = await _ask(port, "admin", ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False})
            answers["metadata topics"] = sorted(t["name"] for t in md["topics"])
        except Exception as e:  # refusing to answer is right
            answers["metadata topics"] = repr(e)
        try:
            users = await _ask(port, "admin", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": None})
            answers["scram users"] = users["error_code"] or sorted(r["user"] for r in users["results"])
        except Exception as e:
            answers["scram users"] = repr(e)
        try:  # no SCRAM credential is known there before catch-up
            await (await _connect(port, "frank", "f", SCRAM)).close()
            answers["frank's login"] = ["accepted"]
        except Exception:  # noqa: BLE001 - refused is right
            pass
    finally:
        _start_stopped(c)
    wrong = {k: v for k, v in answers.items() if isinstance(v, list) and topic not in v and "frank" not in v}
    assert not wrong, f"answered from a metadata image that has not caught up: {wrong}"

    # Once the quorum is back and the node has caught up, its controller listener answers again.
    async def answered() -> bool:
        try:
            md = await _ask(port, "admin", ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False})
            users = await _ask(port, "admin", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": None})
            await (await _connect(port, "frank", "f", SCRAM)).close()  # and frank logs in there
        except Exception:  # noqa: BLE001 - refused until caught up
            return False
        return topic in {t["name"] for t in md["topics"]} and "frank" in {r["user"] for r in users["results"]}

    deadline = time.monotonic() + 60
    while not await answered():
        assert time.monotonic() < deadline, "the controller listener never answered after catch-up"
        await asyncio.sleep(0.5)


async def test_a_user_cannot_change_quotas_through_a_controller_listener(cluster: ClusterProcesses) -> None:
    """alice (no ACL at all on the cluster) on every node's controller listener: AlterClientQuotas
    with validate_only (changes nothing even when allowed). Only the cluster's nodes (CLUSTER_ACTION)
    may use a controller listener: the node closes alice's connection (it answered 0 before)."""
    c = cluster
    body = {"entries": [{"entity": [{"entity_type": "user", "entity_name": "alice"}],
                         "ops": [{"key": "producer_byte_rate", "value": 1e12, "remove": False}]}],
            "validate_only": True}
    codes = {}
    for node_id in c.controller_ids:
        port = c.nodes[node_id].controller_port
        assert port is not None
        try:
            resp = await _ask(port, "alice", ApiKey.ALTER_CLIENT_QUOTAS, body)
            codes[node_id] = resp["entries"][0]["error_code"]
        except Exception as e:  # the connection is closed
            codes[node_id] = type(e).__name__
    assert 0 not in codes.values(), f"alice altered client quotas through a controller listener: {codes}"
    assert all(isinstance(code, str) or code == CLUSTER_AUTHORIZATION_FAILED for code in codes.values()), codes
    log_text = "".join(c.nodes[i].log_text() for i in c.controller_ids)
    assert "sent AlterClientQuotas on controller listener" in log_text

