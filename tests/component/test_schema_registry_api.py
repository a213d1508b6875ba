"""The schema registry's REST API against an embedded broker: every endpoint, Confluent's error
codes, bad input (the registry keeps serving), and restarts that lose nothing and reuse no id."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from zurau import EmbeddedBroker, EmbeddedRegistry

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def avro(*fields: dict, name: str = "User") -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


A = {"name": "a", "type": "int"}
B_DEFAULT = {"name": "b", "type": "string", "default": "x"}
B = {"name": "b", "type": "string"}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    # no initial rebalance delay: the registry's first write waits for its primary election
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


@pytest.fixture(scope="module")
def registry(broker: EmbeddedBroker) -> Iterator[EmbeddedRegistry]:
    with EmbeddedRegistry(broker.bootstrap_servers, max_request_bytes=65536) as r:
        yield r


@pytest.fixture
def http(registry: EmbeddedRegistry) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry.url, headers=CT, timeout=30) as c:
        yield c


@pytest.fixture
def subject() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


def register(http: httpx.Client, subject: str, schema: str, **body: object) -> httpx.Response:
    return http.post(f"/subjects/{subject}/versions", json={"schema": schema, **body})


def error(resp: httpx.Response) -> tuple[int, int]:
    return resp.status_code, resp.json()["error_code"]


def test_root_metadata_and_types(http: httpx.Client) -> None:
    assert http.get("/").json() == {}
    assert http.get("/master_available").json() == {"master_available": True}
    assert http.get("/v1/metadata/id").json()["scope"]["clusters"]["schema-registry-cluster"]
    assert sorted(http.get("/schemas/types").json()) == ["AVRO", "JSON", "PROTOBUF"]
    assert http.get("/").headers["content-type"].startswith("application/vnd.schemaregistry.v1+json")


def test_register_get_lookup_and_list(http: httpx.Client, subject: str) -> None:
    first = register(http, subject, avro(A))
    assert first.status_code == 200
    sid = first.json()["id"]
    # the same schema (other whitespace) returns the same id and adds no version
    assert register(http, subject, json.dumps(json.loads(avro(A)), indent=2)).json() == {"id": sid}
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
    got = http.get(f"/subjects/{subject}/versions/1").json()
    assert got == {"subject": subject, "version": 1, "id": sid, "schema": avro(A).replace(" ", "")}
    assert http.get(f"/subjects/{subject}/versions/latest").json()["version"] == 1
    assert json.loads(http.get(f"/subjects/{subject}/versions/1/schema").text) == json.loads(avro(A))
    assert json.loads(http.get(f"/schemas/ids/{sid}").json()["schema"]) == json.loads(avro(A))
    assert json.loads(http.get(f"/schemas/ids/{sid}/schema").text) == json.loads(avro(A))
    assert subject in http.get(f"/schemas/ids/{sid}/subjects").json()
    assert {"subject": subject, "version": 1} in http.get(f"/schemas/ids/{sid}/versions").json()
    looked = http.post(f"/subjects/{subject}", json={"schema": avro(A)}).json()
    assert (looked["id"], looked["version"]) == (sid, 1)
    assert subject in http.get("/subjects").json()
    assert http.get("/subjects", params={"subjectPrefix": subject}).json() == [subject]
    # the same schema under another subject shares the id
    assert register(http, subject + "-other", avro(A)).json() == {"id": sid}


def test_not_found_codes(http: httpx.Client, subject: str) -> None:
    assert error(http.get(f"/subjects/{subject}/versions")) == (404, 40401)
    assert error(http.post(f"/subjects/{subject}", json={"schema": avro(A)})) == (404, 40401)
    register(http, subject, avro(A))
    assert error(http.get(f"/subjects/{subject}/versions/7")) == (404, 40402)
    assert error(http.get(f"/subjects/{subject}/versions/zero")) == (422, 42202)
    assert error(http.get(f"/subjects/{subject}/versions/0")) == (422, 42202)
    assert error(http.post(f"/subjects/{subject}", json={"schema": avro(A, B_DEFAULT)})) == (404, 40403)
    assert error(http.get("/schemas/ids/987654")) == (404, 40403)


def test_evolution_and_compatibility(http: httpx.Client, subject: str) -> None:
    register(http, subject, avro(A))
    bad = register(http, subject, avro(A, B))
    assert error(bad) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in bad.json()["message"]
    check = http.post(f"/compatibility/subjects/{subject}/versions/latest", json={"schema": avro(A, B)}, params={"verbose": "true"})
    assert check.json()["is_compatible"] is False and check.json()["messages"]
    ok = http.post(f"/compatibility/subjects/{subject}/versions/1", json={"schema": avro(A, B_DEFAULT)})
    assert ok.json() == {"is_compatible": True}
    assert register(http, subject, avro(A, B_DEFAULT)).status_code == 200
    assert http.get(f"/subjects/{subject}/versions").json() == [1, 2]
    # NONE lets anything through
    assert http.put(f"/config/{subject}", json={"compatibility": "NONE"}).json() == {"compatibility": "NONE"}
    assert register(http, subject, avro({"name": "z", "type": "bytes"})).status_code == 200


def test_transitive_checks_every_version(http: httpx.Client, subject: str) -> None:
    http.put(f"/config/{subject}", json={"compatibility": "FORWARD_TRANSITIVE"})
    register(http, subject, avro(A, B))
    register(http, subject, avro(A, B_DEFAULT))  # old readers (needing b) still read this
    # dropping b: version 2 (b has a default) reads it, version 1 (b required) cannot
    assert error(register(http, subject, avro(A))) == (409, 409)
    http.put(f"/config/{subject}", json={"compatibility": "FORWARD"})
    assert register(http, subject, avro(A)).status_code == 200


def test_config_endpoints(http: httpx.Client, subject: str) -> None:
    assert http.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert error(http.get(f"/config/{subject}")) == (404, 40408)
    assert http.get(f"/config/{subject}", params={"defaultToGlobal": "true"}).json() == {"compatibilityLevel": "BACKWARD"}
    assert error(http.put(f"/config/{subject}", json={"compatibility": "SIDEWAYS"})) == (422, 42203)
    register(http, subject, avro(A))
    http.put(f"/config/{subject}", json={"compatibility": "full"})
    assert http.get(f"/config/{subject}").json() == {"compatibilityLevel": "FULL"}
    assert http.delete(f"/config/{subject}").json() == {"compatibilityLevel": "FULL"}
    assert error(http.get(f"/config/{subject}")) == (404, 40408)


def test_modes(http: httpx.Client, subject: str) -> None:
    assert http.get("/mode").json() == {"mode": "READWRITE"}
    assert error(http.put(f"/mode/{subject}", json={"mode": "SLEEPY"})) == (422, 42204)
    register(http, subject, avro(A))
    http.put(f"/mode/{subject}", json={"mode": "READONLY"})
    assert error(register(http, subject, avro(A, B_DEFAULT))) == (422, 42205)
    assert http.get(f"/subjects/{subject}/versions").json() == [1]  # reads still work
    assert http.delete(f"/mode/{subject}").json() == {"mode": "READONLY"}
    assert error(http.get(f"/mode/{subject}")) == (404, 40409)
    # an explicit id outside IMPORT mode is refused
    assert error(register(http, subject, avro(A, B_DEFAULT), id=4242)) == (422, 42205)


def test_import_mode_keeps_explicit_ids(http: httpx.Client, subject: str) -> None:
    assert http.put(f"/mode/{subject}", json={"mode": "IMPORT"}).json() == {"mode": "IMPORT"}
    resp = register(http, subject, avro(A, name="Imported"), id=90001, version=5)
    assert resp.json() == {"id": 90001}
    assert http.get(f"/subjects/{subject}/versions/5").json()["id"] == 90001
    assert error(register(http, subject, avro(A, name="Other"))) == (422, 42205)  # no id given
    http.put(f"/mode/{subject}", json={"mode": "READWRITE"})
    # ids continue above the imported one
    assert register(http, f"{subject}-next", avro(A, name="Fresh")).json()["id"] > 90001


def test_soft_and_permanent_delete(http: httpx.Client, subject: str) -> None:
    register(http, subject, avro(A))
    register(http, subject, avro(A, B_DEFAULT))
    assert error(http.delete(f"/subjects/{subject}/versions/1", params={"permanent": "true"})) == (404, 40407)
    assert http.delete(f"/subjects/{subject}/versions/1").json() == 1
    assert error(http.delete(f"/subjects/{subject}/versions/1")) == (404, 40406)
    assert http.get(f"/subjects/{subject}/versions").json() == [2]
    assert http.get(f"/subjects/{subject}/versions", params={"deleted": "true"}).json() == [1, 2]
    assert http.get(f"/subjects/{subject}/versions/1", params={"deleted": "true"}).json()["version"] == 1
    assert http.delete(f"/subjects/{subject}/versions/1", params={"permanent": "true"}).json() == 1
    assert http.get(f"/subjects/{subject}/versions", params={"deleted": "true"}).json() == [2]
    assert error(http.delete(f"/subjects/{subject}", params={"permanent": "true"})) == (404, 40405)
    assert http.delete(f"/subjects/{subject}").json() == [2]
    assert subject not in http.get("/subjects").json()
    assert subject in http.get("/subjects", params={"deleted": "true"}).json()
    assert error(http.delete(f"/subjects/{subject}")) == (404, 40404)
    # re-registering after a soft delete continues the version numbers
    assert register(http, subject, avro(A)).status_code == 200
    assert http.get(f"/subjects/{subject}/versions").json() == [3]
    http.delete(f"/subjects/{subject}")
    assert http.delete(f"/subjects/{subject}", params={"permanent": "true"}).json() == [2, 3]
    assert error(http.get(f"/subjects/{subject}/versions")) == (404, 40401)


def test_references(http: httpx.Client, subject: str) -> None:
    addr = json.dumps({"type": "record", "name": "Address", "namespace": "acme", "fields": [{"name": "zip", "type": "string"}]})
    assert register(http, f"{subject}-addr", addr).status_code == 200
    user = json.dumps({"type": "record", "name": "Customer", "fields": [{"name": "home", "type": "acme.Address"}]})
    refs = [{"name": "acme.Address", "subject": f"{subject}-addr", "version": 1}]
    assert error(register(http, subject, user)) == (422, 42201)  # unknown type without the reference
    sid = register(http, subject, user, references=refs).json()["id"]
    got = http.get(f"/schemas/ids/{sid}").json()
    assert got["references"] == refs
    assert http.get(f"/subjects/{subject}-addr/versions/1/referencedby").json() == [sid]
    assert error(http.delete(f"/subjects/{subject}-addr/versions/1")) == (422, 42206)
    bad_ref = [{"name": "x", "subject": "missing-subject", "version": 1}]
    assert error(register(http, subject, user, references=bad_ref)) == (422, 42201)


def test_json_schema_type(http: httpx.Client, subject: str) -> None:
    v1 = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False})
    resp = register(http, subject, v1, schemaType="JSON")
    assert resp.status_code == 200
    got = http.get(f"/subjects/{subject}/versions/latest").json()
    assert got["schemaType"] == "JSON"
    v2 = json.dumps({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "additionalProperties": False})
    assert register(http, subject, v2, schemaType="JSON").status_code == 200
    v3 = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert error(register(http, subject, v3, schemaType="JSON")) == (409, 409)
    assert error(register(http, subject, json.dumps({"type": 12}), schemaType="JSON")) == (422, 42201)


def test_normalize(http: httpx.Client, subject: str) -> None:
    plain = json.dumps({"type": "record", "name": "N", "namespace": "ns", "doc": "d", "fields": [{"name": "a", "type": {"type": "int"}}]})
    sid = http.post(f"/subjects/{subject}/versions", params={"normalize": "true"}, json={"schema": plain}).json()["id"]
    other = json.dumps({"fields": [{"type": "int", "name": "a"}], "name": "ns.N", "type": "record"})
    again = http.post(f"/subjects/{subject}/versions", params={"normalize": "true"}, json={"schema": other})
    assert again.json() == {"id": sid}
    assert http.get(f"/subjects/{subject}/versions").json() == [1]


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        (b"{not json", CT, (400, 400)),
        (b"[1, 2]", CT, (422, 422)),
        (b'{"schema": "{\\"type\\": \\"recrod\\"}"}', CT, (422, 42201)),
        (b'{"schema": "not json at all"}', CT, (422, 42201)),
        (b'{"schema": ""}', CT, (422, 42201)),
        (b'{"schema": "\\"int\\"", "schemaType": "XML"}', CT, (422, 42201)),
        (b'{"schema": "\\"int\\"", "references": "nope"}', CT, (422, 422)),
        (b'{"schema": "\\"int\\""}', {"Content-Type": "text/plain"}, (415, 415)),
        (b'{"schema": "' + b"x" * 70000 + b'"}', CT, (413, 413)),
    ],
    ids=["malformed", "not-object", "bad-avro", "schema-not-json", "empty", "unknown-type", "bad-refs", "content-type", "huge"],
)
def test_bad_input_gets_confluent_errors_and_registry_keeps_serving(
    http: httpx.Client, subject: str, body: bytes, headers: dict[str, str], expected: tuple[int, int]
) -> None:
    resp = http.post(f"/subjects/{subject}/versions", content=body, headers=headers)
    assert error(resp) == expected
    assert register(http, subject, avro(A)).status_code == 200


@pytest.mark.parametrize("ctype", ["application/json", "application/octet-stream", "application/vnd.schemaregistry+json"])
def test_accepted_content_types(http: httpx.Client, subject: str, ctype: str) -> None:
    resp = http.post(f"/subjects/{subject}/versions", content=json.dumps({"schema": '"long"'}), headers={"Content-Type": ctype})
    assert resp.status_code == 200


def test_restart_loses_nothing_and_never_reuses_ids(broker: EmbeddedBroker) -> None:
    topic = f"_schemas_{uuid.uuid4().hex[:6]}"
    with EmbeddedRegistry(broker.bootstrap_servers, **{"kafkastore.topic": topic}) as r1:
        with httpx.Client(base_url=r1.url, headers=CT) as c:
            ids = [register(c, f"r{i}", avro(A, name=f"R{i}")).json()["id"] for i in range(3)]
            c.put("/config", json={"compatibility": "FULL"})
            c.delete("/subjects/r2")
            c.delete("/subjects/r2", params={"permanent": "true"})
    with EmbeddedRegistry(broker.bootstrap_servers, **{"kafkastore.topic": topic}) as r2:
        with httpx.Client(base_url=r2.url, headers=CT) as c:
            assert c.get("/subjects").json() == ["r0", "r1"]
            assert [c.get(f"/subjects/r{i}/versions/1").json()["id"] for i in range(2)] == ids[:2]
            assert c.get("/config").json() == {"compatibilityLevel": "FULL"}
            new_id = register(c, "r3", avro(A, name="R3")).json()["id"]
            assert new_id > max(ids)  # the permanently deleted id is not handed out again
