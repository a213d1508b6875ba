"""The clients that push their metrics (KIP-714), as the console's ``--metrics-url`` shows them:
one entry per client instance, from the scraped broker's Prometheus series.

The scraped broker labels what each client pushed with ``client_instance_id`` and ``client_id``
(README "Client telemetry"); ``zurau_client_telemetry_info`` names its software and address,
``zurau_client_telemetry_last_push_timestamp_seconds``, ``..._push_interval_seconds`` and
``..._pushes_total`` say when and how often it pushes. Per client:

* ``client_instance_id``, ``client_id``, ``software_name``, ``software_version``,
  ``source_address``, ``last_push_ms``, ``push_interval_ms``, ``pushes``;
* ``main``: the headline numbers found among its series (:data:`HEADLINES`: throughput, errors,
  latency, lag), each the mean over label sets for an average, the largest for a maximum and the
  sum otherwise; a name the client did not push is absent (librdkafka and the Java client push
  different sets);
* ``metrics``: every series it pushed (name, the labels beyond the two ids, value), by name.

Clients are sorted by client id then instance id. A scrape of a broker that is not Zurau (or
has no pushing client) gives an empty list. Only the scraped broker's clients are shown: a
client pushes to one broker at a time (the one it picked for telemetry).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from prometheus_client.metrics_core import Metric

PREFIX = "org_apache_kafka_"
HEADLINES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # throughput
    ("record_send_rate", ("producer_record_send_rate",)),
    ("outgoing_byte_rate", ("producer_outgoing_byte_rate",)),
    ("records_consumed_rate", ("consumer_fetch_manager_records_consumed_rate",)),
    ("bytes_consumed_rate", ("consumer_fetch_manager_bytes_consumed_rate",)),
    # errors
    ("record_error_rate", ("producer_record_error_rate",)),
    ("record_retry_rate", ("producer_record_retry_rate",)),
    ("connection_creation_rate", ("producer_connection_creation_rate", "consumer_connection_creation_rate")),
    # latency
    ("request_latency_avg_ms", ("producer_request_latency_avg", "producer_node_request_latency_avg",
                                "consumer_node_request_latency_avg")),
    ("request_latency_max_ms", ("producer_request_latency_max", "producer_node_request_latency_max",
                                "consumer_node_request_latency_max")),
    ("record_queue_time_avg_ms", ("producer_record_queue_time_avg",)),
    ("produce_throttle_time_avg_ms", ("producer_produce_throttle_time_avg",)),
    ("fetch_latency_avg_ms", ("consumer_fetch_manager_fetch_latency_avg",)),
    ("commit_latency_avg_ms", ("consumer_coordinator_commit_latency_avg",)),
    ("poll_idle_ratio_avg", ("consumer_poll_idle_ratio_avg",)),
    # lag and assignment
    ("records_lag_max", ("consumer_fetch_manager_records_lag_max",)),
    ("assigned_partitions", ("consumer_coordinator_assigned_partitions",)),
)  # fmt: skip
_IDS = ("client_instance_id", "client_id")


def _combine(name: str, values: list[float]) -> float:
    if name.endswith("_avg") or name.endswith("_ratio"):
        return sum(values) / len(values)
    if name.endswith("_max"):
        return max(values)
    return sum(values)


def clients(families: Iterable[Metric]) -> list[dict[str, Any]]:
    """The pushing clients of one scrape (see the module docstring)."""
    out: dict[str, dict[str, Any]] = {}

    def entry(labels: dict[str, str]) -> dict[str, Any] | None:
        cid = labels.get("client_instance_id")
        if cid is None:
            return None
        return out.setdefault(
            cid,
            {
                "client_instance_id": cid,
                "client_id": labels.get("client_id", ""),
                "software_name": None,
                "software_version": None,
                "source_address": None,
                "last_push_ms": None,
                "push_interval_ms": None,
                "pushes": None,
                "main": {},
                "metrics": [],
            },
        )

    pushed: dict[str, dict[str, list[float]]] = {}
    for f in families:
        for s in f.samples:
            if s.name.endswith("_created") or not math.isfinite(s.value):
                continue
            e = entry(dict(s.labels))
            if e is None:
                continue
            if f.name == "zurau_client_telemetry_info":
                e["software_name"] = s.labels.get("client_software_name") or None
                e["software_version"] = s.labels.get("client_software_version") or None
                e["source_address"] = s.labels.get("client_source_address") or None
            elif f.name == "zurau_client_telemetry_last_push_timestamp_seconds":
                e["last_push_ms"] = int(s.value * 1000)
            elif f.name == "zurau_client_telemetry_push_interval_seconds":
                e["push_interval_ms"] = int(s.value * 1000)
            elif f.name == "zurau_client_telemetry_pushes":
                e["pushes"] = int(s.value)
            elif s.name.startswith(PREFIX):
                extra = {k: v for k, v in s.labels.items() if k not in _IDS}
                e["metrics"].append({"name": s.name, "labels": extra, "value": s.value})
                pushed.setdefault(e["client_instance_id"], {}).setdefault(s.name[len(PREFIX) :], []).append(
                    s.value
                )
    for cid, e in out.items():
        by_name = pushed.get(cid, {})
        for key, candidates in HEADLINES:
            for name in candidates:
                values = by_name.get(name)
                if values:
                    e["main"][key] = _combine(name, values)
                    break
        e["metrics"].sort(key=lambda m: (m["name"], sorted(m["labels"].items())))
    return sorted(out.values(), key=lambda e: (e["client_id"], e["client_instance_id"]))


__all__ = ["HEADLINES", "clients"]
