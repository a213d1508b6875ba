"""A broker's metrics at scrape time: Kafka's metric names in Prometheus form.

:class:`BrokerCollector` is a ``prometheus_client`` collector. Each scrape runs :meth:`snapshot`
on the broker's event loop (the HTTP thread waits for it), which reads the hot-path counters of
:class:`~zurau.metrics.recorder.BrokerMetrics` and the broker's state (partitions, logs,
purgatories, coordinators, metadata quorum, connections, log cleaner) as it is at that moment:
nothing here is updated on the hot path. The cost is one pass over the hosted partitions and
the groups' committed offsets.

Naming scheme (README "Metrics"): a Kafka MBean ``kafka.<domain>:type=<Type>,name=<Name>,<tags>``
becomes ``kafka_<domain>_<type>_<name>`` in lower case with its tags as labels, as the Prometheus
JMX exporter rules of Strimzi and Confluent name them; a ``...PerSec`` meter becomes a counter
with ``_total`` (``BytesInPerSec`` -> ``kafka_server_brokertopicmetrics_bytesin_total``); a
``...TimeMs`` timer becomes a histogram in seconds (``TotalTimeMs`` ->
``kafka_network_requestmetrics_totaltime_seconds``); a hyphenated Kafka-metrics name
(``socket-server-metrics``, ``connection-count``) keeps its words with underscores. Consumer
lag uses kafka_exporter's ``kafka_consumergroup_*`` names; what Kafka has no metric for is
``zurau_*``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from zurau.broker.server import BrokerServer
from zurau.coordinator.group.group_runtime import GroupCoordinatorRuntime
from zurau.coordinator.txn.transaction_runtime import TransactionRuntime
from zurau.metadata.image import MetadataImage
from zurau.metadata.kraft_manager import KRaftManager
from zurau.metadata.metadata_log import MetadataLog
from zurau.metrics.client_telemetry import client_telemetry_families
from zurau.metrics.recorder import PHASES, BrokerMetrics, LatencyHistogram
from zurau.protocol.codec import schema_for
from zurau.protocol.errors import for_code
from zurau.replication.replica_manager import ReplicaManager
from zurau.replication.share.share_partition_manager import SharePartitionManager
from zurau.replication.tiered.tiered_storage import TieredStorage
from zurau.storage.log_cleaner import LogCleaner


class MetricsSource(Protocol):
    """The broker state a scrape reads (the composition root's ``Broker`` satisfies it)."""

    node_id: int
    replica_manager: ReplicaManager
    group_coordinator: GroupCoordinatorRuntime
    txn_coordinator: TransactionRuntime
    server: BrokerServer | None
    kraft: KRaftManager | None
    metadata_log: MetadataLog | None
    log_cleaner: LogCleaner | None
    share_partitions: SharePartitionManager | None
    tiered: TieredStorage | None

    @property
    def image(self) -> MetadataImage: ...


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def error_name(code: int) -> str:
    """Kafka's ``Errors`` name of an error code (``NONE``, ``NOT_LEADER_OR_FOLLOWER``, ...)."""
    if code == 0:
        return "NONE"
    cls = for_code(code)
    if cls.code != code:  # a code this broker does not know by name
        return f"ERROR_{code}"
    name = cls.__name__
    if code != -1 and name.endswith("Error"):
        name = name[: -len("Error")]
    return _CAMEL.sub("_", name).upper()


def api_name(api_key: int) -> str:
    try:
        return schema_for(api_key).name
    except Exception:
        return str(api_key)


def _histogram(name: str, doc: str, labels: list[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=labels)


def _add_histogram(family: HistogramMetricFamily, values: list[str], h: LatencyHistogram) -> None:
    family.add_metric(values, h.buckets(), h.total)


class BrokerCollector(Collector):
    """Collects one broker's metrics (see the module docstring).

    ``on_loop(fn)`` runs ``fn`` on the broker's event loop and returns its result (raising if
    the loop is gone or does not answer in time).
    """

    def __init__(
        self, source: MetricsSource, recorder: BrokerMetrics, on_loop: Callable[[Callable[[], Any]], Any]
    ) -> None:
        self.source = source
        self.recorder = recorder
        self.on_loop = on_loop

    def collect(self) -> Iterable[Metric]:
        return self.on_loop(self.snapshot)

    # ------------------------------------------------------------------ on the event loop
    def snapshot(self) -> list[Metric]:
        out: list[Metric] = []
        image = self.source.image
        out += self._requests()
        out += self._topics(image)
        out += self._partitions(image)
        out += self._controller(image)
        out += self._purgatories()
        out += self._groups()
        out += self._transactions()
        out += self._shares()
        out += self._connections()
        out += self._log_flush_and_cleaner()
        out += self._remote_tier()
        manager = getattr(self.source, "client_metrics", None)
        if manager is not None:
            out += client_telemetry_families(manager, error_name)
        return out

    def _requests(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests answered, per API and version (Kafka RequestsPerSec).",
            labels=["request", "version"],
        )
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Error codes in responses, per API and error (Kafka ErrorsPerSec; NONE counts successes).",
            labels=["request", "error"],
        )
        phases = [
            _histogram(
                f"kafka_network_requestmetrics_{phase}time_seconds",
                f"Request {phase} time, per API (Kafka {phase} TimeMs, in seconds).",
                ["request"],
            )
            for phase in PHASES
        ]
        named = [(api_name(k), stats) for k, stats in sorted(self.recorder.requests.items())]
        named += sorted(self.recorder.variants.items())
        for name, stats in named:
            for version, n in sorted(stats.versions.items()):
                requests.add_metric([name, str(version)], n)
            for code, n in sorted(stats.errors.items()):
                errors.add_metric([name, error_name(code)], n)
            for family, h in zip(phases, stats.phases, strict=True):
                _add_histogram(family, [name], h)
        yield requests
        yield errors
        yield from phases

    def _topics(self, image: MetadataImage) -> Iterator[Metric]:
        rec = self.recorder
        rec.forget_topics(set(image.topics_by_name))
        fields = (
            ("bytesin", "bytes_in", "Record bytes produced by clients (Kafka BytesInPerSec)."),
            ("messagesin", "messages_in", "Records produced by clients (Kafka MessagesInPerSec)."),
            ("bytesout", "bytes_out", "Record bytes fetched by consumers (Kafka BytesOutPerSec)."),
            ("totalproducerequests", "produce_requests", "Partition appends requested by producers."),
            ("failedproducerequests", "failed_produce_requests", "Partition appends that failed."),
            ("failedfetchrequests", "failed_fetch_requests", "Partition fetches that failed."),
        )
        for short, attr, doc in fields:
            family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{short}", doc, labels=["topic"])
            for topic, stats in sorted(rec.topics.items()):
                family.add_metric([topic], getattr(stats, attr))
            yield family
        yield CounterMetricFamily(
            "kafka_server_brokertopicmetrics_replicationbytesout",
            "Record bytes fetched by follower replicas (Kafka ReplicationBytesOutPerSec).",
            value=rec.replication_bytes_out,
        )

    def _partitions(self, image: MetadataImage) -> Iterator[Metric]:
        rm = self.source.replica_manager
        node = self.source.node_id
        size = GaugeMetricFamily(
            "kafka_log_log_size", "Bytes of a partition's segments.", labels=["topic", "partition"]
        )
        start = GaugeMetricFamily(
            "kafka_log_log_logstartoffset", "Log start offset.", labels=["topic", "partition"]
        )
        end = GaugeMetricFamily(
            "kafka_log_log_logendoffset", "Log end offset.", labels=["topic", "partition"]
        )
        segments = GaugeMetricFamily(
            "kafka_log_log_numlogsegments", "Segments of a partition's log.", labels=["topic", "partition"]
        )
        hw = GaugeMetricFamily(
            "zurau_log_log_highwatermark",
            "High watermark of a partition replica.",
            labels=["topic", "partition"],
        )
        partitions = leaders = under_replicated = under_min_isr = 0
        for p in rm.partitions():
            labels = [p.topic, str(p.index)]
            plog = p.log
            size.add_metric(labels, plog.size_in_bytes)
            start.add_metric(labels, plog.log_start_offset)
            end.add_metric(labels, plog.log_end_offset)
            segments.add_metric(labels, plog.segment_count)
            hw.add_metric(labels, plog.high_watermark)
            partitions += 1
            if p.leader_id == node:
                leaders += 1
                if len(p.isr) < len(p.replicas):
                    under_replicated += 1
                if len(p.isr) < plog.config.min_insync_replicas:
                    under_min_isr += 1
        yield from (size, start, end, segments, hw)
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_partitioncount",
            "Partitions hosted on this broker.",
            value=partitions,
        )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_leadercount", "Partitions led by this broker.", value=leaders
        )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Partitions led here whose ISR is smaller than their replica set.",
            value=under_replicated,
        )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Partitions led here whose ISR is smaller than min.insync.replicas.",
            value=under_min_isr,
        )
        yield CounterMetricFamily(
            "kafka_server_replicamanager_isrshrinks", "ISR shrinks this leader made.", value=rm.isr_shrinks
        )
        yield CounterMetricFamily(
            "kafka_server_replicamanager_isrexpands", "ISR expansions this leader made.", value=rm.isr_expands
        )
        # Replication throttles (Kafka's LeaderReplication / FollowerReplication byte-rate).
        for side, quota in (("leader", rm.leader_quota), ("follower", rm.follower_quota)):
            if quota is not None:
                yield GaugeMetricFamily(
                    f"kafka_server_{side}replication_byte_rate",
                    f"Bytes/s of throttled replication traffic on the {side} side, over the quota window.",
                    value=quota.byte_rate(),
                )
                yield CounterMetricFamily(
                    f"zurau_{side}_replication_throttled_bytes",
                    f"Bytes of throttled-replica traffic on the {side} side.",
                    value=quota.throttled_bytes,
                )

    def _controller(self, image: MetadataImage) -> Iterator[Metric]:
        src = self.source
        kraft = src.kraft
        active = kraft.channel.active if kraft is not None else True
        offline = topics = partitions = 0
        if active:
            for t in image.topics_by_name.values():
                topics += 1
                for reg in t.partitions.values():
                    partitions += 1
                    if reg.leader < 0:
                        offline += 1
        fenced = sum(1 for b in image.brokers.values() if not b.live)
        live = len(image.brokers) - fenced if kraft is not None else 1  # a single node registers nothing
        yield GaugeMetricFamily(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller, else 0.",
            value=1 if active else 0,
        )
        for name, value, doc in (
            ("offlinepartitionscount", offline, "Partitions without a leader (active controller only)."),
            ("globaltopiccount", topics, "Topics in the cluster (active controller only)."),
            ("globalpartitioncount", partitions, "Partitions in the cluster (active controller only)."),
        ):
            yield GaugeMetricFamily(
                f"kafka_controller_kafkacontroller_{name}", doc, value=value if active else 0
            )
        yield GaugeMetricFamily(
            "kafka_controller_kafkacontroller_activebrokercount",
            "Registered brokers that are live, as this node's metadata shows them.",
            value=live,
        )
        yield GaugeMetricFamily(
            "kafka_controller_kafkacontroller_fencedbrokercount",
            "Registered brokers that are fenced or shutting down, as this node's metadata shows them.",
            value=fenced,
        )
        applied = image.offset
        if kraft is not None:
            high_watermark = kraft.raft.high_watermark
            log_end = kraft.log.end_offset()
        else:
            metadata_log = src.metadata_log
            high_watermark = log_end = metadata_log.end_offset if metadata_log is not None else applied + 1
        yield GaugeMetricFamily(
            "kafka_server_raft_metrics_high_watermark",
            "High watermark of the metadata log.",
            value=high_watermark,
        )
        yield GaugeMetricFamily(
            "kafka_server_raft_metrics_log_end_offset",
            "Log end offset of the metadata log on this node.",
            value=log_end,
        )
        yield GaugeMetricFamily(
            "kafka_server_broker_metadata_metrics_last_applied_record_offset",
            "Offset of the last metadata record applied to this node's image.",
            value=applied,
        )
        yield GaugeMetricFamily(
            "zurau_server_broker_metadata_metrics_last_applied_record_lag",
            "Committed metadata records not yet applied here (high watermark - 1 - last applied offset).",
            value=max(high_watermark - 1 - applied, 0),
        )

    def _purgatories(self) -> Iterator[Metric]:
        rm = self.source.replica_manager
        size = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Watches of delayed operations (one per operation and partition).",
            labels=["delayedoperation"],
        )
        ops = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_numdelayedoperations",
            "Delayed operations waiting.",
            labels=["delayedoperation"],
        )
        size.add_metric(["Produce"], len(rm.produce_purgatory))
        size.add_metric(["Fetch"], rm.purgatory.watch_count())
        ops.add_metric(["Produce"], rm.produce_purgatory.operation_count())
        ops.add_metric(["Fetch"], rm.purgatory.operation_count())
        yield size
        yield ops

    def _groups(self) -> Iterator[Metric]:
        core = self.source.group_coordinator.core
        rm = self.source.replica_manager
        counts: Counter[tuple[str, str]] = Counter()
        for g in core.list_groups():
            counts[(g.group_type, g.state)] += 1
        family = GaugeMetricFamily(
            "kafka_server_group_coordinator_metrics_group_count",
            "Groups this coordinator holds, per protocol (classic, consumer) and state.",
            labels=["protocol", "state"],
        )
        for (protocol, state), n in sorted(counts.items()):
            family.add_metric([protocol, state], n)
        yield family
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset",
            "Committed offset of a group in a partition.",
            labels=["consumergroup", "topic", "partition"],
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "High watermark minus committed offset (partitions hosted on the group's coordinator).",
            labels=["consumergroup", "topic", "partition"],
        )
        for group_id, offsets in sorted(core.offsets.items()):
            for (topic, index), committed in offsets.items():
                labels = [group_id, topic, str(index)]
                current.add_metric(labels, committed.offset)
                p = rm.get(topic, index)
                if p is not None:
                    lag.add_metric(labels, max(p.log.high_watermark - committed.offset, 0))
        yield current
        yield lag

    def _shares(self) -> Iterator[Metric]:
        """Share groups (KIP-932) on the partitions this broker leads: records by event, records
        acquired now and the share-partition start offset, share sessions."""
        m = getattr(self.source, "share_partitions", None)
        if m is None:
            return
        events = CounterMetricFamily(
            "zurau_share_group_records",
            "Share-group records by event on this broker's share-partitions: acquired, accepted, "
            "released (by the client, a lock expiry or a closed session), rejected, archived (at the "
            "delivery limit), dead_lettered, dead_letter_failed.",
            labels=["group", "event"],
        )
        for (group, event), n in sorted(m.counts.items()):
            events.add_metric([group, event], n)
        yield events
        in_flight = GaugeMetricFamily(
            "zurau_share_partition_in_flight_records",
            "Records acquired by share-group members now (their acquisition lock not expired).",
            labels=["group", "topic", "partition"],
        )
        start = GaugeMetricFamily(
            "zurau_share_partition_start_offset",
            "The share-partition start offset: every record below it is finished.",
            labels=["group", "topic", "partition"],
        )
        lag = GaugeMetricFamily(
            "zurau_share_partition_lag",
            "High watermark minus the share-partition start offset (records not yet finished, upper bound).",
            labels=["group", "topic", "partition"],
        )
        rm = self.source.replica_manager
        for group, topic, index, sp in m.share_partitions():
            labels = [group, topic, str(index)]
            in_flight.add_metric(labels, sp.acquired_count())
            start.add_metric(labels, sp.start_offset)
            p = rm.get(topic, index)
            if p is not None:
                lag.add_metric(labels, max(p.log.high_watermark - sp.start_offset, 0))
        yield in_flight
        yield start
        yield lag
        yield GaugeMetricFamily(
            "zurau_share_sessions", "Share sessions on this broker.", value=len(m.sessions)
        )

    def _transactions(self) -> Iterator[Metric]:
        counts: Counter[str] = Counter()
        for entry in self.source.txn_coordinator.core.transactions.values():
            counts[entry.meta.state.kafka_name] += 1
        family = GaugeMetricFamily(
            "zurau_transaction_coordinator_transactions",
            "Transactional ids this coordinator holds, per state.",
            labels=["state"],
        )
        for state, n in sorted(counts.items()):
            family.add_metric([state], n)
        yield family

    def _connections(self) -> Iterator[Metric]:
        server = self.source.server
        count = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_connection_count", "Open connections.", labels=["listener"]
        )
        created = CounterMetricFamily(
            "kafka_server_socket_server_metrics_connection_creation",
            "Connections accepted (rate(): Kafka connection-creation-rate).",
            labels=["listener"],
        )
        closed = CounterMetricFamily(
            "kafka_server_socket_server_metrics_connection_close",
            "Connections closed (rate(): Kafka connection-close-rate).",
            labels=["listener"],
        )
        if server is not None:
            open_now = Counter(c.listener for c in server.connections)
            for name in sorted(set(open_now) | set(server.connections_created)):
                count.add_metric([name], open_now.get(name, 0))
                created.add_metric([name], server.connections_created.get(name, 0))
                closed.add_metric([name], server.connections_closed.get(name, 0))
        yield from (count, created, closed)

    def _log_flush_and_cleaner(self) -> Iterator[Metric]:
        rec = self.recorder
        flush = _histogram(
            "kafka_log_logflushstats_logflushrateandtime_seconds",
            "Time of each log flush (fsync) (Kafka LogFlushRateAndTimeMs, in seconds).",
            [],
        )
        _add_histogram(flush, [], rec.log_flush)
        yield flush
        c = rec.cleaner
        cleaner = self.source.log_cleaner
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_max_buffer_utilization_percent",
            "Offset map use of the last cleaning pass.",
            value=100.0 * c.last_buffer_utilization,
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_cleaner_recopy_percent",
            "Bytes written over bytes read by the last cleaning pass.",
            value=100.0 * c.last_recopy_ratio,
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_max_clean_time_secs",
            "Duration of the last cleaning pass.",
            value=c.last_clean_time_s,
        )
        since = -1.0 if c.last_run_monotonic is None else (time.monotonic() - c.last_run_monotonic) * 1000
        yield GaugeMetricFamily(
            "kafka_log_logcleanermanager_time_since_last_run_ms",
            "Milliseconds since the last cleaning pass ended (-1: none yet).",
            value=since,
        )
        manager = cleaner.manager if cleaner is not None else None
        yield GaugeMetricFamily(
            "kafka_log_logcleanermanager_max_dirty_percent",
            "Highest dirty ratio among compacted logs at the last check.",
            value=100.0 * manager.dirtiest_ratio if manager is not None else 0.0,
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleanermanager_uncleanable_partitions_count",
            "Logs the cleaner gave up on after an error.",
            value=len(manager.uncleanable) if manager is not None else 0,
        )
        for short, value, doc in (
            ("passes", c.passes, "Cleaning passes completed."),
            ("read_bytes", c.bytes_read, "Bytes read by cleaning passes."),
            ("written_bytes", c.bytes_written, "Bytes written by cleaning passes."),
            ("removed_records", c.records_removed, "Records removed by cleaning passes."),
        ):
            yield CounterMetricFamily(f"zurau_log_cleaner_{short}", doc, value=value)

    def _remote_tier(self) -> Iterator[Metric]:
        """Tiered storage (KIP-405), when this broker runs the remote tier: Kafka's
        ``BrokerTopicMetrics`` Remote* meters as broker-wide counters (Kafka's all-topic series,
        the MBean without its ``topic`` tag), its Remote* gauges per partition led here, and the
        remote fetches that expired (Kafka's ``DelayedRemoteFetchMetrics.ExpiresPerSec``). The
        local tier of a partition is ``kafka_log_log_size``."""
        tiered = getattr(self.source, "tiered", None)
        if tiered is None:
            return
        stats = tiered.rlm.stats
        gauges = (
            (
                "remotecopylagbytes",
                "copy_lag_bytes",
                "Bytes of closed segments below the last stable offset not yet copied to remote storage (Kafka RemoteCopyLagBytes).",
            ),
            (
                "remotecopylagsegments",
                "copy_lag_segments",
                "Closed segments below the last stable offset not yet copied to remote storage (Kafka RemoteCopyLagSegments).",
            ),
            (
                "remotelogsizebytes",
                "remote_size_bytes",
                "Bytes of the partition's copied remote segments (Kafka RemoteLogSizeBytes).",
            ),
            (
                "remotelogmetadatacount",
                "remote_segments",
                "Copied remote segments of the partition, as its remote log metadata lists them (Kafka RemoteLogMetadataCount).",
            ),
        )
        led = sorted(stats.partitions.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
        for short, attr, doc in gauges:
            family = GaugeMetricFamily(
                f"kafka_server_brokertopicmetrics_{short}",
                doc + " Partitions led here.",
                labels=["topic", "partition"],
            )
            for tip, pstats in led:
                family.add_metric([tip.topic, str(tip.partition)], getattr(pstats, attr))
            yield family
        counters = (
            (
                "remotecopybytes",
                stats.bytes_copied,
                "Bytes copied to remote storage (Kafka RemoteCopyBytesPerSec).",
            ),
            (
                "remotecopyrequests",
                stats.copy_requests,
                "Segment copies to remote storage started (Kafka RemoteCopyRequestsPerSec).",
            ),
            (
                "remotecopyerrors",
                stats.copy_failures,
                "Segment copies to remote storage that failed (Kafka RemoteCopyErrorsPerSec).",
            ),
            (
                "remotefetchbytes",
                stats.bytes_read,
                "Record bytes read from remote storage (Kafka RemoteFetchBytesPerSec).",
            ),
            (
                "remotefetchrequests",
                stats.fetch_requests,
                "Reads from remote storage (Kafka RemoteFetchRequestsPerSec).",
            ),
            (
                "remotefetcherrors",
                stats.fetch_failures,
                "Reads from remote storage that failed (Kafka RemoteFetchErrorsPerSec).",
            ),
            (
                "remotedeleterequests",
                stats.delete_requests,
                "Remote segment deletions started (Kafka RemoteDeleteRequestsPerSec).",
            ),
            (
                "remotedeleteerrors",
                stats.delete_failures,
                "Remote segment deletions that failed (Kafka RemoteDeleteErrorsPerSec).",
            ),
        )
        for short, value, doc in counters:
            yield CounterMetricFamily(f"kafka_server_brokertopicmetrics_{short}", doc, value=value)
        yield CounterMetricFamily(
            "kafka_server_delayedremotefetchmetrics_expires",
            "Fetches of remote data answered empty after remote.fetch.max.wait.ms (Kafka DelayedRemoteFetchMetrics ExpiresPerSec).",
            value=tiered.fetch_timeouts,
        )
        # KIP-956 quotas (Kafka's RemoteLogManager remote-copy/fetch-throttle-time sensors, as
        # counters: their rate and mean are derived), with the measured rates.
        rlm = tiered.rlm
        for short, value, doc in (
            ("copy_throttles", stats.copy_throttles, "Segment copies that waited for the remote copy quota."),
            (
                "copy_throttle_time_ms",
                stats.copy_throttle_time_ms,
                "Milliseconds segment copies waited for the remote copy quota.",
            ),
            (
                "fetch_throttles",
                stats.fetch_throttles,
                "Fetches answered without their remote read: the remote fetch quota was exceeded.",
            ),
            (
                "fetch_throttle_time_ms",
                stats.fetch_throttle_time_ms,
                "Throttle times (ms) the remote fetch quota gave those fetches.",
            ),
        ):
            yield CounterMetricFamily(f"zurau_remote_{short}", doc, value=value)
        for side, quota, config in (
            ("copy", rlm.copy_quota, "remote.log.manager.copy.max.bytes.per.second"),
            ("fetch", rlm.fetch_quota, "remote.log.manager.fetch.max.bytes.per.second"),
        ):
            yield GaugeMetricFamily(
                f"zurau_remote_{side}_quota_byte_rate",
                f"Bytes/s the remote {side} quota measures over its windows ({config} bounds it).",
                value=quota.byte_rate(),
            )
        cache = tiered.rlm.index_cache
        for short, value, doc in (
            ("copied_segments", stats.segments_copied, "Segments copied to remote storage."),
            (
                "deleted_segments",
                stats.segments_deleted,
                "Remote segments deleted (remote retention, deleted topics).",
            ),
            ("deleted_bytes", stats.bytes_deleted, "Bytes of the remote segments deleted."),
            ("index_cache_hits", cache.hits, "Remote index lookups served from the remote index cache."),
            ("index_cache_misses", cache.misses, "Remote index lookups fetched from remote storage."),
        ):
            yield CounterMetricFamily(f"zurau_remote_{short}", doc, value=value)
