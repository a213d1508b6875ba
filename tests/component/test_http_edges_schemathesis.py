"""Schemathesis over the registry (Confluent's OpenAPI description) and Connect (Kafka 3.9's),
both in tests/fixtures/specs (sources and licences in its README): for every operation the
service implements, positive and negative requests generated from the description, checked with
``not_a_server_error`` and ``status_code_conformance``. Bounded for CI: ``EXAMPLES`` per
operation and mode, derandomized, no example database (a few hundred requests in all)."""

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
from schemathesis.specs.openapi.checks import status_code_conformance

from zurau import EmbeddedBroker, EmbeddedRegistry
from zurau.connect.embedded_connect import EmbeddedConnect

SPECS = Path(__file__).parent.parent / "fixtures" / "specs"
EXAMPLES = 3

# The registry's own routes (Confluent's description also covers contexts, exporters, DEK
# registries and more that Zurau does not serve: those answer 404 and are not generated for).
REGISTRY_PATHS = (
    "/", "/v1/metadata/id", "/schemas/types", "/schemas/ids/{id}", "/schemas/ids/{id}/schema",
    "/schemas/ids/{id}/subjects", "/schemas/ids/{id}/versions", "/subjects", "/subjects/{subject}",
    "/subjects/{subject}/versions", "/subjects/{subject}/versions/{version}",
    "/subjects/{subject}/versions/{version}/schema", "/subjects/{subject}/versions/{version}/referencedby",
    "/compatibility/subjects/{subject}/versions", "/compatibility/subjects/{subject}/versions/{version}",
    "/config/{subject}", "/mode/{subject}",
)


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


# Answers Confluent's registry gives too that its description leaves out (status_code_conformance
# is not applied to them; not_a_server_error is).
SPEC_GAPS = {
    ("GET", "/v1/metadata/id"): {200},  # the description documents only a 500
    ("POST", "/subjects/{subject}"): {422},  # a lookup of an invalid schema: 42201, as Confluent's lookup throws
}


def unparseable_body_refused(response: Any) -> bool:
    """A 400 for a body that is not JSON: Confluent's REST layer (rest-utils' JSON parse
    exception mapper) answers 400 too, though its description documents no 400."""
    if response.status_code != 400:
        return False
    try:
        return str(response.json().get("message", "")).startswith("Unrecognized request body")
    except ValueError:
        return False


def _operation_test(operation: Any, mode: GenerationMode, base_url: str, sent: list[int]) -> Callable[[], None]:
    """A Hypothesis test of one operation in one generation mode (counts requests in ``sent``)."""
    gaps = SPEC_GAPS.get((operation.method.upper(), operation.path), set())

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case) -> None:
        response = case.call(base_url=base_url, timeout=30)
        sent[0] += 1
        checks = [not_a_server_error]
        if response.status_code not in gaps and not unparseable_body_refused(response):
            checks.append(status_code_conformance)
        case.validate_response(response, checks=checks)

    return check  # type: ignore[no-any-return]


def _fuzz(spec: Path, base_url: str, include: tuple[str, ...] | None) -> int:
    """Run every included operation; returns how many requests were sent."""
    schema = schemathesis.openapi.from_path(spec)
    sent = [0]
    for result in schema.get_all_operations():
        operation = result.ok()
        if include is not None and operation.path not in include:
            continue
        modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if _can_be_negative(operation) else [])
        for mode in modes:
            try:
                _operation_test(operation, mode, base_url, sent)()
            except Unsatisfiable:  # every negative draw happened to be valid
                assert mode is GenerationMode.NEGATIVE
    return sent[0]


def _can_be_negative(operation: Any) -> bool:
    """Whether a request can break the description: a body, or a parameter that is not any
    string (for the others every draw is valid, and Hypothesis spends its budget finding none)."""
    params = [*operation.path_parameters, *operation.query]
    return bool(len(operation.body)) or any(p.definition.get("schema", {}).get("type") != "string" for p in params)


def test_registry_against_confluents_openapi(broker: EmbeddedBroker) -> None:
    with EmbeddedRegistry(broker.bootstrap_servers) as registry:
        assert _fuzz(SPECS / "confluent-schema-registry-openapi.yaml", registry.url, REGISTRY_PATHS) > 0


def test_connect_against_kafkas_openapi(broker: EmbeddedBroker) -> None:
    with EmbeddedConnect(broker.bootstrap_servers, task_shutdown_graceful_timeout_ms=500) as connect:
        assert _fuzz(SPECS / "kafka-connect-rest-openapi-3.9.yaml", connect.url, None) > 0
