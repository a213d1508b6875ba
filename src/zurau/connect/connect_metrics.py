"""The Connect worker's Prometheus metrics, served at ``GET /metrics`` of its REST listener.

Kafka's ``task-error-metrics`` group (``kafka.connect:type=task-error-metrics,connector=...,task=...``)
for every task the worker runs, named as the JMX exporter names them:
``kafka_connect_task_error_metrics_<attribute with _ for ->{connector="...",task="..."}``, e.g.
``kafka_connect_task_error_metrics_total_record_errors``. The values are totals since the task
(instance) started, as Kafka's are; ``last_error_timestamp`` is in ms since the epoch (0: none).
Read from the worker's state at scrape time, on its event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from zurau.connect.errors import ErrorHandlingMetrics

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
PREFIX = "kafka_connect_task_error_metrics_"

_HELP = {
    "total-record-failures": "The number of record processing failures in this task.",
    "total-record-errors": "The number of record processing errors in this task.",
    "total-records-skipped": "The number of records skipped due to errors.",
    "total-retries": "The number of operations retried.",
    "total-errors-logged": "The number of errors that were logged.",
    "deadletterqueue-produce-requests": "The number of attempted writes to the dead letter queue.",
    "deadletterqueue-produce-failures": "The number of failed writes to the dead letter queue.",
    "last-error-timestamp": "The epoch timestamp when this task last encountered an error.",
}

TaskRows = Callable[[], list[tuple[str, int, dict[str, int]]]]


class TaskErrorCollector(Collector):
    def __init__(self, rows: TaskRows) -> None:
        self.rows = rows

    def collect(self) -> Iterable[Metric]:
        rows = self.rows()
        for name in (*ErrorHandlingMetrics.NAMES, "last-error-timestamp"):
            family = GaugeMetricFamily(
                PREFIX + name.replace("-", "_"), _HELP[name], labels=["connector", "task"]
            )
            for connector, task, values in rows:
                family.add_metric([connector, str(task)], values[name])
            yield family


def render(rows: TaskRows) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TaskErrorCollector(rows))
    return generate_latest(registry)
