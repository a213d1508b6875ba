"""Share groups (KIP-932) in the console's JSON API, against an embedded broker (share groups are
on by default) where a real member made the group: confluent-kafka's ``ShareConsumer``.

The groups list shows the share group beside a consumer group, with its type, state, member
count and total lag; its detail shows the member (id, client id, host, assignment) and each share
partition's start offset and lag; a reset of its start offsets previews (dry run) while the
member is there, is refused (409) when applied then, and applies once the group is empty, with
the same edge checks as consumer-group resets. A broker that does not serve share groups leaves
the groups list as it was and answers the share routes 501.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition

from zurau import EmbeddedBroker
from zurau.console.embedded_console import EmbeddedConsole

FAST: dict[str, Any] = {
    "group.share.heartbeat.interval.ms": 300,
    "group.share.min.heartbeat.interval.ms": 100,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0, **FAST) as b:
        yield b


@pytest.fixture(scope="module")
def console(broker: EmbeddedBroker) -> Iterator[EmbeddedConsole]:
    with EmbeddedConsole(broker.bootstrap_servers, lag_sample_interval=0.2) as c:
        yield c


@pytest.fixture
def http(console: EmbeddedConsole) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=console.url, timeout=60, headers={"Origin": console.url}) as c:
        yield c


def status(r: httpx.Response, code: int) -> dict[str, Any]:
    assert r.status_code == code, r.text
    body: dict[str, Any] = r.json()
    return body


def topic_with_records(http: httpx.Client, broker: EmbeddedBroker, per_partition: int) -> str:
    """A new two-partition topic with ``per_partition`` records in each partition."""
    topic = f"s-{uuid.uuid4().hex[:8]}"
    status(http.post("/api/topics", json={"name": topic, "partitions": 2, "replication_factor": 1}), 200)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(2 * per_partition):
        p.produce(topic, value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    return topic


def poll_until(consumer: ShareConsumer, done: Any, seconds: float = 20) -> Any:
    """Poll ``consumer`` until ``done()`` answers something true (which is returned)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        consumer.poll(0.3)
        if result := done():
            return result
    raise AssertionError("gave up waiting")


def write_delivered(
    broker: EmbeddedBroker, group: str, topic: str, partition: int, start: int, done: int
) -> None:
    """Write the share-partition state a share-partition leader would (WriteShareGroupState):
    start offset ``start`` and ``done`` records past it acknowledged, so the lag becomes known."""

    async def write() -> None:
        channel = broker.broker.share_state_channel
        t = broker.broker.group_coordinator.core.topics.get(topic)
        assert channel is not None and t is not None
        key = (t.topic_id, partition)
        summary = await channel.read_state_summary(group, {key: {"partition": partition, "leader_epoch": 0}})
        batches = [
            {"first_offset": start, "last_offset": start + done - 1, "delivery_state": 2, "delivery_count": 1}
        ]
        state = {
            "partition": partition,
            "state_epoch": summary[key]["state_epoch"],
            "leader_epoch": 0,
            "start_offset": start,
            "delivery_complete_count": done,
            "state_batches": batches if done else [],
        }
        written = await channel.write_state(group, {key: state})
        assert written[key]["error_code"] == 0, written

    broker.call(write)


def test_share_group_list_detail_and_reset(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = topic_with_records(http, broker, 5)
    group, classic = "share-" + topic, "classic-" + topic
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": classic})
    c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    c.close()

    sc = ShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "client.id": "console-test"}
    )
    try:
        sc.subscribe([topic])

        def assigned() -> dict[str, Any] | None:
            r = http.get(f"/api/share-groups/{group}")
            if r.status_code != 200:
                return None
            g = r.json()
            ok = len(g["members"]) == 1 and len(g["members"][0]["assignment"]) == 2
            return g if ok and all(o["start_offset"] is not None for o in g["offsets"]) else None

        g = poll_until(sc, assigned)
        assert g["type"] == "share" and g["state"] == "Stable" and g["coordinator"]["id"] == 1
        (m,) = g["members"]
        assert m["client_id"] == "console-test" and m["host"] and m["member_id"]
        assert m["assignment"] == [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}]
        assert m["subscribed_topics"] == [topic]
        # share.auto.offset.reset is latest: the group starts at the end of each partition
        rows = [(o["topic"], o["partition"], o["start_offset"], o["members"]) for o in g["offsets"]]
        assert rows == [(topic, 0, 5, [m["member_id"]]), (topic, 1, 5, [m["member_id"]])]
        assert g["total_lag"] == (
            None if any(o["lag"] is None for o in g["offsets"]) else sum(o["lag"] for o in g["offsets"])
        )

        listed = {x["group"]: x for x in status(http.get("/api/groups"), 200)["groups"]}
        assert listed[group]["type"] == "share" and listed[group]["state"] == "Stable"
        assert listed[group]["members"] == 1 and "total_lag" in listed[group]
        assert listed[group]["total_lag"] == g["total_lag"]
        assert listed[classic]["type"] != "share" and "members" not in listed[classic]

        # a dry run works with the member there; applying is refused until the group is empty
        url = f"/api/share-groups/{group}/reset-offsets"
        plan = status(http.post(url, json={"mode": "earliest"}), 200)
        assert plan["dry_run"] and not plan["applied"] and plan["state"] == "Stable"
        assert [(p["partition"], p["current"], p["new"]) for p in plan["plan"]] == [(0, 5, 0), (1, 5, 0)]
        msg = status(http.post(url, json={"topics": [topic], "mode": "earliest", "dry_run": False}), 409)[
            "error"
        ]
        assert "is not empty" in msg and "Stable" in msg
    finally:
        sc.close()

    def empty() -> dict[str, Any] | None:
        g = status(http.get(f"/api/share-groups/{group}"), 200)
        return g if g["state"] == "Empty" else None

    deadline = time.monotonic() + 20
    while not (g := empty()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert g and g["members"] == []

    plan = status(http.post(url, json={"topics": topic, "mode": "offset", "value": 99}), 200)
    assert [(p["new"], p["clamped"]) for p in plan["plan"]] == [(5, True), (5, True)]
    r = status(http.post(url, json={"topics": [topic], "mode": "offset", "value": 2, "dry_run": False}), 200)
    assert r["applied"] and [(p["partition"], p["current"], p["new"]) for p in r["plan"]] == [
        (0, 5, 2),
        (1, 5, 2),
    ]
    g = status(http.get(f"/api/share-groups/{group}"), 200)
    assert [(o["partition"], o["start_offset"]) for o in g["offsets"]] == [(0, 2), (1, 2)]

    # where a share-partition leader wrote how many records past the start are done, the lag is
    # known (end - start - done) and the list sums it; while one partition's is unknown it is "-"
    write_delivered(broker, group, topic, 0, start=2, done=1)
    g = status(http.get(f"/api/share-groups/{group}"), 200)
    assert [o["lag"] for o in g["offsets"]] == [2, None] and g["total_lag"] is None
    write_delivered(broker, group, topic, 1, start=3, done=0)
    g = status(http.get(f"/api/share-groups/{group}"), 200)
    assert [o["lag"] for o in g["offsets"]] == [2, 2] and g["total_lag"] == 4
    listed = {x["group"]: x for x in status(http.get("/api/groups"), 200)["groups"]}
    assert (listed[group]["state"], listed[group]["members"], listed[group]["total_lag"]) == ("Empty", 0, 4)

    # bad input gets the same answers as a consumer-group reset
    assert "mode must be one of" in status(http.post(url, json={"mode": "sideways"}), 400)["error"]
    assert "needs a value" in status(http.post(url, json={"mode": "offset"}), 400)["error"]
    assert status(http.post(url, json={"mode": "earliest", "dry_run": "yes"}), 400)["kind"] == "bad_request"
    assert (
        "does not exist"
        in status(http.post(url, json={"topics": ["no-such-topic"], "mode": "latest"}), 404)["error"]
    )
    assert "does not exist" in status(http.get(f"/api/share-groups/no-such-{topic}"), 404)["error"]
    # a reset from another site is refused, as every state-changing request is
    forged = http.post(
        url, json={"mode": "earliest", "dry_run": False}, headers={"Origin": "http://evil.example"}
    )
    assert status(forged, 403)["kind"] == "csrf"
    # a consumer group is not a share group
    assert status(http.get(f"/api/share-groups/{classic}"), 404)["kind"] == "GROUP_ID_NOT_FOUND"
