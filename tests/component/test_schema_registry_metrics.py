"""The schema registry's /metrics: requests per endpoint template and status, and schema counts,
parsed with prometheus_client's text parser."""

from __future__ import annotations

import json

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.compat.test_metrics_confluent_kafka import REGISTRY_PREFIXES, dashboard_metric_names, served_names
from zurau import EmbeddedBroker, EmbeddedRegistry

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def _schema(name: str, more: bool = False) -> str:
    fields: list[dict[str, object]] = [{"name": "a", "type": "int"}]
    if more:
        fields.append({"name": "b", "type": "string", "default": ""})
    return json.dumps({"type": "record", "name": name, "fields": fields})


def _samples(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(r.text)
        for s in f.samples
    }


def test_request_and_schema_counts() -> None:
    with (
        EmbeddedBroker(group_initial_rebalance_delay_ms=0) as broker,
        EmbeddedRegistry(broker.bootstrap_servers) as registry,
        httpx.Client(base_url=registry.url, headers=CT, timeout=30) as http,
    ):
        for subject, schema in (
            ("orders-value", _schema("Order")),
            ("users-value", _schema("User")),
            ("users-value", _schema("User", more=True)),
        ):
            r = http.post(f"/subjects/{subject}/versions", json={"schema": schema})
            assert r.status_code == 200, r.text
        assert http.get("/subjects/nobody/versions").status_code == 404
        assert http.get("/no/such/path").status_code == 404
        assert http.delete("/subjects/orders-value").status_code == 200
        samples = _samples(http)
        versions = "/subjects/{subject}/versions"
        requests = "kafka_schema_registry_jersey_metrics_requests_total"
        assert samples[(requests, (("endpoint", versions), ("method", "POST"), ("status", "200")))] == 3
        assert samples[(requests, (("endpoint", versions), ("method", "GET"), ("status", "404")))] == 1
        assert samples[(requests, (("endpoint", "other"), ("method", "GET"), ("status", "404")))] == 1
        latency = "kafka_schema_registry_jersey_metrics_request_latency_seconds_count"
        assert samples[(latency, (("endpoint", versions), ("method", "POST")))] == 3
        # users-value has two live versions; orders-value was deleted (soft).
        assert samples[("kafka_schema_registry_registered_count", ())] == 2
        assert samples[("zurau_schema_registry_subjects", ())] == 1
        assert samples[("zurau_schema_registry_schemas", (("schema_type", "AVRO"),))] == 3
        # The scrape itself is counted, and the registry keeps serving.
        again = _samples(http)
        assert again[(requests, (("endpoint", "/metrics"), ("method", "GET"), ("status", "200")))] == 1
        assert http.get("/subjects").json() == ["users-value"]
        # The Grafana dashboard's registry panels query metrics the registry serves.
        wanted = {m for m in dashboard_metric_names() if m.startswith(REGISTRY_PREFIXES)}
        assert len(wanted) >= 3
        assert wanted - served_names(http.get("/metrics").text) == set()
