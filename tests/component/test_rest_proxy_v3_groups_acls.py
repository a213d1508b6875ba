"""The REST proxy's v3 consumer groups and ACLs against one embedded broker with an authorizer.

Groups are made by real confluent-kafka (librdkafka) consumers: a classic group with a static
and a dynamic member, a KIP-848 group (``group.protocol=consumer``) and a "simple" group that
only commits; their members, assignments and exact lags (committed offsets chosen by the test)
are read over HTTP. ACLs are created, searched and deleted over HTTP and checked with Zurau's
AclAdmin. The broker runs StandardAuthorizer with ``User:ANONYMOUS`` (every PLAINTEXT
connection) as super user, so that its ACL APIs work and nothing else is refused.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import confluent_kafka as ck
import httpx
import pytest

from zurau.client.acl_admin import AclAdmin
from zurau.client.config import ClientConfig
from zurau.embedded import EmbeddedBroker
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy

BROKER_SETTINGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}


class Env:
    def __init__(self, broker: EmbeddedBroker, proxy: EmbeddedRestProxy, cluster_id: str) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap_servers
        self.url = proxy.url
        self.cluster_id = cluster_id
        self.http = httpx.Client(base_url=proxy.url, timeout=20)

    def v3(self, path: str = "") -> str:
        """The absolute v3 URL of ``path`` under this cluster (as ``metadata.self`` spells it)."""
        return f"{self.url}/v3/clusters/{self.cluster_id}{path}"

    def get(self, path: str, **params: str) -> httpx.Response:
        return self.http.get(self.v3(path), params=params)

    def ok(self, path: str, **params: str) -> Any:
        r = self.get(path, **params)
        assert r.status_code == 200, (path, r.status_code, r.text)
        return r.json()

    def error(self, r: httpx.Response, status: int, code: int | None = None) -> str:
        assert r.status_code == status, (r.status_code, r.text)
        body = r.json()
        assert set(body) == {"error_code", "message"}, body
        assert body["error_code"] == (status if code is None else code), body
        return str(body["message"])


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with EmbeddedBroker(**BROKER_SETTINGS) as broker, EmbeddedRestProxy(broker.bootstrap_servers) as proxy:
        meta = ck.Producer({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
        e = Env(broker, proxy, meta.cluster_id)
        yield e
        e.http.close()


def q(segment: str) -> str:
    """A path segment, percent-encoded (KIP-848 member ids are base64 and may hold ``/``)."""
    return quote(segment, safe="")


def new_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_topic(env: Env, partitions: int, counts: dict[int, int]) -> str:
    name = new_name("t")
    env.broker.create_topic(name, partitions)
    p = ck.Producer({"bootstrap.servers": env.bootstrap, "log_level": 0})
    for partition, n in counts.items():
        for i in range(n):
            p.produce(name, f"v{i}".encode(), partition=partition)
    assert p.flush(20) == 0
    return name


def consumer(env: Env, group: str, protocol: str = "classic", **conf: str) -> Any:
    c = ck.Consumer(
        {
            "bootstrap.servers": env.bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 0,
            **conf,
        }
    )
    return c


def poll_until(members: list[Any], done: Any, what: str, timeout: float = 25) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, what
        for m in members:
            m.poll(0.05)


def owned(c: Any) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def consume_and_commit(c: Any, topic: str, offsets: dict[int, int]) -> None:
    """Read what ``c`` owns for a moment (a real consumer at work), then commit ``offsets``."""
    c.consume(num_messages=100, timeout=0.5)
    c.commit(offsets=[ck.TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def wait_group(env: Env, group: str, state: str, members: int, poll: tuple[Any, ...] = (), timeout: float = 25) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        r = env.get(f"/consumer-groups/{group}")
        if r.status_code == 200:
            body = r.json()
            consumers = env.ok(f"/consumer-groups/{group}/consumers")["data"]
            if body["state"] == state and len(consumers) == members:
                return body
        assert time.monotonic() < deadline, f"{group}: {r.status_code} {r.text}"
        for m in poll:
            m.poll(0.05)
        time.sleep(0.05)


def lag_doc(env: Env, group: str, topic: str, partition: int, current: int, end: int, owner: Any) -> dict[str, Any]:
    """The KafkaConsumerLag the proxy must answer (``owner``: the confluent-kafka consumer or None)."""
    member_id = owner[0] if owner else ""
    return {
        "kind": "KafkaConsumerLag",
        "metadata": {
            "self": env.v3(f"/consumer-groups/{q(group)}/lags/{topic}/partitions/{partition}"),
            "resource_name": f"crn:///kafka={env.cluster_id}/consumer-group={group}/lag={topic}/partition={partition}",
        },
        "cluster_id": env.cluster_id,
        "consumer_group_id": group,
        "topic_name": topic,
        "partition_id": partition,
        "current_offset": current,
        "log_end_offset": end,
        "lag": end - current,
        "consumer_id": member_id,
        "instance_id": owner[1] if owner else None,
        "client_id": owner[2] if owner else "",
    }


# ---------------------------------------------------------------------------- consumer groups
def test_classic_group_members_assignments_and_exact_lags(env: Env) -> None:
    ends = {0: 10, 1: 5, 2: 3}
    topic = make_topic(env, 3, ends)
    group = new_name("classic")
    static = consumer(env, group, **{"client.id": "static-client", "group.instance.id": "inst-1"})
    dynamic = consumer(env, group, **{"client.id": "dyn-client"})
    static.subscribe([topic])
    dynamic.subscribe([topic])
    try:
        poll_until(
            [static, dynamic],
            lambda: len(owned(static)) + len(owned(dynamic)) == 3 and owned(static) and owned(dynamic),
            "the two members never shared the three partitions",
        )
        group_doc = wait_group(env, group, "STABLE", 2, poll=(static, dynamic))
        members = {static.memberid(): static, dynamic.memberid(): dynamic}
        assert group_doc == {
            "kind": "KafkaConsumerGroup",
            "metadata": {
                "self": env.v3(f"/consumer-groups/{group}"),
                "resource_name": f"crn:///kafka={env.cluster_id}/consumer-group={group}",
            },
            "cluster_id": env.cluster_id,
            "consumer_group_id": group,
            "is_simple": False,
            "partition_assignor": "range",
            "state": "STABLE",
            "type": "CLASSIC",
            "is_mixed_consumer_group": False,
            "coordinator": {"related": env.v3(f"/brokers/{group_doc['coordinator']['related'].rsplit('/', 1)[1]}")},
            "consumers": {"related": env.v3(f"/consumer-groups/{group}/consumers")},
            "lag_summary": {"related": env.v3(f"/consumer-groups/{group}/lag-summary")},
        }
        assert group_doc["coordinator"]["related"].endswith("/brokers/1")

        listed = env.ok("/consumer-groups")
        assert listed["kind"] == "KafkaConsumerGroupList"
        assert listed["metadata"] == {"self": env.v3("/consumer-groups"), "next": None}
        assert [g for g in listed["data"] if g["consumer_group_id"] == group] == [group_doc]
        ids = [g["consumer_group_id"] for g in listed["data"]]
        assert ids == sorted(ids)

        consumers = env.ok(f"/consumer-groups/{group}/consumers")
        assert consumers["kind"] == "KafkaConsumerList"
        assert consumers["metadata"]["self"] == env.v3(f"/consumer-groups/{group}/consumers")
        assert sorted(c["consumer_id"] for c in consumers["data"]) == sorted(members)
        by_id = {c["consumer_id"]: c for c in consumers["data"]}
        sid = static.memberid()
        assert by_id[sid] == {
            "kind": "KafkaConsumer",
            "metadata": {
                "self": env.v3(f"/consumer-groups/{group}/consumers/{quote(sid, safe='')}"),
                "resource_name": f"crn:///kafka={env.cluster_id}/consumer-group={group}/consumer={sid}",
            },
            "cluster_id": env.cluster_id,
            "consumer_group_id": group,
            "consumer_id": sid,
            "instance_id": "inst-1",
            "client_id": "static-client",
            "assignments": {"related": env.v3(f"/consumer-groups/{group}/consumers/{quote(sid, safe='')}/assignments")},
        }
        assert by_id[dynamic.memberid()]["instance_id"] is None
        assert by_id[dynamic.memberid()]["client_id"] == "dyn-client"
        for mid in members:
            assert env.ok(f"/consumer-groups/{group}/consumers/{q(mid)}") == by_id[mid]

        # Assignments: what each librdkafka consumer says it owns.
        for mid, c in members.items():
            got = env.ok(f"/consumer-groups/{group}/consumers/{q(mid)}/assignments")
            assert got["kind"] == "KafkaConsumerAssignmentList"
            assert [(a["topic_name"], a["partition_id"]) for a in got["data"]] == sorted(owned(c))
            first = got["data"][0]
            p = first["partition_id"]
            assert first == {
                "kind": "KafkaConsumerAssignment",
                "metadata": {
                    "self": env.v3(f"/consumer-groups/{group}/consumers/{quote(mid, safe='')}/assignments/{topic}/partitions/{p}"),
                    "resource_name": f"crn:///kafka={env.cluster_id}/consumer-group={group}/consumer={mid}"
                    f"/assignment={topic}/partition={p}",
                },
                "cluster_id": env.cluster_id,
                "consumer_group_id": group,
                "consumer_id": mid,
                "topic_name": topic,
                "partition_id": p,
                "partition": {"related": env.v3(f"/topics/{topic}/partitions/{p}")},
                "lag": {"related": env.v3(f"/consumer-groups/{group}/lags/{topic}/partitions/{p}")},
            }
            assert env.ok(f"/consumer-groups/{group}/consumers/{q(mid)}/assignments/{topic}/partitions/{p}") == first
            other = next(q for q in range(3) if (topic, q) not in owned(c))
            env.error(env.get(f"/consumer-groups/{group}/consumers/{q(mid)}/assignments/{topic}/partitions/{other}"), 404)

        # No commit yet: no lags (Confluent's proxy answers 404 too).
        env.error(env.get(f"/consumer-groups/{group}/lags"), 404)
        env.error(env.get(f"/consumer-groups/{group}/lag-summary"), 404)

        # Each member commits on the partitions it owns; partition 2 stays uncommitted.
        commits = {0: 4, 1: 5}
        owner_of = {p: mid for mid, c in members.items() for (_, p) in owned(c)}
        for mid, c in members.items():
            mine = {p: o for p, o in commits.items() if owner_of[p] == mid}
            if mine:
                consume_and_commit(c, topic, mine)
        info = {
            mid: (mid, "inst-1" if c is static else None, "static-client" if c is static else "dyn-client")
            for mid, c in members.items()
        }
        expected = [
            lag_doc(env, group, topic, 0, 4, 10, info[owner_of[0]]),
            lag_doc(env, group, topic, 1, 5, 5, info[owner_of[1]]),
        ]
        lags = env.ok(f"/consumer-groups/{group}/lags")
        assert lags == {
            "kind": "KafkaConsumerLagList",
            "metadata": {"self": env.v3(f"/consumer-groups/{group}/lags"), "next": None},
            "data": expected,
        }
        assert env.ok(f"/consumer-groups/{group}/lags/{topic}/partitions/0") == expected[0]
        env.error(env.get(f"/consumer-groups/{group}/lags/{topic}/partitions/2"), 404)  # never committed
        env.error(env.get(f"/consumer-groups/{group}/lags/{topic}/partitions/7"), 404)
        env.error(env.get(f"/consumer-groups/{group}/lags/{topic}/partitions/zero"), 400)

        summary = env.ok(f"/consumer-groups/{group}/lag-summary")
        top = info[owner_of[0]]
        assert summary == {
            "kind": "KafkaConsumerGroupLagSummary",
            "metadata": {
                "self": env.v3(f"/consumer-groups/{group}/lag-summary"),
                "resource_name": f"crn:///kafka={env.cluster_id}/consumer-group={group}/lag-summary",
            },
            "cluster_id": env.cluster_id,
            "consumer_group_id": group,
            "max_lag_consumer_id": top[0],
            "max_lag_instance_id": top[1],
            "max_lag_client_id": top[2],
            "max_lag_topic_name": topic,
            "max_lag_partition_id": 0,
            "max_lag": 6,
            "total_lag": 6,
            "max_lag_consumer": {"related": env.v3(f"/consumer-groups/{group}/consumers/{quote(top[0], safe='')}")},
            "max_lag_partition": {"related": env.v3(f"/topics/{topic}/partitions/0")},
        }

        # New records move the end: the lag follows.
        p = ck.Producer({"bootstrap.servers": env.bootstrap, "log_level": 0})
        for _ in range(3):
            p.produce(topic, b"more", partition=1)
        assert p.flush(20) == 0
        assert env.ok(f"/consumer-groups/{group}/lags/{topic}/partitions/1")["lag"] == 3
        assert env.ok(f"/consumer-groups/{group}/lag-summary")["total_lag"] == 9

        env.error(env.get(f"/consumer-groups/{group}/consumers/no-such-member"), 404)
        env.error(env.get(f"/consumer-groups/{group}/consumers/no-such-member/assignments"), 404)
    finally:
        static.close()
        dynamic.close()


def test_kip848_consumer_group(env: Env) -> None:
    topic = make_topic(env, 2, {0: 7, 1: 2})
    group = new_name("kip848")
    c = consumer(env, group, protocol="consumer", **{"client.id": "new-protocol"})
    c.subscribe([topic])
    try:
        poll_until([c], lambda: len(owned(c)) == 2, "the KIP-848 member never got both partitions")
        doc = wait_group(env, group, "STABLE", 1, poll=(c,))
        assert doc["type"] == "CONSUMER"
        assert doc["is_simple"] is False
        assert doc["partition_assignor"]  # the server-side assignor's name
        assert doc["is_mixed_consumer_group"] is False
        mid = c.memberid()
        (member,) = env.ok(f"/consumer-groups/{group}/consumers")["data"]
        assert (member["consumer_id"], member["client_id"], member["instance_id"]) == (mid, "new-protocol", None)
        assert env.http.get(member["metadata"]["self"]).json() == member  # even with a "/" in the id
        assignments = env.ok(f"/consumer-groups/{group}/consumers/{q(mid)}/assignments")["data"]
        assert [(a["topic_name"], a["partition_id"]) for a in assignments] == [(topic, 0), (topic, 1)]
        consume_and_commit(c, topic, {0: 2, 1: 2})
        lags = env.ok(f"/consumer-groups/{group}/lags")["data"]
        info = (mid, None, "new-protocol")
        assert lags == [lag_doc(env, group, topic, 0, 2, 7, info), lag_doc(env, group, topic, 1, 2, 2, info)]
        summary = env.ok(f"/consumer-groups/{group}/lag-summary")
        assert (summary["max_lag"], summary["total_lag"], summary["max_lag_consumer_id"]) == (5, 5, mid)
        assert group in {g["consumer_group_id"] for g in env.ok("/consumer-groups")["data"]}
    finally:
        c.close()


def test_simple_group_that_only_commits(env: Env) -> None:
    topic = make_topic(env, 2, {0: 4, 1: 4})
    group = new_name("simple/with slash")  # any string is a group id; links must survive it
    c = consumer(env, group)
    try:
        c.assign([ck.TopicPartition(topic, 0), ck.TopicPartition(topic, 1)])
        c.commit(offsets=[ck.TopicPartition(topic, 0, 1), ck.TopicPartition(topic, 1, 4)], asynchronous=False)
    finally:
        c.close()
    doc = env.ok(f"/consumer-groups/{q(group)}")
    assert (doc["is_simple"], doc["state"], doc["type"]) == (True, "EMPTY", "CLASSIC")
    assert doc["metadata"]["self"] == env.v3(f"/consumer-groups/{q(group)}")
    assert env.http.get(doc["metadata"]["self"]).json() == doc
    assert env.http.get(doc["consumers"]["related"]).json()["data"] == []
    lags = env.http.get(env.v3(f"/consumer-groups/{q(group)}/lags")).json()["data"]
    assert lags == [lag_doc(env, group, topic, 0, 1, 4, None), lag_doc(env, group, topic, 1, 4, 4, None)]
    assert env.http.get(lags[0]["metadata"]["self"]).json() == lags[0]
    summary = env.http.get(doc["lag_summary"]["related"]).json()
    assert (summary["max_lag_consumer_id"], summary["max_lag_instance_id"], summary["max_lag"]) == ("", None, 3)


def test_unknown_groups_and_clusters(env: Env) -> None:
    for path in (
        "/consumer-groups/no-such-group",
        "/consumer-groups/no-such-group/consumers",
        "/consumer-groups/no-such-group/consumers/m",
        "/consumer-groups/no-such-group/consumers/m/assignments",
        "/consumer-groups/no-such-group/lags",
        "/consumer-groups/no-such-group/lag-summary",
        "/consumer-groups/no-such-group/lags/t/partitions/0",
        "/consumer-groups/no-such-group/elsewhere",
        "/consumer-groups/",
    ):
        env.error(env.get(path), 404)
    r = env.http.get(f"{env.url}/v3/clusters/not-this-cluster/consumer-groups")
    env.error(r, 404)
    r = env.http.get(f"{env.url}/v3/clusters/not-this-cluster/acls")
    env.error(r, 404)
    env.error(env.http.post(env.v3("/consumer-groups")), 405)


# ---------------------------------------------------------------------------- ACLs
def acl_admin_call(env: Env, fn: Any) -> Any:
    async def run() -> Any:
        async with AclAdmin(ClientConfig.from_props({"bootstrap.servers": env.bootstrap})) as admin:
            return await fn(admin)

    return asyncio.run(run())


def describe(env: Env, flt: AclBindingFilter) -> set[AclBinding]:
    return set(acl_admin_call(env, lambda a: a.describe(flt)))


def acl_json(**over: str) -> dict[str, str]:
    base = {
        "resource_type": "TOPIC",
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    return {**base, **over}


def acl_self(env: Env, a: dict[str, str]) -> str:
    q = "&".join(f"{k}={quote(a[k], safe='*')}" for k in
                 ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"))
    return f"{env.v3('/acls')}?{q}"


def test_acls_create_search_delete(env: Env) -> None:
    user = f"User:{new_name('u')}"
    mine = AclBindingFilter(principal=user)
    one = acl_json(principal=user, resource_name="orders")
    r = env.http.post(env.v3("/acls"), json=one)
    assert r.status_code == 201, r.text
    assert r.content == b""
    assert r.headers["location"] == acl_self(env, one)
    assert describe(env, mine) == {
        AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, user, "*", AclOperation.READ, AclPermissionType.ALLOW)
    }

    batch = [
        acl_json(principal=user, resource_name="orders-", pattern_type="prefixed", operation="write", host="10.0.0.1"),
        acl_json(principal=user, resource_type="CLUSTER", resource_name="kafka-cluster", operation="DESCRIBE",
                 permission="DENY"),
        acl_json(principal=user, resource_type="GROUP", resource_name="billing"),
    ]
    r = env.http.post(env.v3("/acls:batch"), json={"data": batch})
    assert r.status_code == 204, r.text
    assert len(describe(env, mine)) == 4

    found = env.ok("/acls", principal=user)
    assert found["kind"] == "KafkaAclList"
    assert found["metadata"]["self"] == acl_self(env, {
        "resource_type": "ANY", "resource_name": "", "pattern_type": "ANY", "principal": user, "host": "",
        "operation": "ANY", "permission": "ANY"})
    # Sorted by resource type (TOPIC < GROUP < CLUSTER), name, pattern type...
    assert [(a["resource_type"], a["resource_name"], a["pattern_type"]) for a in found["data"]] == [
        ("TOPIC", "orders", "LITERAL"),
        ("TOPIC", "orders-", "PREFIXED"),
        ("GROUP", "billing", "LITERAL"),
        ("CLUSTER", "kafka-cluster", "LITERAL"),
    ]
    prefixed = {**batch[0], "pattern_type": "PREFIXED", "operation": "WRITE"}
    assert found["data"][1] == {
        "kind": "KafkaAcl",
        "metadata": {"self": acl_self(env, prefixed)},
        "cluster_id": env.cluster_id,
        **prefixed,
    }

    # Filters: MATCH finds what applies to a name; case does not matter in enum values.
    matched = env.ok("/acls", principal=user, resource_type="topic", resource_name="orders-eu", pattern_type="MATCH")
    assert [(a["resource_name"], a["operation"]) for a in matched["data"]] == [("orders-", "WRITE")]
    denied = env.ok("/acls", principal=user, permission="DENY")
    assert [a["operation"] for a in denied["data"]] == ["DESCRIBE"]
    by_host = env.ok("/acls", principal=user, host="10.0.0.1")
    assert [a["resource_name"] for a in by_host["data"]] == ["orders-"]
    # A link from the answer finds that very binding.
    again = env.http.get(found["data"][3]["metadata"]["self"]).json()["data"]
    assert again == [found["data"][3]]

    # DELETE answers the removed bindings; the others stay.
    r = env.http.delete(env.v3("/acls"), params={
        "resource_type": "TOPIC", "pattern_type": "ANY", "operation": "ANY", "permission": "ALLOW", "principal": user})
    assert r.status_code == 200, r.text
    assert [(a["resource_name"], a["operation"]) for a in r.json()["data"]] == [("orders", "READ"), ("orders-", "WRITE")]
    assert set(r.json()) == {"data"}
    assert {b.resource_type for b in describe(env, mine)} == {ResourceType.GROUP, ResourceType.CLUSTER}
    r = env.http.delete(env.v3("/acls"), params={
        "resource_type": "ANY", "pattern_type": "ANY", "operation": "ANY", "permission": "ANY", "principal": user})
    assert len(r.json()["data"]) == 2
    assert describe(env, mine) == set()
    r = env.http.delete(env.v3("/acls"), params={
        "resource_type": "ANY", "pattern_type": "ANY", "operation": "ANY", "permission": "ANY", "principal": user})
    assert r.json() == {"data": []}


def test_acl_bad_inputs(env: Env) -> None:
    user = f"User:{new_name('bad')}"
    mine = AclBindingFilter(principal=user)

    def post(body: Any, path: str = "/acls") -> httpx.Response:
        if isinstance(body, (bytes, str)):
            return env.http.post(env.v3(path), content=body, headers={"content-type": "application/json"})
        return env.http.post(env.v3(path), json=body)

    for bad, fragment in [
        (acl_json(principal=user, resource_type="PLANET"), "resource_type must be one of"),
        (acl_json(principal=user, resource_type="ANY"), "resource_type cannot be ANY"),
        (acl_json(principal=user, resource_type="USER"), "resource_type must be one of"),
        (acl_json(principal=user, operation="FLY"), "operation must be one of"),
        (acl_json(principal=user, operation="UNKNOWN"), "operation must be one of"),
        (acl_json(principal=user, operation="ANY"), "operation cannot be ANY"),
        (acl_json(principal=user, pattern_type="MATCH"), "pattern_type cannot be MATCH"),
        (acl_json(principal=user, permission="ANY"), "permission cannot be ANY"),
        (acl_json(principal="alice"), "principal must be Type:name"),
        (acl_json(principal=user, host=""), "host must not be empty"),
        ({k: v for k, v in acl_json(principal=user).items() if k != "host"}, "host is required"),
        (acl_json(principal=user, resource_name=7), "resource_name must be a string"),  # type: ignore[arg-type]
        (acl_json(principal=user, resource_type=["TOPIC"]), "resource_type must be a string"),  # type: ignore[arg-type]
        ([acl_json(principal=user)], "must be a JSON object"),
        (b"", "Null input provided"),
        (b"{not json", "not JSON"),
    ]:
        assert fragment in env.error(post(bad), 400), (bad, fragment)
    msg = env.error(post(acl_json(principal=user, resource_type="CLUSTER", resource_name="other")), 400, 40002)
    assert msg == "The only valid name for the CLUSTER resource is kafka-cluster"

    # A batch with one bad entry creates nothing.
    good = acl_json(principal=user)
    assert "data[1].operation" in env.error(post({"data": [good, acl_json(principal=user, operation="FLY")]},
                                                 "/acls:batch"), 400)
    for bad_batch in ([good], {"data": good}, {}, b"[]"):
        env.error(post(bad_batch, "/acls:batch"), 400)
    assert describe(env, mine) == set()

    # Search and delete refuse unknown enum values; delete needs its four enums.
    for params in ({"resource_type": "PLANET"}, {"operation": "UNKNOWN"}, {"pattern_type": "x"}, {"permission": "MAYBE"}):
        env.error(env.get("/acls", **params), 400)
    full = {"resource_type": "ANY", "pattern_type": "ANY", "operation": "ANY", "permission": "ANY", "principal": user}
    for missing in ("resource_type", "pattern_type", "operation", "permission"):
        params = {k: v for k, v in full.items() if k != missing}
        assert "cannot be unspecified" in env.error(env.http.delete(env.v3("/acls"), params=params), 400)
    env.error(env.http.delete(env.v3("/acls"), params={**full, "operation": "FLY"}), 400)
    env.error(env.http.put(env.v3("/acls"), json=good), 405)
    # The proxy is still fine.
    assert env.ok("/acls", principal=user)["data"] == []
