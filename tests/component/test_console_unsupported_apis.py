"""The console against a cluster that serves only some of the APIs it uses: each feature degrades
on its own, from the brokers' ApiVersions answers, and the rest keeps working.

The broker is an embedded Zurau broker whose ApiVersions answers, as the console's connections
(client id ``zurau-console``) see them, lack the APIs in :data:`HIDDEN` and serve OffsetFetch only
in versions 0-1, older than the console speaks: /api/info names every unsupported feature with
a message, the overview and a topic say "not supported" in place of disk use and configs, a
route that needs a missing API answers 501 ``unsupported`` (not 503 "cannot reach the cluster"),
and browsing, producing and a group's dry-run reset preview still work. Records and commits are
made with confluent-kafka, which sees the broker's full answer.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zurau import EmbeddedBroker
from zurau.client.connection import BrokerConnection
from zurau.console.embedded_console import EmbeddedConsole
from zurau.protocol.api_keys import ApiKey

HIDDEN = (
    ApiKey.DESCRIBE_LOG_DIRS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.LIST_GROUPS,
    ApiKey.OFFSET_COMMIT,
)


@contextlib.contextmanager
def console_seeing(
    monkeypatch: pytest.MonkeyPatch, hidden: tuple[ApiKey, ...], ranges: dict[ApiKey, tuple[int, int]]
) -> Iterator[tuple[EmbeddedBroker, EmbeddedConsole]]:
    """A broker and a console whose connections see its ApiVersions without ``hidden`` and with
    ``ranges`` instead of the broker's versions of those APIs."""
    connect = BrokerConnection.connect

    async def connect_with_fewer_apis(self: BrokerConnection, *args: Any, **kwargs: Any) -> BrokerConnection:
        conn = await connect(self, *args, **kwargs)
        if self.client_id == "zurau-console":
            for key in hidden:
                self.api_versions.pop(key, None)
            self.api_versions.update(ranges)
        return conn

    monkeypatch.setattr(BrokerConnection, "connect", connect_with_fewer_apis)
    with EmbeddedBroker() as broker, EmbeddedConsole(broker.bootstrap_servers) as c:
        yield broker, c


def fill(broker: EmbeddedBroker) -> tuple[str, str]:
    """A two-partition topic with 3 records in each partition, and a group committed at 1 on partition 0."""
    topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(6):
        p.produce(topic, value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()
    return topic, group


def status(r: httpx.Response, code: int) -> dict[str, Any]:
    assert r.status_code == code, r.text
    body: dict[str, Any] = r.json()
    return body


def test_each_feature_degrades_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        console_seeing(monkeypatch, HIDDEN, {ApiKey.OFFSET_FETCH: (0, 1)}) as (broker, c),
        httpx.Client(base_url=c.url, timeout=60) as http,
    ):
        topic, group = fill(broker)
        origin = {"Origin": c.url}
        unsupported = status(http.get("/api/info"), 200)["unsupported"]
        assert set(unsupported) == {
            "disk_use",
            "topic_configs",
            "edit_configs",
            "create_topic",
            "delete_topic",
            "groups",
            "group",
            "reset_offsets",
            "balancer",
            "balancer_actions",
        }
        assert all("is not supported by this broker" in m for m in unsupported.values())
        assert "DescribeLogDirs (API key 35)" in unsupported["disk_use"]
        assert "OffsetFetch v0-1" in unsupported["group"]

        o = status(http.get("/api/overview"), 200)
        assert o["disk"] == [] and o["disk_bytes"] is None and "DescribeLogDirs" in o["disk_unsupported"]
        assert o["partitions"] >= 2 and o["brokers"]

        t = status(http.get(f"/api/topics/{topic}"), 200)
        assert t["configs"] is None and "DescribeConfigs" in t["configs_unsupported"]
        assert [p["log_end_offset"] for p in t["partitions"]] == [3, 3]

        for r in (
            http.get(f"/api/topics/{topic}/configs"),
            http.patch(
                f"/api/topics/{topic}/configs", json={"set": {"retention.ms": "1000"}}, headers=origin
            ),
            http.post(
                "/api/topics", json={"name": "nope", "partitions": 1, "replication_factor": 1}, headers=origin
            ),
            http.delete(f"/api/topics/{topic}", headers=origin),
            http.get("/api/groups"),
            http.get(f"/api/groups/{group}"),
            http.post(
                f"/api/groups/{group}/reset-offsets",
                json={"mode": "earliest", "dry_run": True},
                headers=origin,
            ),
            http.get("/api/balancer"),
            http.get("/api/balancer/plan"),
            http.post("/api/balancer/rebalance", headers=origin),
            http.post("/api/balancer/remove-broker", json={"broker_id": 1}, headers=origin),
            http.post("/api/balancer/cancel", headers=origin),
        ):
            body = status(r, 501)
            assert body["kind"] == "unsupported" and "is not supported by this broker" in body["error"], body

        # what the broker serves still works
        produced = status(
            http.post(f"/api/topics/{topic}/messages", json={"value": "hi", "partition": 1}, headers=origin),
            200,
        )
        assert produced["offset"] == 3
        found = status(
            http.get(
                f"/api/topics/{topic}/messages", params={"start": "beginning", "filter": 'value == "hi"'}
            ),
            200,
        )
        assert [(m["partition"], m["offset"]) for m in found["records"]] == [(1, 3)]
        assert status(http.get("/api/topics"), 200)["topics"]


def test_without_offset_commit_a_reset_can_still_be_previewed(monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        console_seeing(monkeypatch, (ApiKey.OFFSET_COMMIT,), {}) as (broker, c),
        httpx.Client(base_url=c.url, timeout=60) as http,
    ):
        topic, group = fill(broker)
        assert set(status(http.get("/api/info"), 200)["unsupported"]) == {"reset_offsets"}
        assert status(http.get(f"/api/groups/{group}"), 200)["total_lag"] == 2
        assert group in [g["group"] for g in status(http.get("/api/groups"), 200)["groups"]]
        url, origin = f"/api/groups/{group}/reset-offsets", {"Origin": c.url}
        plan = status(
            http.post(url, json={"topics": [topic], "mode": "earliest", "dry_run": True}, headers=origin), 200
        )
        assert [(p["partition"], p["new"]) for p in plan["plan"]] == [(0, 0), (1, 0)] and not plan["applied"]
        body = status(
            http.post(url, json={"topics": [topic], "mode": "earliest", "dry_run": False}, headers=origin),
            501,
        )
        assert body["kind"] == "unsupported" and "OffsetCommit" in body["error"]


def test_without_share_group_apis_the_groups_list_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = (
        ApiKey.SHARE_GROUP_DESCRIBE,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    )
    with (
        console_seeing(monkeypatch, hidden, {}) as (broker, c),
        httpx.Client(base_url=c.url, timeout=60) as http,
    ):
        topic, group = fill(broker)
        unsupported = status(http.get("/api/info"), 200)["unsupported"]
        assert set(unsupported) == {"share_groups", "reset_share_offsets"}
        assert "ShareGroupDescribe (API key 77)" in unsupported["share_groups"]
        listed = {g["group"]: g for g in status(http.get("/api/groups"), 200)["groups"]}
        assert listed[group]["state"] == "Empty"
        origin = {"Origin": c.url}
        for r in (
            http.get(f"/api/share-groups/{group}"),
            http.post(f"/api/share-groups/{group}/reset-offsets", json={"mode": "earliest"}, headers=origin),
        ):
            assert status(r, 501)["kind"] == "unsupported"
