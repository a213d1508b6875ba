"""The operator's views of tiered storage without a broker: the tiers of partitions as the client
gathers them (zurau/client/tiered_partitions.py, a fake admin client), their lines and JSON in
``zurau topics describe``, and the remote tier's /metrics series (the collector's ``_remote_tier``
over a fake broker)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from prometheus_client.core import Metric

from zurau.cli.topics import _describe_json, _tier_text
from zurau.client.admin import (
    EARLIEST_LOCAL,
    LATEST_TIERED,
    LogDirDescription,
    OffsetInfo,
    PartitionDescription,
)
from zurau.client.admin import TopicDescription as Desc
from zurau.client.errors import UnsupportedApiError
from zurau.client.tiered_partitions import (
    UNKNOWN,
    TieredPartition,
    describe_tiered_partitions,
    remote_storage_enabled,
)
from zurau.client.types import TopicPartition
from zurau.metrics.collector import BrokerCollector
from zurau.protocol.errors import NotLeaderOrFollowerError
from zurau.replication.tiered.remote_log_stats import RemoteLogStats
from zurau.types import TopicIdPartition


def _part(i: int, leader: int) -> PartitionDescription:
    return PartitionDescription(i, leader, 0, (leader,), (leader,), 0, 100)


class FakeAdmin:
    """Answers ListOffsets -4/-5 and DescribeLogDirs from tables (an error instead, when given)."""

    def __init__(self, offsets: Mapping[int, Any], dirs: Any) -> None:
        self.offsets, self.dirs = offsets, dirs
        self.asked_dirs: list[list[int]] = []

    async def list_offsets(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, Any]:
        (spec,) = set(specs.values())
        answer = self.offsets[spec]
        if isinstance(answer, Exception):
            raise answer
        return {tp: answer[tp] for tp in specs if tp in answer}

    async def describe_log_dirs(self, brokers: list[int]) -> Any:
        self.asked_dirs.append(brokers)
        return self.dirs


def test_tiers_are_asked_of_leaders_and_unknown_parts_are_minus_one() -> None:
    t = Desc("t", False, (_part(0, 1), _part(1, 2), _part(2, -1)))
    tp0, tp1, tp2 = (TopicPartition("t", i) for i in range(3))
    admin = FakeAdmin(
        {
            EARLIEST_LOCAL: {tp0: OffsetInfo(30), tp1: NotLeaderOrFollowerError("moved")},
            LATEST_TIERED: {tp0: OffsetInfo(29), tp1: OffsetInfo(-1)},
        },
        {
            1: [LogDirDescription("/a", {}), LogDirDescription("/b", {tp0: 1234})],
            2: NotLeaderOrFollowerError("down"),
        },
    )
    tiers = asyncio.run(describe_tiered_partitions(admin, [t]))  # type: ignore[arg-type]
    assert tiers == {
        tp0: TieredPartition(30, 29, 1234),
        tp1: TieredPartition(-1, -1, -1),  # the error, nothing tiered yet, the broker's error
        tp2: UNKNOWN,  # no leader
    }
    assert admin.asked_dirs == [[1, 2]]


def test_a_cluster_without_kip_405_list_offsets_still_gives_the_local_size() -> None:
    t = Desc("t", False, (_part(0, 1),))
    tp0 = TopicPartition("t", 0)
    old = UnsupportedApiError("ListOffsets v7")
    admin = FakeAdmin({EARLIEST_LOCAL: old, LATEST_TIERED: old}, {1: [LogDirDescription("/a", {tp0: 5})]})
    tiers = asyncio.run(describe_tiered_partitions(admin, [t]))  # type: ignore[arg-type]
    assert tiers == {tp0: TieredPartition(-1, -1, 5)}


def test_remote_storage_enable_is_read_case_insensitively() -> None:
    assert remote_storage_enabled({"remote.storage.enable": "TRUE"})
    assert not remote_storage_enabled({"remote.storage.enable": "false"})
    assert not remote_storage_enabled({"remote.storage.enable": None})
    assert not remote_storage_enabled({})


def test_describe_adds_the_tiers_to_tiered_partitions_only() -> None:
    tier = TieredPartition(30, 29, 1234)
    assert _tier_text(tier) == "\tLocalLogStartOffset: 30\tHighestOffsetInRemote: 29\tLocalSize: 1234"
    t = Desc("t", False, (_part(0, 1),), uuid.uuid4())
    plain = _describe_json(t, {}, {})["partitions"][0]
    assert "local_log_start_offset" not in plain
    tiered = _describe_json(t, {}, {}, {TopicPartition("t", 0): tier})["partitions"][0]
    assert {k: v for k, v in tiered.items() if k not in plain} == {
        "local_log_start_offset": 30,
        "highest_offset_in_remote": 29,
        "local_size": 1234,
    }
    assert list(tiered)[-1] == "error"  # the tiers come before the error, after the offsets


def _samples(metrics: list[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for m in metrics for s in m.samples}


def test_remote_tier_series() -> None:
    stats = RemoteLogStats(copy_requests=3, copy_failures=1, bytes_copied=2000, segments_copied=2)
    stats.fetch_requests, stats.bytes_read, stats.delete_requests, stats.segments_deleted = 5, 700, 1, 1
    tip = TopicIdPartition(uuid.uuid4(), "t", 2)
    p = stats.partition(tip)
    p.copy_lag_bytes, p.copy_lag_segments, p.remote_size_bytes, p.remote_segments = 10, 1, 1500, 2
    stats.copy_throttles, stats.copy_throttle_time_ms, stats.fetch_throttles, stats.fetch_throttle_time_ms = 2, 1500, 3, 90
    rlm = SimpleNamespace(
        stats=stats,
        index_cache=SimpleNamespace(hits=4, misses=6),
        copy_quota=SimpleNamespace(byte_rate=lambda: 1024.0),
        fetch_quota=SimpleNamespace(byte_rate=lambda: 0.0),
    )
    source = SimpleNamespace(tiered=SimpleNamespace(rlm=rlm, fetch_timeouts=7))
    collector = BrokerCollector(source, None, lambda fn: fn())  # type: ignore[arg-type]
    got = _samples(list(collector._remote_tier()))
    labels = (("partition", "2"), ("topic", "t"))
    assert got[("kafka_server_brokertopicmetrics_remotecopylagbytes", labels)] == 10
    assert got[("kafka_server_brokertopicmetrics_remotecopylagsegments", labels)] == 1
    assert got[("kafka_server_brokertopicmetrics_remotelogsizebytes", labels)] == 1500
    assert got[("kafka_server_brokertopicmetrics_remotelogmetadatacount", labels)] == 2
    totals = {name: v for (name, lb), v in got.items() if not lb}
    assert totals == {
        "kafka_server_brokertopicmetrics_remotecopybytes_total": 2000,
        "kafka_server_brokertopicmetrics_remotecopyrequests_total": 3,
        "kafka_server_brokertopicmetrics_remotecopyerrors_total": 1,
        "kafka_server_brokertopicmetrics_remotefetchbytes_total": 700,
        "kafka_server_brokertopicmetrics_remotefetchrequests_total": 5,
        "kafka_server_brokertopicmetrics_remotefetcherrors_total": 0,
        "kafka_server_brokertopicmetrics_remotedeleterequests_total": 1,
        "kafka_server_brokertopicmetrics_remotedeleteerrors_total": 0,
        "kafka_server_delayedremotefetchmetrics_expires_total": 7,
        "zurau_remote_copied_segments_total": 2,
        "zurau_remote_deleted_segments_total": 1,
        "zurau_remote_deleted_bytes_total": 0,
        "zurau_remote_index_cache_hits_total": 4,
        "zurau_remote_index_cache_misses_total": 6,
        "zurau_remote_copy_throttles_total": 2,
        "zurau_remote_copy_throttle_time_ms_total": 1500,
        "zurau_remote_fetch_throttles_total": 3,
        "zurau_remote_fetch_throttle_time_ms_total": 90,
        "zurau_remote_copy_quota_byte_rate": 1024.0,
        "zurau_remote_fetch_quota_byte_rate": 0.0,
    }
    # A broker without the remote tier has none of these series.
    plain = BrokerCollector(SimpleNamespace(tiered=None), None, lambda fn: fn())  # type: ignore[arg-type]
    assert list(plain._remote_tier()) == []
