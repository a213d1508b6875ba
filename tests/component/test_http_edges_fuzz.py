"""Property-based hostile input for the three HTTP edge services (issue 29): every JSON-bodied
endpoint of the registry, Connect and the console gets bodies (and schema strings) nested
thousands deep, numbers of
thousands of digits (and out of every Kafka integer range), non-UTF-8 bytes and lone surrogates,
and bodies just over the size limit, each both as the whole body and as one leaf of an otherwise
well-formed request. The property: never a 5xx, and the service answers its health probe after
every request. Bounded (``MAX_EXAMPLES`` per service, derandomized, no example database)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zurau import EmbeddedBroker, EmbeddedRegistry
from zurau.connect import rest_api as connect_rest
from zurau.connect.embedded_connect import EmbeddedConnect
from zurau.console import web_api
from zurau.console.embedded_console import EmbeddedConsole

MAX_EXAMPLES = 150
LIMIT = 65536  # every service's body limit here (the registry's max.request.bytes, the others patched)
X = "__HOSTILE__"


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        for f in admin.create_topics([NewTopic("fz", 1, 1)]).values():
            f.result(30)
        yield b


@pytest.fixture(scope="module")
def services(broker: EmbeddedBroker) -> Iterator[dict[str, str]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(connect_rest, "MAX_BODY", LIMIT)
        mp.setattr(web_api, "MAX_BODY", LIMIT)
        with EmbeddedRegistry(broker.bootstrap_servers, max_request_bytes=LIMIT) as registry, \
                EmbeddedConnect(broker.bootstrap_servers) as connect, \
                EmbeddedConsole(broker.bootstrap_servers) as console:
            sink = {"connector.class": "FileStreamSink", "topics": "fz", "file": "/dev/null"}
            created = httpx.post(connect.url + "/connectors", json={"name": "fz-sink", "initial_state": "STOPPED",
                                                                    "config": sink}, timeout=30)
            assert created.status_code == 201, created.text
            yield {"registry": registry.url, "connect": connect.url, "console": console.url}


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    template: object  # the body; the string X marks where a hostile leaf goes


INT = '"int"'
ENDPOINTS = {
    "registry": [
        Endpoint("POST", "/subjects/fz/versions", {"schema": X}),
        Endpoint("POST", "/subjects/fz/versions", {"schema": INT, "schemaType": X}),
        Endpoint("POST", "/subjects/fz/versions", {"schema": INT, "version": X}),
        Endpoint("POST", "/subjects/fz/versions", {"schema": INT, "references": [{"name": "a", "subject": "b",
                                                                                   "version": X}]}),
        Endpoint("POST", "/subjects/fz", {"schema": X}),
        Endpoint("POST", "/compatibility/subjects/fz/versions/latest", {"schema": X}),
        Endpoint("PUT", "/config/fz", {"compatibility": X}),
    ],
    "connect": [
        Endpoint("POST", "/connectors", {"name": "fz-src", "config": {
            "connector.class": "FileStreamSource", "file": "/dev/null", "topic": "fz-out", "batch.size": X}}),
        Endpoint("POST", "/connectors", {"name": X, "config": {"connector.class": "FileStreamSource"}}),
        Endpoint("PUT", "/connectors/fz-src2/config", {"connector.class": "FileStreamSource", "tasks.max": X}),
        Endpoint("PATCH", "/connectors/fz-sink/offsets", {"offsets": [
            {"partition": {"kafka_topic": "fz", "kafka_partition": X}, "offset": {"kafka_offset": 1}}]}),
        Endpoint("PATCH", "/connectors/fz-sink/offsets", {"offsets": [
            {"partition": {"kafka_topic": "fz", "kafka_partition": 0}, "offset": {"kafka_offset": X}}]}),
        Endpoint("PUT", "/connector-plugins/FileStreamSource/config/validate", {"batch.size": X}),
    ],
    "console": [
        Endpoint("POST", "/api/topics", {"name": "fz-new", "partitions": X, "replication_factor": 1}),
        Endpoint("POST", "/api/topics", {"name": "fz-new", "partitions": 1, "replication_factor": X}),
        Endpoint("POST", "/api/topics/fz/messages", {"value": X, "encoding": "json"}),
        Endpoint("POST", "/api/topics/fz/messages", {"value": "v", "partition": X}),
        Endpoint("POST", "/api/groups/fz-g/reset-offsets", {"topics": ["fz"], "mode": "timestamp", "value": X,
                                                            "dry_run": True}),
        Endpoint("POST", "/api/groups/fz-g/reset-offsets", {"topics": ["fz"], "mode": "offset", "value": X,
                                                            "dry_run": True}),
        Endpoint("PATCH", "/api/topics/fz/configs", {"set": {"retention.ms": X}, "validate_only": True}),
    ],
}
HEALTH = {"registry": "/subjects", "connect": "/connectors", "console": "/api/info"}


def _deep(n: int, opener: str) -> bytes:
    """``n`` arrays (``[[...]]``) or objects (``{"a":{"a":...0}}``) nested in each other."""
    if opener == "[":
        return b"[" * n + b"]" * n
    return b'{"a":' * n + b"0" + b"}" * n


huge_numbers = st.one_of(
    st.integers(min_value=15, max_value=6000).map(lambda k: ("9" * k).encode()),
    st.integers(min_value=15, max_value=6000).map(lambda k: ("-1" + "0" * k).encode()),
    st.sampled_from([2**15, 2**31, 2**63, 2**64, -(2**31) - 1, -(2**63) - 1]).map(lambda v: str(v).encode()),
    st.sampled_from([b"1e400", b"-1e400", b"1.5", b"1e-400", b"NaN", b"Infinity", b"0." + b"0" * 5000 + b"1"]),
)
DEPTHS = st.sampled_from([65, 100, 500, 999, 1000, 1500, 5000, 50_000])
deep_values = st.tuples(DEPTHS, st.sampled_from(["[", '{"a":'])).map(lambda t: _deep(*t))


def _records(n: int) -> bytes:
    """An Avro schema of ``n`` nested records, as the text of a JSON string (escaped quotes)."""
    text = '"int"'
    for i in range(n):
        text = f'{{"type": "record", "name": "R{i}", "fields": [{{"name": "f", "type": {text}}}]}}'
    return json.dumps(text).encode()


# schemas (JSON strings) nested deeply: the registry parses them after the body
deep_strings = st.one_of(
    deep_values.map(lambda b: json.dumps(b.decode()).encode()),
    st.sampled_from([40, 60, 400, 1000]).map(_records),
)
bad_text = st.one_of(
    st.binary(min_size=1, max_size=64).map(lambda b: b'"' + b.replace(b'"', b"") + b'"'),
    st.sampled_from([b'"\\ud800"', b'"\\udfff x"', b'"\xff\xfe"', b'"\xc3\x28"', b'"\xed\xa0\x80"']),
)
oversized = st.integers(min_value=LIMIT + 1, max_value=LIMIT + 4096).map(lambda n: b'"' + b"a" * n + b'"')
leaves = st.one_of(huge_numbers, deep_values, deep_strings, bad_text, oversized)
whole_bodies = st.one_of(
    deep_values,
    st.binary(max_size=256),
    oversized,
    huge_numbers,
)


def _render(template: object, leaf: bytes) -> bytes:
    return json.dumps(template).encode().replace(json.dumps(X).encode(), leaf, 1)


def _bodies(service: str) -> st.SearchStrategy[tuple[Endpoint, bytes]]:
    endpoint = st.sampled_from(ENDPOINTS[service])
    in_a_leaf = st.tuples(endpoint, leaves).map(lambda t: (t[0], _render(t[0].template, t[1])))
    whole = st.tuples(endpoint, whole_bodies)
    return st.one_of(in_a_leaf, whole)


FUZZ = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


@pytest.mark.parametrize("service", ["registry", "connect", "console"])
def test_hostile_json_bodies_never_5xx(services: dict[str, str], service: str) -> None:
    url = services[service]
    sent: list[bytes] = []
    with httpx.Client(base_url=url, timeout=60, headers={"Content-Type": "application/json"}) as http:

        @FUZZ
        @given(case=_bodies(service))
        def check(case: tuple[Endpoint, bytes]) -> None:
            endpoint, body = case
            resp = http.request(endpoint.method, endpoint.path, content=body)
            sent.append(body)
            assert resp.status_code < 500, (endpoint, body[:200], resp.status_code, resp.text[:500])
            assert http.get(HEALTH[service]).status_code == 200

        check()
    assert len(sent) >= MAX_EXAMPLES  # every example reached the service


@pytest.mark.parametrize("value", ["9" * 5000, str(2**63), "-" + "1" * 25, "1e5", "２"])
def test_hostile_numbers_in_console_query_parameters(services: dict[str, str], value: str) -> None:
    with httpx.Client(base_url=services["console"], timeout=60) as http:
        for params in ({"start": "timestamp", "timestamp": value}, {"start": "offset", "offset": value},
                       {"partition": value}, {"limit": value}, {"max_scan": value}):
            resp = http.get("/api/topics/fz/messages", params=params)
            assert resp.status_code == 400, (params, resp.text)
