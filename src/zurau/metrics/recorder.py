"""What the broker records on its hot path while metrics are on: plain Python counters.

:class:`BrokerMetrics` implements :class:`zurau.broker.interfaces.BrokerMetricsRecorder`. It is
called on the broker's event loop only (the connection for every answered request, the produce
and fetch handlers per partition, the composition root for log flushes and cleaner passes), and
read by :mod:`zurau.metrics.collector` on that same loop at scrape time, so it needs no lock and
every update is a few integer additions: no Prometheus object is touched per request.

Invariants: counters only grow; a histogram's ``counts[i]`` counts observations ``v`` with
``BUCKETS[i-1] < v <= BUCKETS[i]`` (the last slot: above every bound), so the cumulative sums are
Prometheus' ``le`` buckets; ``total`` is the sum of the observations.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

# Upper bounds (seconds) of request-time and flush-time buckets: 50 us to 30 s.
BUCKETS: tuple[float, ...] = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)


_SLOTS = len(BUCKETS) + 1  # buckets per histogram, +Inf included


class LatencyHistogram:
    """Counts of observations per bucket of :data:`BUCKETS`, and their sum."""

    __slots__ = ("counts", "total")

    def __init__(self, counts: list[int] | None = None, total: float = 0.0) -> None:
        self.counts = counts if counts is not None else [0] * _SLOTS
        self.total = total

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(BUCKETS, seconds)] += 1
        self.total += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def buckets(self) -> list[tuple[str, int]]:
        """Cumulative ``(le, count)`` pairs, ``+Inf`` last (Prometheus' histogram buckets)."""
        out = []
        running = 0
        for bound, n in zip((*BUCKETS, float("inf")), self.counts, strict=True):
            running += n
            out.append(("+Inf" if bound == float("inf") else repr(bound), running))
        return out


# The phases of a request, as Kafka's RequestMetrics names them (``<phase>TimeMs``).
PHASES = ("requestqueue", "local", "remote", "responsequeue", "responsesend", "total")


class RequestStats:
    """One API's requests: counts per version, time per phase, error codes in responses.

    The six phase histograms share one flat list (phase ``i``'s buckets at ``[i * _SLOTS,
    (i + 1) * _SLOTS)``) and one list of sums, so recording a request is six bisects and twelve
    additions with no method call.
    """

    __slots__ = ("versions", "counts", "sums", "errors")

    def __init__(self) -> None:
        self.versions: dict[int, int] = {}
        self.counts = [0] * (_SLOTS * len(PHASES))
        self.sums = [0.0] * len(PHASES)
        self.errors: dict[int, int] = {}

    @property
    def phases(self) -> tuple[LatencyHistogram, ...]:
        """A copy of each phase's histogram, in :data:`PHASES` order."""
        return tuple(
            LatencyHistogram(self.counts[i * _SLOTS : (i + 1) * _SLOTS], self.sums[i]) for i in range(len(PHASES))
        )


@dataclass(slots=True)
class TopicStats:
    """Kafka's ``BrokerTopicMetrics`` of one topic, as totals."""

    bytes_in: int = 0
    messages_in: int = 0
    bytes_out: int = 0
    produce_requests: int = 0
    failed_produce_requests: int = 0
    failed_fetch_requests: int = 0


@dataclass(slots=True)
class CleanerStats:
    """What the log cleaner's passes did, for ``kafka_log_logcleaner_*``."""

    passes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    last_buffer_utilization: float = 0.0  # of the last pass, 0..1
    last_recopy_ratio: float = 0.0  # bytes written / bytes read of the last pass
    last_clean_time_s: float = 0.0
    last_run_monotonic: float | None = None


# Where per-partition results sit in the hot APIs' responses (Produce, Fetch): counted without
# walking the whole response.
_RESULT_PATHS: dict[int, tuple[str, str]] = {0: ("responses", "partition_responses"), 1: ("responses", "partitions")}


def _count_result_errors(response: dict[str, Any], path: tuple[str, str], counts: dict[int, int]) -> None:
    code = response.get("error_code")
    if code is not None:
        counts[code] = counts.get(code, 0) + 1
    outer, inner = path
    for topic in response.get(outer) or ():
        for part in topic.get(inner) or ():
            code = part.get("error_code")
            if code is not None:
                counts[code] = counts.get(code, 0) + 1


def count_error_codes(response: dict[str, Any], counts: dict[int, int]) -> None:
    """Add every ``error_code`` field of a decoded response (top level and nested entries such
    as per-partition results) to ``counts``, as Kafka's ``errorCounts()`` does."""
    code = response.get("error_code")
    if code is not None:
        counts[code] = counts.get(code, 0) + 1
    for value in response.values():
        kind = type(value)
        if kind is list:
            for item in value:
                if type(item) is dict:
                    count_error_codes(item, counts)
        elif kind is dict:
            count_error_codes(value, counts)


@dataclass
class BrokerMetrics:
    """The hot-path recorder (see the module docstring)."""

    requests: dict[int, RequestStats] = field(default_factory=dict)
    # Requests counted and timed under a finer name too (Kafka's FetchConsumer, FetchFollower).
    variants: dict[str, RequestStats] = field(default_factory=dict)
    topics: dict[str, TopicStats] = field(default_factory=dict)
    replication_bytes_out: int = 0
    log_flush: LatencyHistogram = field(default_factory=LatencyHistogram)
    cleaner: CleanerStats = field(default_factory=CleanerStats)

    def request_done(
        self,
        api_key: int,
        version: int,
        received: float,
        dispatched: float,
        handled: float,
        sending: float,
        sent: float,
        remote_s: float,
        response: Any,
        variant: str | None = None,
    ) -> None:
        stats = self.requests.get(api_key)
        if stats is None:
            stats = self.requests[api_key] = RequestStats()
        if variant is not None:
            finer = self.variants.get(variant)
            if finer is None:
                finer = self.variants[variant] = RequestStats()
            self._time(finer, version, received, dispatched, handled, sending, sent, remote_s)
        self._time(stats, version, received, dispatched, handled, sending, sent, remote_s)
        if type(response) is dict:
            path = _RESULT_PATHS.get(api_key)
            if path is not None:
                _count_result_errors(response, path, stats.errors)
            else:
                count_error_codes(response, stats.errors)

    @staticmethod
    def _time(
        stats: RequestStats,
        version: int,
        received: float,
        dispatched: float,
        handled: float,
        sending: float,
        sent: float,
        remote_s: float,
    ) -> None:
        versions = stats.versions
        versions[version] = versions.get(version, 0) + 1
        processing = handled - dispatched if handled > dispatched else 0.0
        remote = remote_s if remote_s < processing else processing
        if remote < 0.0:
            remote = 0.0
        queue = dispatched - received if dispatched > received else 0.0
        response_queue = sending - handled if sending > handled else 0.0
        send = sent - sending if sent > sending else 0.0
        total = sent - received if sent > received else 0.0
        counts, sums, find = stats.counts, stats.sums, bisect_left
        counts[find(BUCKETS, queue)] += 1
        counts[_SLOTS + find(BUCKETS, processing - remote)] += 1
        counts[2 * _SLOTS + find(BUCKETS, remote)] += 1
        counts[3 * _SLOTS + find(BUCKETS, response_queue)] += 1
        counts[4 * _SLOTS + find(BUCKETS, send)] += 1
        counts[5 * _SLOTS + find(BUCKETS, total)] += 1
        sums[0] += queue
        sums[1] += processing - remote
        sums[2] += remote
        sums[3] += response_queue
        sums[4] += send
        sums[5] += total

    def _topic(self, topic: str) -> TopicStats:
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats()
        return stats

    def produced(self, topic: str, nbytes: int, records: int) -> None:
        stats = self.topics.get(topic) or self._topic(topic)
        stats.bytes_in += nbytes
        stats.messages_in += records
        stats.produce_requests += 1

    def produce_failed(self, topic: str) -> None:
        stats = self._topic(topic)
        stats.produce_requests += 1
        stats.failed_produce_requests += 1

    def fetched(self, topic: str, nbytes: int, follower: bool) -> None:
        if follower:
            self.replication_bytes_out += nbytes
        else:
            (self.topics.get(topic) or self._topic(topic)).bytes_out += nbytes

    def fetch_failed(self, topic: str) -> None:
        self._topic(topic).failed_fetch_requests += 1

    def forget_topics(self, keep: set[str]) -> None:
        """Drop the stats of topics not in ``keep`` (deleted ones), as Kafka removes theirs."""
        for name in [t for t in self.topics if t not in keep]:
            del self.topics[name]

    def cleaner_pass(
        self, bytes_read: int, bytes_written: int, records_removed: int, map_utilization: float, elapsed_s: float,
        now_monotonic: float,
    ) -> None:
        c = self.cleaner
        c.passes += 1
        c.bytes_read += bytes_read
        c.bytes_written += bytes_written
        c.records_removed += records_removed
        c.last_buffer_utilization = map_utilization
        c.last_recopy_ratio = bytes_written / bytes_read if bytes_read else 0.0
        c.last_clean_time_s = elapsed_s
        c.last_run_monotonic = now_monotonic
