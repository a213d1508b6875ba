"""Several schema registry instances on one cluster: one primary elected through the Kafka group
protocol (Confluent's ``sr`` protocol), secondaries forwarding writes, failover when the primary
dies, ``leader.eligibility``, and Confluent's 50004 when no instance may be primary."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import httpx
import pytest

from zurau import EmbeddedBroker, EmbeddedRegistry

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
# Short sessions so that a killed primary is noticed within seconds.
GROUP = {"kafkagroup_session_timeout_ms": 1500, "kafkagroup_heartbeat_interval_ms": 200}


def avro(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "a", "type": "int"}]})


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=500) as b:
        yield b


@pytest.fixture
def start(broker: EmbeddedBroker) -> Iterator[Callable[..., EmbeddedRegistry]]:
    """Starts registries sharing one fresh store topic (so one group); stopped at the end."""
    topic = f"_schemas_{uuid.uuid4().hex[:6]}"
    with ExitStack() as stack:

        def new(**props: object) -> EmbeddedRegistry:
            r = EmbeddedRegistry(broker.bootstrap_servers, **{"kafkastore.topic": topic, **GROUP, **props})
            return stack.enter_context(r)

        yield new


def wait_until(check: Callable[[], bool], timeout: float = 10, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def agreed_primary(registries: list[EmbeddedRegistry]) -> str | None:
    """The primary URL every running instance agrees on after a settled election, else None."""
    seen = set()
    for r in registries:
        elector = r.server.elector if r.server is not None else None
        if elector is None or not elector.settled:
            return None
        seen.add(elector.primary_url)
    if len(seen) != 1 or sum(r.is_primary for r in registries) != 1:
        return None
    return seen.pop()


def wait_for_primary(registries: list[EmbeddedRegistry]) -> EmbeddedRegistry:
    wait_until(lambda: agreed_primary(registries) is not None, what="one agreed primary")
    return next(r for r in registries if r.is_primary)


def register(url: str, subject: str, schema: str) -> httpx.Response:
    return httpx.post(f"{url}/subjects/{subject}/versions", json={"schema": schema}, headers=CT, timeout=30)


def test_instances_agree_on_one_primary_and_secondaries_forward(start: Callable[..., EmbeddedRegistry]) -> None:
    registries = [start() for _ in range(3)]
    primary = wait_for_primary(registries)
    # Confluent's choice: the eligible member whose URL sorts first
    assert primary.url == min(r.url for r in registries)
    secondaries = [r for r in registries if r is not primary]
    ids = {}
    for i, r in enumerate(secondaries):
        resp = register(r.url, f"subject-{i}", avro(f"R{i}"))
        assert resp.status_code == 200, resp.text
        ids[f"subject-{i}"] = resp.json()["id"]
        # read-your-writes on the instance that forwarded
        assert httpx.get(f"{r.url}/subjects/subject-{i}/versions/latest").json()["id"] == ids[f"subject-{i}"]
    assert len(set(ids.values())) == 2
    # the same schema registered again through the other secondary: same id, no new version
    again = register(secondaries[1].url, "subject-0", avro("R0"))
    assert again.json() == {"id": ids["subject-0"]}
    for r in registries:
        wait_until(lambda r=r: httpx.get(f"{r.url}/subjects").json() == sorted(ids), what="replication")
        for subject, sid in ids.items():
            assert httpx.get(f"{r.url}/subjects/{subject}/versions/1").json()["id"] == sid
            assert json.loads(httpx.get(f"{r.url}/schemas/ids/{sid}").json()["schema"])["type"] == "record"
        metadata = httpx.get(f"{r.url}/v1/metadata/id").json()["scope"]["clusters"]
        assert metadata["schema-registry-cluster"].startswith("schema-registry")
        assert httpx.get(f"{r.url}/").json() == {}
    # config and mode writes through a secondary, and deletes
    s = secondaries[0].url
    assert httpx.put(f"{s}/config/subject-0", json={"compatibility": "FULL"}, headers=CT).json() == {"compatibility": "FULL"}
    assert httpx.get(f"{s}/config/subject-0").json() == {"compatibilityLevel": "FULL"}
    assert httpx.put(f"{s}/mode/subject-1", json={"mode": "READONLY"}, headers=CT).json() == {"mode": "READONLY"}
    assert httpx.get(f"{s}/mode/subject-1").json() == {"mode": "READONLY"}
    refused = register(s, "subject-1", avro("Other"))
    assert (refused.status_code, refused.json()["error_code"]) == (422, 42205)  # the primary's answer
    assert httpx.delete(f"{s}/mode/subject-1").json() == {"mode": "READONLY"}
    assert httpx.delete(f"{s}/config/subject-0").json() == {"compatibilityLevel": "FULL"}
    assert httpx.delete(f"{s}/subjects/subject-1").json() == [1]
    assert httpx.get(f"{s}/subjects").json() == ["subject-0"]
    # the raw path goes to the primary: a subject with "/" (sent as %2F) stays one subject
    slashed = register(s, "dir%2Fname.proto", avro("Slashed"))
    assert slashed.status_code == 200
    assert httpx.get(f"{s}/subjects/dir%2Fname.proto/versions/1").json()["subject"] == "dir/name.proto"
    missing = httpx.delete(f"{s}/subjects/nope")
    assert (missing.status_code, missing.json()["error_code"]) == (404, 40401)


def test_confluent_client_against_a_secondary(start: Callable[..., EmbeddedRegistry]) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    registries = [start(), start()]
    primary = wait_for_primary(registries)
    secondary = next(r for r in registries if r is not primary)
    client = SchemaRegistryClient({"url": secondary.url})
    sid = client.register_schema("orders-value", Schema(avro("Order"), "AVRO"))
    assert client.get_latest_version("orders-value").schema_id == sid
    assert client.register_schema("orders-value", Schema(avro("Order"), "AVRO")) == sid
    client.set_compatibility("orders-value", "NONE")
    assert client.get_compatibility("orders-value") == "NONE"
    other = SchemaRegistryClient({"url": primary.url})
    assert other.get_schema(sid).schema_str == client.get_schema(sid).schema_str
    assert client.delete_subject("orders-value") == [1]


def test_writes_continue_after_the_primary_is_killed(start: Callable[..., EmbeddedRegistry]) -> None:
    registries = [start(), start()]
    primary = wait_for_primary(registries)
    survivor = next(r for r in registries if r is not primary)
    first = register(survivor.url, "s", avro("Before")).json()["id"]
    primary.kill()  # no LeaveGroup: the coordinator notices when the session times out
    deadline = time.monotonic() + 12
    while True:
        resp = register(survivor.url, "t", avro("After"))
        if resp.status_code == 200:
            break
        # until the session expires the dead primary is still the primary: 50003
        assert (resp.status_code, resp.json()["error_code"]) == (500, 50003), resp.text
        assert time.monotonic() < deadline, "writes did not resume"
        time.sleep(0.2)
    assert survivor.is_primary
    assert resp.json()["id"] > first  # the new primary caught up: no id handed out twice
    assert httpx.get(f"{survivor.url}/subjects").json() == ["s", "t"]


def test_an_ineligible_instance_never_becomes_primary(start: Callable[..., EmbeddedRegistry]) -> None:
    ineligible = start(leader_eligibility="false")
    eligible = start(master_eligibility="true")  # the older name
    primary = wait_for_primary([ineligible, eligible])
    assert primary is eligible and not ineligible.is_primary
    resp = register(ineligible.url, "x", avro("X"))
    assert resp.status_code == 200
    assert httpx.get(f"{eligible.url}/subjects/x/versions/1").json()["id"] == resp.json()["id"]


def test_no_eligible_instance_refuses_writes_as_confluent(start: Callable[..., EmbeddedRegistry]) -> None:
    a = start(leader_eligibility="false")
    b = start(leader_eligibility="false")
    for r in (a, b):
        wait_until(lambda r=r: r.server is not None and r.server.elector is not None and r.server.elector.settled)
    resp = register(a.url, "x", avro("X"))
    assert resp.status_code == 500
    assert resp.json() == {"error_code": 50004, "message": "Leader not known."}
    resp = httpx.put(f"{b.url}/config", json={"compatibility": "NONE"}, headers=CT)
    assert resp.json() == {"error_code": 50004, "message": "Failed to update compatibility level"}
    assert httpx.get(f"{a.url}/master_available").json() == {"master_available": False}
    assert httpx.get(f"{a.url}/subjects").json() == []  # reads are served
    assert httpx.get(f"{a.url}/config").json() == {"compatibilityLevel": "BACKWARD"}
