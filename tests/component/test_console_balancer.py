"""The console's Balancer API against an in-process three-node cluster (real sockets), checked with
confluent-kafka's admin client and ``zurau reassign-partitions``.

The cluster runs with ``confluent.balancer.enable=false``, so the controller moves nothing by
itself and every state the test sees is one it made: a topic placed on brokers 1 and 2 only
leaves broker 3 empty. ``GET /api/balancer`` shows each broker's replicas and leaders as
Metadata has them, its disk and capacity, and the balancer disabled; the dry-run plan (the
planner handed to the console, as ``zurau console`` does) moves replicas onto broker 3, and its
removal preview moves them off broker 2, changing nothing. Rebalance, remove-broker and cancel set
and clear the broker configs the controller reads. A reassignment held back by a 1 B/s throttle
shows as a move in flight with its progress, and cancel ends it. A stopped broker that holds
replicas shows offline and may be drained; cancel clears its mark. Hostile input (unknown, negative,
huge or non-numeric broker ids, bodies that are not objects, other origins, wrong methods) gets a
4xx with a clear message and changes nothing, and the console keeps serving; a removal that would
leave too few brokers is refused (409); a console without the planner answers the plan with 501.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from typer.testing import CliRunner

from tests.support.uneven_cluster import UNEVEN, uneven_cluster
from zurau.cli.balancer import plan_of
from zurau.cli.main import app
from zurau.console.embedded_console import EmbeddedConsole
from zurau.embedded import EmbeddedCluster

MOVING = "moving"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with uneven_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def console(cluster: EmbeddedCluster) -> Iterator[EmbeddedConsole]:
    with EmbeddedConsole(cluster.bootstrap_servers, planner=plan_of) as c:
        yield c


@pytest.fixture
def http(console: EmbeddedConsole) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=console.url, timeout=60, headers={"Origin": console.url}) as c:
        yield c


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def status(r: httpx.Response, code: int) -> dict[str, Any]:
    assert r.status_code == code, r.text
    body: dict[str, Any] = r.json()
    return body


def broker_config(admin: AdminClient, broker: str, name: str) -> str | None:
    res = ConfigResource(ResourceType.BROKER, broker)
    value: str | None = admin.describe_configs([res])[res].result(10)[name].value
    return value


def replicas_by_broker(admin: AdminClient) -> tuple[dict[int, int], dict[int, int]]:
    """Replicas and leaderships per broker, as Metadata has them (every topic)."""
    replicas = {1: 0, 2: 0, 3: 0}
    leaders = {1: 0, 2: 0, 3: 0}
    for t in admin.list_topics(timeout=10).topics.values():
        for p in t.partitions.values():
            for r in p.replicas:
                replicas[r] += 1
            leaders[p.leader] += 1
    return replicas, leaders


def test_status_shows_each_brokers_load_and_the_balancer_settings(http: httpx.Client, admin: AdminClient) -> None:
    s = status(http.get("/api/balancer"), 200)
    assert s["enabled"] == "false" and s["rebalancing"] is False and s["plan_available"] is True
    assert s["moves"] == []
    by_id = {b["id"]: b for b in s["brokers"]}
    assert sorted(by_id) == [1, 2, 3]
    replicas, leaders = replicas_by_broker(admin)
    assert {b: by_id[b]["replicas"] for b in by_id} == replicas
    assert {b: by_id[b]["leaders"] for b in by_id} == leaders
    assert by_id[3]["replicas"] == replicas[3] and replicas[1] >= 6 and replicas[2] >= 6
    for b in by_id.values():
        assert b["live"] and b["reachable"] and b["removing"] is False
        assert b["disk_bytes"] >= 0 and b["capacity_bytes"] > 0


def test_the_dry_run_plan_fills_the_empty_broker_and_previews_a_removal(
    http: httpx.Client, admin: AdminClient
) -> None:
    p = status(http.get("/api/balancer/plan"), 200)
    moves = [m for m in p["reassignments"] if m["topic"] == UNEVEN]
    assert moves, p
    assert all(3 in m["to"] and 3 not in m["from"] for m in moves), moves
    assert all(m["reasons"] and all(isinstance(r, str) and r for r in m["reasons"]) for m in p["reassignments"])
    assert p["bytes_to_move"] == sum(m["bytes"] for m in p["reassignments"])
    assert p["preview_removing"] == []

    preview = status(http.get("/api/balancer/plan?remove=2"), 200)
    assert preview["preview_removing"] == [2]
    assert preview["reassignments"] and all(
        2 in m["from"] and 2 not in m["to"] for m in preview["reassignments"] if m["topic"] == UNEVEN
    )
    # a preview changes nothing
    assert broker_config(admin, "2", "zurau.balancer.removing") == "false"
    assert not any(b["removing"] for b in status(http.get("/api/balancer"), 200)["brokers"])


def test_rebalance_remove_broker_and_cancel_set_and_clear_the_controllers_marks(
    http: httpx.Client, admin: AdminClient
) -> None:
    assert status(http.post("/api/balancer/rebalance"), 200) == {"rebalance_requested": True}
    assert status(http.get("/api/balancer"), 200)["rebalancing"] is True
    assert broker_config(admin, "1", "zurau.balancer.rebalance.requested") == "true"

    assert status(http.post("/api/balancer/remove-broker", json={"broker_id": 3}), 200) == {
        "broker_id": 3,
        "removing": True,
    }
    by_id = {b["id"]: b for b in status(http.get("/api/balancer"), 200)["brokers"]}
    assert by_id[3]["removing"] and not by_id[1]["removing"] and not by_id[2]["removing"]
    assert broker_config(admin, "3", "zurau.balancer.removing") == "true"

    # a second removal would leave one broker for partitions of two replicas
    refused = status(http.post("/api/balancer/remove-broker", json={"broker_id": 2}), 409)
    assert refused["kind"] == "insufficient_brokers" and "cannot remove broker 2" in refused["error"]
    assert broker_config(admin, "2", "zurau.balancer.removing") == "false"

    done = status(http.post("/api/balancer/cancel"), 200)
    assert done == {"removals_ended": [3], "reassignments_cancelled": 0}
    s = status(http.get("/api/balancer"), 200)
    assert s["rebalancing"] is False and not any(b["removing"] for b in s["brokers"])
    assert broker_config(admin, "3", "zurau.balancer.removing") == "false"
    assert broker_config(admin, "1", "zurau.balancer.rebalance.requested") == "false"


def test_a_throttled_move_shows_in_flight_with_its_progress_and_cancel_ends_it(
    http: httpx.Client, admin: AdminClient, cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    admin.create_topics([NewTopic(MOVING, 1, replica_assignment=[[1, 2]])])[MOVING].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20, "acks": "all"})
    for i in range(300):  # about 3 MiB: more than one fetch answer, which a throttle lets through at once
        producer.produce(MOVING, value=bytes([i % 256]) * 10_240)
    assert producer.flush(60) == 0
    plan = tmp_path / "move.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": MOVING, "partition": 0, "replicas": [1, 3]}]}))
    out = CliRunner().invoke(app, [
        "reassign-partitions", "--execute", "--throttle", "1", "--reassignment-json-file", str(plan),
        "--bootstrap-server", cluster.bootstrap_servers,
    ])
    assert out.exit_code == 0, out.stdout + out.stderr

    s = status(http.get("/api/balancer"), 200)
    moves = [m for m in s["moves"] if m["topic"] == MOVING]
    assert len(moves) == 1, s["moves"]
    m = moves[0]
    assert (m["partition"], m["adding"], m["removing"]) == (0, [3], [2])
    assert m["total_bytes"] > 3_000_000 and 0 <= m["copied_bytes"] < m["total_bytes"]

    done = status(http.post("/api/balancer/cancel"), 200)
    assert done["reassignments_cancelled"] == 1 and done["removals_ended"] == []
    assert status(http.get("/api/balancer"), 200)["moves"] == []
    md = admin.list_topics(MOVING, timeout=10).topics[MOVING].partitions[0]
    assert sorted(md.replicas) == [1, 2]


@pytest.mark.parametrize(
    ("body", "status_code", "words"),
    [
        ({"broker_id": 99}, 404, "broker 99 is not part of the cluster (its brokers: 1, 2, 3)"),
        ({"broker_id": -1}, 400, "broker_id must be between 0 and"),
        ({"broker_id": 2**40}, 400, "broker_id must be between 0 and"),
        ({"broker_id": 10**400}, 400, "broker_id must be"),
        ({"broker_id": "two"}, 400, "broker_id must be a whole number"),
        ({"broker_id": "1e3"}, 400, "broker_id must be a whole number"),
        ({"broker_id": True}, 400, "broker_id must be an integer"),
        ({"broker_id": 2.5}, 400, "broker_id must be an integer"),
        ({"broker_id": [2]}, 400, "broker_id must be an integer"),
        ({"broker_id": None}, 400, "broker_id is missing"),
        ({}, 400, "broker_id is missing"),
        ([2], 400, "must be a JSON object"),
    ],
)
def test_a_bad_broker_id_is_refused_with_a_clear_message(
    http: httpx.Client, admin: AdminClient, body: Any, status_code: int, words: str
) -> None:
    r = http.post("/api/balancer/remove-broker", json=body)
    assert r.status_code == status_code, r.text
    assert words in r.json()["error"], r.json()
    s = status(http.get("/api/balancer"), 200)  # still serving, nothing changed
    assert not any(b["removing"] for b in s["brokers"])
    assert broker_config(admin, "2", "zurau.balancer.removing") == "false"


def test_other_hostile_requests_get_a_4xx_and_the_console_keeps_serving(
    http: httpx.Client, console: EmbeddedConsole, admin: AdminClient
) -> None:
    r = http.post("/api/balancer/remove-broker", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    nested = ("[" * 5000).encode()
    assert http.post("/api/balancer/remove-broker", content=nested).status_code == 400
    assert status(http.get("/api/balancer/plan?remove=99"), 404)["kind"] == "unknown_broker"
    assert "remove must be a whole number" in status(http.get("/api/balancer/plan?remove=x"), 400)["error"]
    # a state-changing request from another site is refused before it runs
    forged = http.post("/api/balancer/remove-broker", json={"broker_id": 2}, headers={"Origin": "http://evil.example"})
    assert status(forged, 403)["kind"] == "csrf"
    assert status(http.post("/api/balancer/rebalance", headers={"Origin": "http://evil.example"}), 403)["kind"] == "csrf"
    wrong = http.get("/api/balancer/cancel")
    assert wrong.status_code == 405 and "POST" in wrong.headers["allow"]
    assert http.delete("/api/balancer").status_code == 405
    assert broker_config(admin, "2", "zurau.balancer.removing") == "false"
    assert broker_config(admin, "1", "zurau.balancer.rebalance.requested") == "false"
    assert status(http.get("/api/balancer"), 200)["brokers"]
    assert status(http.get("/api/overview"), 200)["brokers"]


def test_a_console_without_the_planner_shows_the_status_and_answers_the_plan_501(cluster: EmbeddedCluster) -> None:
    with EmbeddedConsole(cluster.bootstrap_servers) as bare, httpx.Client(base_url=bare.url, timeout=60) as http:
        s = status(http.get("/api/balancer"), 200)
        assert s["plan_available"] is False and len(s["brokers"]) == 3
        body = status(http.get("/api/balancer/plan"), 501)
        assert body["kind"] == "unsupported" and "planner" in body["error"]
        assert "balancer" not in status(http.get("/api/info"), 200)["unsupported"]


def test_an_offline_broker_shows_offline_may_be_removed_and_cancel_clears_its_mark(
    http: httpx.Client, admin: AdminClient, cluster: EmbeddedCluster
) -> None:
    """Node 2 stopped: it still holds replicas, so it is listed, neither live nor reachable, and
    whether it is being removed is unknown (only a broker describes its own configs). Draining
    it is allowed; removing broker 3 as well would leave broker 1 alone (409). Cancel deletes the
    offline broker's mark, as its own configs show once it is back."""
    cluster.call(cluster.stop_node, 2)
    try:
        deadline = time.monotonic() + 30
        while True:
            by_id = {b["id"]: b for b in status(http.get("/api/balancer"), 200)["brokers"]}
            if not by_id[2]["live"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert by_id[2]["live"] is False and by_id[2]["reachable"] is False and by_id[2]["removing"] is None
        assert by_id[2]["replicas"] >= 6 and by_id[2]["leaders"] == 0
        assert by_id[1]["live"] and by_id[3]["live"]

        refused = status(http.post("/api/balancer/remove-broker", json={"broker_id": 3}), 409)
        assert "1 broker(s) would be left" in refused["error"], refused
        assert status(http.post("/api/balancer/remove-broker", json={"broker_id": 2}), 200)["removing"] is True
        assert status(http.post("/api/balancer/cancel"), 200)["removals_ended"] == []  # its mark was unreadable
    finally:
        cluster.call(cluster.start_node, 2)
    deadline = time.monotonic() + 30
    while 2 not in admin.list_topics(timeout=10).brokers and time.monotonic() < deadline:
        time.sleep(0.2)
    assert broker_config(admin, "2", "zurau.balancer.removing") == "false"
    assert status(http.get("/api/balancer"), 200)["brokers"][1]["live"] is True
