"""What the broker records on its hot path while metrics are on: plain Python counters.

:class:`BrokerMetrics` implements :class:`zurau.broker.interfaces.BrokerMetricsRecorder`. It is
called on the broker's event loop only (the connection for every answered request, the produce
and fetch handlers per partition, the composition root for log flushes and cleaner passes), and
read by :mod:`zurau.metrics.collector` on that same loop at scrape time, so it needs no lock
(the invariant this relies on: one thread, the loop's, ever touches a recorder; the HTTP thread
only waits for a scrape the loop runs). No Prometheus object is touched per request: a request
costs one tuple appended to a list (binned into histograms ``PENDING_MAX`` at a time) and a walk
over its response's error codes; a partition append or fetch costs a few integer additions.

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
_SLOTS2, _SLOTS3, _SLOTS4, _SLOTS5 = 2 * _SLOTS, 3 * _SLOTS, 4 * _SLOTS, 5 * _SLOTS


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


#: Requests a :class:`RequestStats` holds unbinned before :meth:`RequestStats.drain` bins them:
#: enough that binning runs as one loop with warm caches, few enough (~250 bytes each) to be small.
PENDING_MAX = 512

# A request's times, as :meth:`BrokerMetrics.request_done` keeps them until they are binned:
# (version, received, dispatched, handled, sending, sent, remote_s).
_Pending = tuple[int, float, float, float, float, float, float]


class RequestStats:
    """One API's requests: counts per version, time per phase, error codes in responses.

    Recording a request appends its raw times to ``pending`` (one tuple: the hot path does no
    arithmetic); :meth:`drain` bins them into the histograms when ``PENDING_MAX`` are pending
    and before anything is read (:attr:`versions`, :attr:`counts`, :attr:`sums`,
    :attr:`phases`), so what is read always includes every recorded request. Binning a batch
    in one loop costs less CPU than binning each request between the broker's other work
    (measured: bench/metrics_overhead.py, BENCHMARKS.md "Metrics overhead").

    The six phase histograms share one flat list (phase ``i``'s buckets at ``[i * _SLOTS,
    (i + 1) * _SLOTS)``) and one list of sums.
    """

    __slots__ = ("_versions", "_counts", "_sums", "errors", "pending")

    def __init__(self) -> None:
        self._versions: dict[int, int] = {}
        self._counts = [0] * (_SLOTS * len(PHASES))
        self._sums = [0.0] * len(PHASES)
        self.errors: dict[int, int] = {}
        self.pending: list[_Pending] = []

    def drain(self) -> None:
        """Bin every pending request (see the class docstring)."""
        pending = self.pending
        if not pending:
            return
        self.pending = []
        versions, counts, find, bounds, first = self._versions, self._counts, bisect_left, BUCKETS, BUCKETS[0]
        s0 = s1 = s2 = s3 = s4 = s5 = 0.0
        for version, received, dispatched, handled, sending, sent, remote_s in pending:
            versions[version] = versions.get(version, 0) + 1
            processing = handled - dispatched if handled > dispatched else 0.0
            remote = remote_s if remote_s < processing else processing
            if remote < 0.0:
                remote = 0.0
            local = processing - remote
            queue = dispatched - received if dispatched > received else 0.0
            response_queue = sending - handled if sending > handled else 0.0
            send = sent - sending if sent > sending else 0.0
            total = sent - received if sent > received else 0.0
            # Most phases of most requests fall in the first bucket: a comparison, not a bisect.
            counts[0 if queue <= first else find(bounds, queue)] += 1
            counts[_SLOTS if local <= first else _SLOTS + find(bounds, local)] += 1
            counts[_SLOTS2 if remote <= first else _SLOTS2 + find(bounds, remote)] += 1
            counts[_SLOTS3 if response_queue <= first else _SLOTS3 + find(bounds, response_queue)] += 1
            counts[_SLOTS4 if send <= first else _SLOTS4 + find(bounds, send)] += 1
            counts[_SLOTS5 if total <= first else _SLOTS5 + find(bounds, total)] += 1
            s0 += queue
            s1 += local
            s2 += remote
            s3 += response_queue
            s4 += send
            s5 += total
        sums = self._sums
        sums[0] += s0
        sums[1] += s1
        sums[2] += s2
        sums[3] += s3
        sums[4] += s4
        sums[5] += s5

    @property
    def versions(self) -> dict[int, int]:
        """Requests per API version."""
        self.drain()
        return self._versions

    @property
    def counts(self) -> list[int]:
        """The six phase histograms' bucket counts (not cumulative), flat."""
        self.drain()
        return self._counts

    @property
    def sums(self) -> list[float]:
        """The six phase histograms' sums of observations, in :data:`PHASES` order."""
        self.drain()
        return self._sums

    @property
    def phases(self) -> tuple[LatencyHistogram, ...]:
        """A copy of each phase's histogram, in :data:`PHASES` order."""
        counts, sums = self.counts, self.sums
        return tuple(LatencyHistogram(counts[i * _SLOTS : (i + 1) * _SLOTS], sums[i]) for i in range(len(PHASES)))


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
            if type(part) is not dict:
                # A Fetch answer's idle partition, pre-encoded (handlers/fetch.py): error NONE.
                counts[0] = counts.get(0, 0) + 1
                continue
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
        """Record one answered request: its API ``version``, its ``perf_counter()`` times
        (received, handed to its handler, handled, response being written, written), the
        seconds it waited in purgatories, and the error codes of its ``response`` (None: no
        response). ``variant``: the finer name it is also counted and timed under."""
        stats = self.requests.get(api_key)
        if stats is None:
            stats = self.requests[api_key] = RequestStats()
        times = (version, received, dispatched, handled, sending, sent, remote_s)
        pending = stats.pending
        pending.append(times)
        if len(pending) >= PENDING_MAX:
            stats.drain()
        if variant is not None:
            finer = self.variants.get(variant)
            if finer is None:
                finer = self.variants[variant] = RequestStats()
            finer.pending.append(times)
            if len(finer.pending) >= PENDING_MAX:
                finer.drain()
        if type(response) is dict:
            path = _RESULT_PATHS.get(api_key)
            if path is not None:
                _count_result_errors(response, path, stats.errors)
            else:
                count_error_codes(response, stats.errors)

    def drain(self) -> None:
        """Bin every pending request of every API (the collector calls it before reading)."""
        for stats in self.requests.values():
            stats.drain()
        for stats in self.variants.values():
            stats.drain()

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
