"""The metrics' hot-path recorder, error names, listener parsing and the /metrics WSGI app (no sockets)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from zurau.clock import SystemClock
from zurau.config import BrokerConfig, ConfigError, parse_http_listener
from zurau.metrics.collector import error_name
from zurau.metrics.http_server import MetricsUnavailable, metrics_app
from zurau.metrics.recorder import (
    BUCKETS,
    PENDING_MAX,
    PHASES,
    BrokerMetrics,
    LatencyHistogram,
    count_error_codes,
)
from zurau.replication.purgatory import FetchPurgatory, WaitTime, request_wait


def test_histogram_buckets_are_cumulative_and_inclusive() -> None:
    h = LatencyHistogram()
    for v in (0.0, BUCKETS[0], BUCKETS[0] * 1.5, 100.0):
        h.observe(v)
    buckets = dict(h.buckets())
    assert buckets[repr(BUCKETS[0])] == 2  # le is inclusive: 0 and exactly the bound
    assert buckets[repr(BUCKETS[1])] == 3
    assert buckets[repr(BUCKETS[-1])] == 3
    assert buckets["+Inf"] == h.count == 4
    assert h.total == pytest.approx(BUCKETS[0] * 2.5 + 100.0)


def test_request_phases_split_the_total_and_errors_are_counted_at_every_level() -> None:
    m = BrokerMetrics()
    response = {
        "error_code": 0,
        "responses": [{"partitions": [{"error_code": 6}, {"error_code": 0}, {"records": b"x"}]}],
        "nested": {"error_code": 6},
    }
    m.request_done(1, 16, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, response)  # Fetch: top level and partitions
    assert m.requests[1].errors == {0: 2, 6: 1}
    m.request_done(32, 4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, response)  # another API: every level
    assert m.requests[32].errors == {0: 2, 6: 2}
    produce = {"responses": [{"partition_responses": [{"error_code": 0}, {"error_code": 87}]}, {"name": "x"}]}
    # received 1.0, handler from 1.5 to 3.5 of which 1.5 in purgatory, written from 4.0 to 4.25
    m.request_done(0, 9, 1.0, 1.5, 3.5, 4.0, 4.25, 1.5, produce)
    m.request_done(0, 9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None)  # acks=0: no response
    stats = m.requests[0]
    assert stats.versions == {9: 2}
    assert stats.errors == {0: 1, 87: 1}
    queue, local, remote, response_queue, send, total = (h.total for h in stats.phases)
    assert (queue, local, remote, response_queue, send, total) == (0.5, 0.5, 1.5, 0.5, 0.25, 3.25)
    assert queue + local + remote + response_queue + send == total


def test_a_variant_is_counted_and_timed_under_both_names() -> None:
    m = BrokerMetrics()
    m.request_done(1, 16, 0.0, 0.0, 0.5, 0.5, 0.5, 0.25, {"error_code": 0, "responses": []}, "FetchFollower")
    assert m.requests[1].versions == m.variants["FetchFollower"].versions == {16: 1}
    assert m.requests[1].errors == {0: 1} and m.variants["FetchFollower"].errors == {}
    assert m.variants["FetchFollower"].sums == m.requests[1].sums


def test_batched_binning_equals_binning_each_request_and_reads_see_every_request() -> None:
    """Requests are binned PENDING_MAX at a time; whatever is read includes every one recorded,
    with the same buckets as observing each phase on its own (bounds included)."""
    rng = random.Random(5)
    m = BrokerMetrics()
    expected = [LatencyHistogram() for _ in PHASES]
    versions: dict[int, int] = {}
    n = PENDING_MAX * 2 + 7
    for i in range(n):
        # Phase lengths at bucket bounds, just above them, 0, and anywhere up to 60 s.
        queue, local, remote, response_queue, send = (
            rng.choice((0.0, rng.choice(BUCKETS), rng.choice(BUCKETS) * 1.001, rng.uniform(0, 60))) for _ in range(5)
        )
        received = 1000.0 + i
        dispatched = received + queue
        handled = dispatched + local + remote
        sending = handled + response_queue
        sent = sending + send
        version = i % 3
        versions[version] = versions.get(version, 0) + 1
        m.request_done(0, version, received, dispatched, handled, sending, sent, remote, None)
        measured = (dispatched - received, handled - dispatched - remote, remote, sending - handled, sent - sending)
        for h, v in zip(expected, (*measured, sent - received), strict=True):
            h.observe(v)
        if i in (0, PENDING_MAX - 1, PENDING_MAX, n - 1):  # reads in between bin what is pending
            stats = m.requests[0]
            assert sum(stats.versions.values()) == i + 1
            assert all(h.count == i + 1 for h in stats.phases)
    stats = m.requests[0]
    assert stats.versions == versions
    for got, want in zip(stats.phases, expected, strict=True):
        assert got.counts == want.counts
        assert got.total == pytest.approx(want.total)


def test_remote_time_never_exceeds_the_handler_time() -> None:
    m = BrokerMetrics()
    m.request_done(1, 16, 0.0, 0.0, 1.0, 1.0, 1.0, 5.0, {})
    _queue, local, remote, *_ = m.requests[1].phases
    assert (local.total, remote.total) == (0.0, 1.0)


def test_topic_counters_and_forgetting_deleted_topics() -> None:
    m = BrokerMetrics()
    m.produced("a", 100, 3)
    m.produced("a", 50, 1)
    m.produce_failed("a")
    m.fetched("a", 70, follower=False)
    m.fetched("a", 1000, follower=True)
    m.fetch_failed("b")
    a = m.topics["a"]
    assert (a.bytes_in, a.messages_in, a.produce_requests, a.failed_produce_requests, a.bytes_out) == (150, 4, 3, 1, 70)
    assert m.replication_bytes_out == 1000
    m.forget_topics({"a"})
    assert set(m.topics) == {"a"}


def test_count_error_codes_ignores_non_dict_items() -> None:
    counts: dict[int, int] = {}
    count_error_codes({"topics": [1, "x", None, {"error_code": 3, "partitions": []}]}, counts)
    assert counts == {3: 1}


def test_error_names_are_kafkas() -> None:
    assert error_name(0) == "NONE"
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(9999) == "ERROR_9999"


def test_metrics_http_listener_config() -> None:
    assert parse_http_listener("http://127.0.0.1:9404") == ("127.0.0.1", 9404)
    assert parse_http_listener("http://:0/") == ("0.0.0.0", 0)
    assert parse_http_listener("http://[::1]:80") == ("::1", 80)
    assert BrokerConfig.from_props({}).get("metrics.http.listener") is None
    assert BrokerConfig.from_props({"metrics.http.listener": ""}).get("metrics.http.listener") == ""
    for bad in ("127.0.0.1:9404", "https://h:1", "http://h:99999", "http://h"):
        with pytest.raises(ConfigError, match="metrics.http.listener"):
            BrokerConfig.from_props({"metrics.http.listener": bad})


class _Fixed(Collector):
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def collect(self) -> Iterable[Metric]:
        if self.fail:
            raise MetricsUnavailable("the broker is not running")
        return [GaugeMetricFamily("zurau_test_gauge", "A test gauge.", value=7)]


def _call(app, path: str, method: str = "GET") -> tuple[str, bytes]:
    seen: list[str] = []
    body = b"".join(
        app(
            {"PATH_INFO": path, "REQUEST_METHOD": method, "QUERY_STRING": ""},
            lambda status, headers: seen.append(status),
        )
    )
    return seen[0], body


def test_metrics_app_serves_only_metrics_and_reports_an_unreadable_broker() -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed())
    app = metrics_app(registry)
    status, body = _call(app, "/metrics")
    assert status.startswith("200")
    samples = {s.name: s.value for f in text_string_to_metric_families(body.decode()) for s in f.samples}
    assert samples == {"zurau_test_gauge": 7}
    for path in ("/", "/metric", "/favicon.ico", "/metrics/x"):
        assert _call(app, path)[0].startswith("404")
    assert _call(app, "/metrics", "DELETE")[0].startswith("405")
    failing = CollectorRegistry(auto_describe=False)
    failing.register(_Fixed(fail=True))
    status, body = _call(metrics_app(failing), "/metrics")
    assert status.startswith("503") and b"not running" in body


async def test_purgatory_waits_are_charged_to_the_request_that_waits() -> None:
    purgatory = FetchPurgatory(SystemClock())
    mine = WaitTime()
    token = request_wait.set(mine)
    try:
        waiting = asyncio.ensure_future(purgatory.wait([("t", 0)], purgatory.deadline(5000)))  # the task inherits the timer
        await asyncio.sleep(0.01)
        assert purgatory.operation_count() == 1 and purgatory.watch_count() == 1
        purgatory.notify("t", 0)
        await waiting
    finally:
        request_wait.reset(token)
    assert mine.seconds > 0
    charged = mine.seconds
    await purgatory.wait([("t", 0)], purgatory.deadline(1))  # no timer set here: nobody is charged
    assert mine.seconds == charged
    assert purgatory.operation_count() == purgatory.watch_count() == 0
