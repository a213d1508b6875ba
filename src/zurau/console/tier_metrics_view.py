"""A tiered topic's two tiers as the console's ``--metrics-url`` shows them (issue 33): per
partition the remote tier's bytes and segments and the copy lag, which no Kafka API answers,
from the scraped broker's Prometheus series.

The scraped broker exports these gauges (labels ``topic``, ``partition``) only for the
partitions it leads (Kafka's ``BrokerTopicMetrics`` Remote* gauges):

=========================  =====================================================
JSON field                 series
=========================  =====================================================
``remote_size``            ``kafka_server_brokertopicmetrics_remotelogsizebytes``
``remote_segments``        ``kafka_server_brokertopicmetrics_remotelogmetadatacount``
``copy_lag_bytes``         ``kafka_server_brokertopicmetrics_remotecopylagbytes``
``copy_lag_segments``      ``kafka_server_brokertopicmetrics_remotecopylagsegments``
``local_size``             ``kafka_log_log_size``
``local_segments``         ``kafka_log_log_numlogsegments``
=========================  =====================================================

A partition is ``scraped`` when the remote size series has its labels; then every field is the
scraped broker's number for it (null where that one series is missing), and the local ones are
the leader's. Otherwise (its leader is another broker, or the partition is not tiered, or the
leader has not run its first tiering pass yet) ``scraped`` is false and every field null: the
page says "leader not scraped". ``scraped_broker`` is the leader of the scraped partitions when
they all have the same one (null otherwise; the metrics give no broker id), and
``remote_tier_exported`` is false when the scrape has no remote tier series at all (a broker
without ``remote.log.storage.system.enable``, or not Zurau or Kafka).

``broker`` holds the scraped broker's counters of the remote tier, summed over labels (null when
absent): ``remote_copy_bytes``, ``remote_fetch_bytes``, ``remote_copy_errors``,
``remote_fetch_errors`` (Kafka's RemoteCopyBytesPerSec, RemoteFetchBytesPerSec,
RemoteCopyErrorsPerSec, RemoteFetchErrorsPerSec as totals since the broker started).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client.metrics_core import Metric

from zurau.client.admin import PartitionDescription

_BTM = "kafka_server_brokertopicmetrics_"
PARTITION_SERIES = {
    "remote_size": _BTM + "remotelogsizebytes",
    "remote_segments": _BTM + "remotelogmetadatacount",
    "copy_lag_bytes": _BTM + "remotecopylagbytes",
    "copy_lag_segments": _BTM + "remotecopylagsegments",
    "local_size": "kafka_log_log_size",
    "local_segments": "kafka_log_log_numlogsegments",
}
BROKER_COUNTERS = {
    "remote_copy_bytes": _BTM + "remotecopybytes",
    "remote_fetch_bytes": _BTM + "remotefetchbytes",
    "remote_copy_errors": _BTM + "remotecopyerrors",
    "remote_fetch_errors": _BTM + "remotefetcherrors",
}
_PRESENCE = "remote_size"


def _number(v: float) -> int | float | None:
    if not math.isfinite(v):
        return None
    return int(v) if v == int(v) else v


def topic_tiers(
    families: Iterable[Metric], topic: str, partitions: Sequence[PartitionDescription]
) -> dict[str, Any]:
    """The JSON of ``GET /api/topics/{topic}/tiers`` from the scraped ``families`` and the topic's
    partitions as described now (for their leaders)."""
    wanted = {name: field for field, name in PARTITION_SERIES.items()}
    counters = {name: field for field, name in BROKER_COUNTERS.items()}
    per: dict[int, dict[str, int | float | None]] = {}
    broker: dict[str, int | float | None] = dict.fromkeys(BROKER_COUNTERS)
    exported = False
    for f in families:
        counter = f.name.removesuffix("_total")  # the parser drops it, unless TYPE and samples disagree
        if counter in counters:
            total = sum(s.value for s in f.samples if s.name in (counter, counter + "_total"))
            broker[counters[counter]] = _number(total)
            continue
        field = wanted.get(f.name)
        if field is None:
            continue
        exported |= field == _PRESENCE
        for s in f.samples:
            if s.name != f.name or s.labels.get("topic") != topic:
                continue
            try:
                index = int(s.labels.get("partition", ""))
            except ValueError:
                continue
            per.setdefault(index, {})[field] = _number(s.value)
    rows = []
    leaders = set()
    for p in sorted(partitions, key=lambda p: p.partition):
        found = per.get(p.partition, {})
        scraped = _PRESENCE in found
        if scraped:
            leaders.add(p.leader)
        row: dict[str, Any] = {"partition": p.partition, "leader": p.leader, "scraped": scraped}
        row.update({field: found.get(field) if scraped else None for field in PARTITION_SERIES})
        rows.append(row)
    return {
        "topic": topic,
        "remote_tier_exported": exported,
        "scraped_broker": next(iter(leaders)) if len(leaders) == 1 else None,
        "partitions": rows,
        "broker": broker,
    }


__all__ = ["BROKER_COUNTERS", "PARTITION_SERIES", "topic_tiers"]
