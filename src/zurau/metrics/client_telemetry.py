"""What clients push (KIP-714) as Prometheus series on the broker's ``/metrics``.

Each pushed OTLP metric becomes a family named after it with every character outside
``[a-zA-Z0-9_]`` replaced by ``_`` (``org.apache.kafka.producer.node.request.latency.avg`` ->
``org_apache_kafka_producer_node_request_latency_avg``): a monotonic sum is a counter (its
exposition name ends in ``_total``, once: ``connection.creation.total`` is
``org_apache_kafka_producer_connection_creation_total``; delta pushes are accumulated by the
broker), a gauge or a
non-monotonic sum a gauge. Labels: ``client_instance_id``, ``client_id`` and the point's OTLP
attributes (``topic``, ``partition``, ``node_id``, ...; keys sanitized the same way, at most
eight). A family whose name another kind already took is skipped for that kind.

About the clients themselves (the console's per-client view reads these):

* ``kafka_server_client_metrics_instance_count``: client instances this broker knows (Kafka's
  ``client-metrics`` ``instance-count``);
* ``kafka_server_client_metrics_unknown_subscription_request_total``, ``..._throttle_total``,
  ``..._push_total`` and ``..._push_errors_total{error}``: the broker's answers;
* ``zurau_client_telemetry_info{client_instance_id, client_id, client_software_name,
  client_software_version, client_source_address}`` = 1 per client with pushed metrics;
* ``zurau_client_telemetry_last_push_timestamp_seconds``,
  ``zurau_client_telemetry_push_interval_seconds``, ``zurau_client_telemetry_pushes_total`` and
  ``zurau_client_telemetry_dropped_points_total`` per client.

Only clients that pushed within their expiry appear (:mod:`zurau.broker.client_telemetry_store`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from zurau.broker.client_metrics_manager import ClientMetricsManager

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
BASE_LABELS = ("client_instance_id", "client_id")


def prometheus_name(name: str) -> str:
    """An OTLP metric or attribute name as a Prometheus name."""
    out = _INVALID.sub("_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    return out


def client_telemetry_families(
    manager: ClientMetricsManager, error_name: Callable[[int], str]
) -> Iterator[Metric]:
    now = manager.now_ms()
    yield _gauge(
        "kafka_server_client_metrics_instance_count",
        "Client instances this broker knows (KIP-714; Kafka client-metrics instance-count).",
        manager.instance_count(),
    )
    yield _counter(
        "kafka_server_client_metrics_unknown_subscription_request",
        "Pushes with a subscription id that is not the client's current one.",
        manager.unknown_subscription_requests,
    )
    yield _counter(
        "kafka_server_client_metrics_throttle",
        "Telemetry requests refused for coming before the push interval.",
        manager.throttled,
    )
    yield _counter("kafka_server_client_metrics_push", "Pushes accepted.", manager.pushes)
    errors = CounterMetricFamily(
        "kafka_server_client_metrics_push_errors", "Pushes refused, per error.", labels=["error"]
    )
    for code, n in sorted(manager.push_errors.items()):
        errors.add_metric([error_name(code)], n)
    yield errors

    info = GaugeMetricFamily(
        "zurau_client_telemetry_info",
        "A client that pushes its metrics: its ids and software (value 1).",
        labels=[*BASE_LABELS, "client_software_name", "client_software_version", "client_source_address"],
    )
    last = GaugeMetricFamily(
        "zurau_client_telemetry_last_push_timestamp_seconds",
        "When the client last pushed.",
        labels=list(BASE_LABELS),
    )
    interval = GaugeMetricFamily(
        "zurau_client_telemetry_push_interval_seconds",
        "The client's push interval.",
        labels=list(BASE_LABELS),
    )
    pushes = CounterMetricFamily(
        "zurau_client_telemetry_pushes", "Pushes accepted from the client.", labels=list(BASE_LABELS)
    )
    dropped = CounterMetricFamily(
        "zurau_client_telemetry_dropped_points",
        "Data points dropped for the per-client series bound.",
        labels=list(BASE_LABELS),
    )
    families: dict[str, Metric] = {}
    kinds: dict[str, str] = {}
    for c in manager.store.clients(now):
        ids = [str(c.client_instance_id), c.client_id]
        info.add_metric(ids + [c.software_name or "", c.software_version or "", c.source_address or ""], 1)
        last.add_metric(ids, c.last_push_ms / 1000)
        interval.add_metric(ids, c.interval_ms / 1000)
        pushes.add_metric(ids, c.pushes)
        dropped.add_metric(ids, c.dropped_points)
        for (name, attrs), s in sorted(c.series.items()):
            family_name = prometheus_name(name)
            kind = "counter" if s.kind == "sum" and s.monotonic else "gauge"
            if kind == "counter" and family_name.endswith("_total"):
                family_name = family_name[: -len("_total")]  # the sample's name gets it back
            if kinds.setdefault(family_name, kind) != kind:
                continue
            label_names = (*BASE_LABELS, *(prometheus_name(k) for k, _ in attrs))
            if len(set(label_names)) != len(label_names):
                continue  # an attribute named like a base label (or two alike once sanitized)
            family = families.get(family_name)
            if family is None:
                doc = s.description or f"Pushed by clients (KIP-714): {name}."
                family = families[family_name] = (
                    CounterMetricFamily(family_name, doc, labels=[])
                    if kind == "counter"
                    else GaugeMetricFamily(family_name, doc, labels=[])
                )
            labels = dict(zip(label_names, ids + [v for _, v in attrs], strict=True))
            suffix = "_total" if kind == "counter" else ""
            family.samples.append(Sample(family_name + suffix, labels, s.value, None, None))
    yield info
    yield last
    yield interval
    yield pushes
    yield dropped
    yield from families.values()


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)
