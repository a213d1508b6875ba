"""Schemathesis over the REST proxy's v3 API with Confluent's OpenAPI description
(tests/fixtures/specs/kafka-rest-v3-openapi.yaml; source and licence in its README): every
operation, positive and negative requests generated from the description, checked with
``not_a_server_error`` (no 5xx), ``status_code_conformance`` and ``response_schema_conformance``
(every answer matches the description's schema).

Generated cluster ids are random strings, which would only ever meet the 404 of an unknown
cluster; so half the positive requests get the real cluster id, and, where the path names a
topic, a topic that exists (with a consumer group and its committed offsets, so that the group
and lag resources have something to describe). Bounded for CI: ``EXAMPLES`` per operation and
mode, derandomized, no example database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from zurau import EmbeddedBroker
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy

SPEC = Path(__file__).parent.parent / "fixtures" / "specs" / "kafka-rest-v3-openapi.yaml"
EXAMPLES = 12
TOPIC = "fuzzed-topic"
GROUP = "fuzzed-group"

# Answers Confluent's proxy gives too that its description leaves out (the conformance checks
# are not applied to them; not_a_server_error is).
SPEC_GAPS: dict[tuple[str, str], set[int]] = {
    # Confluent answers a batch with a bad, repeated or missing entry id 422 (42208), undocumented.
    ("POST", "/clusters/{cluster_id}/topics/{topic_name}/records:batch"): {422},
    # Confluent's CreateAclBatchAction answers 204 No Content; the description says 201.
    ("POST", "/clusters/{cluster_id}/acls:batch"): {204},
}


@pytest.fixture(scope="module")
def proxy() -> Iterator[tuple[EmbeddedRestProxy, str]]:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as broker, EmbeddedRestProxy(broker.bootstrap_servers) as p:
        conf = {"bootstrap.servers": broker.bootstrap_servers}
        admin = AdminClient(conf)  # kept alive until its future is done
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(10)
        producer = Producer(conf)
        for i in range(10):
            producer.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i)
        assert producer.flush(10) == 0
        consumer = Consumer({**conf, "group.id": GROUP, "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([TOPIC])
        got = 0
        for _ in range(100):
            if consumer.poll(0.2) is not None:
                got += 1
            if got >= 5:
                break
        consumer.commit(asynchronous=False)
        consumer.close()
        cluster_id = _cluster_id(p.url)
        yield p, cluster_id


def _cluster_id(url: str) -> str:
    import httpx

    body = httpx.get(f"{url}/v3/clusters", timeout=10).json()
    return str(body["data"][0]["cluster_id"])


def _operation_test(
    operation: Any, mode: GenerationMode, base_url: str, cluster_id: str, sent: list[int]
) -> Callable[[], None]:
    gaps = SPEC_GAPS.get((operation.method.upper(), operation.path), set())

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case) -> None:
        params = case.path_parameters or {}
        if mode is GenerationMode.POSITIVE and "cluster_id" in params and sent[0] % 2 == 0:
            params = {**params, "cluster_id": cluster_id}
            if "topic_name" in params:
                params["topic_name"] = TOPIC
            if "consumer_group_id" in params:
                params["consumer_group_id"] = GROUP
            case.path_parameters = params
        response = case.call(base_url=base_url, timeout=30)
        sent[0] += 1
        checks = [not_a_server_error]
        if response.status_code not in gaps and not _not_found(operation, response):
            checks += [status_code_conformance, response_schema_conformance]
        case.validate_response(response, checks=checks)

    return check  # type: ignore[no-any-return]


def _not_found(operation: Any, response: Any) -> bool:
    """A 404 with Confluent's error body for a path naming something that does not exist (a
    generated cluster id, topic, group...): Confluent answers so on every such path, though its
    description lists the 404 only on some."""
    if response.status_code != 404 or not operation.path_parameters:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("error_code"), int) and isinstance(body.get("message"), str)


def _can_be_negative(operation: Any) -> bool:
    params = [*operation.path_parameters, *operation.query]
    return bool(len(operation.body)) or any(p.definition.get("schema", {}).get("type") != "string" for p in params)


def test_v3_against_confluents_openapi(proxy: tuple[EmbeddedRestProxy, str]) -> None:
    p, cluster_id = proxy
    schema = schemathesis.openapi.from_path(SPEC)
    sent = [0]
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if _can_be_negative(operation) else [])
        for mode in modes:
            try:
                _operation_test(operation, mode, f"{p.url}/v3", cluster_id, sent)()
            except Unsatisfiable:  # every negative draw happened to be valid
                assert mode is GenerationMode.NEGATIVE
    print(f"{operations} operations, {sent[0]} requests")
    assert operations >= 30 and sent[0] > operations
