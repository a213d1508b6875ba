"""The follower's OFFSET_MOVED_TO_TIERED_STORAGE path (Kafka's ReplicaFetcherTierStateMachine),
without sockets: a scripted leader connection answers Fetch with error 109, then ListOffsets
(EARLIEST_LOCAL_TIMESTAMP) and OffsetForLeaderEpoch; a fake ``tier_bootstrap`` stands in for the
remote log metadata and storage. The follower's logs are a real ReplicaManager with tiered
partition logs, extended by the ``install_follower_aux_state`` the broker's replica manager
provides. The last test runs a real tiered leader (its Fetch, ListOffsets and
OffsetForLeaderEpoch handlers in process) and a brand-new replica fetching from offset 0."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.support.partition_logs import NOW, make_batch
from tests.unit.test_replica_fetcher import Clock, InProcessConnection
from zurau.broker.handlers import list_offsets
from zurau.client.typed_api import Call
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import OffsetMovedToTieredStorageError
from zurau.replication.replica_fetcher import (
    EarlierEpochEnd,
    FetcherConfig,
    PartitionFetchState,
    ReplicaFetcher,
)
from zurau.replication.replica_fetcher_manager import ReplicaFetcherManager
from zurau.replication.replica_manager import ReplicaManager
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.partition_log import PartitionLog
from zurau.storage.remote.remote_storage_manager import RemoteStorageError
from zurau.types import TopicIdPartition

TID = uuid.UUID(int=0xF00)
TIP = TopicIdPartition(TID, "t", 0)
E_TIERED = OffsetMovedToTieredStorageError.code
TIERED = LogConfig(segment_bytes=500, retention_ms=-1, remote_storage_enable=True, local_retention_bytes=1000)
PID = 7


class TieredFollowerRM(ReplicaManager):
    """The replica manager with the follower method the broker adds for tiered storage."""

    def install_follower_aux_state(
        self,
        topic: str,
        partition: int,
        next_offset: int,
        log_start_offset: int,
        epochs: Sequence[EpochEntry],
        producer_snapshot: bytes,
    ) -> None:
        self._followed(topic, partition).log.install_remote_aux_state(
            next_offset, log_start_offset, epochs, producer_snapshot
        )


def make_rm(path: Path, node_id: int, clock: Clock) -> TieredFollowerRM:
    lm = LogManager([path], clock, default_config=TIERED)
    return TieredFollowerRM(node_id, lm, lambda _t: TIERED, clock)


class Aux(NamedTuple):
    next_offset: int
    leader_epochs: list[EpochEntry]
    producer_snapshot: bytes


def idempotent_log(path: Path, n: int, epochs: dict[int, int]) -> PartitionLog:
    """A leader's log: ``n`` one-record batches of producer PID (sequence = offset), in the
    epochs ``{epoch: first offset}``."""
    log = PartitionLog.open(path, "t", 0, TIERED, now_ms=NOW)
    starts = sorted(epochs.items(), key=lambda kv: kv[1])
    for offset in range(n):
        epoch = max(e for e, start in starts if start <= offset)
        log.append(
            make_batch(1, ts=NOW + offset, producer_id=PID, producer_epoch=0, base_sequence=offset),
            leader_epoch=epoch,
            now_ms=NOW,
        )
    log.update_high_watermark(log.log_end_offset)
    return log


class ScriptedLeader:
    """A leader connection answering each request kind from a queue of callables (request
    body -> answer body); every request is recorded as (api key, version, body)."""

    def __init__(self, list_offsets_version: int = 8) -> None:
        self.answers: dict[int, list[Callable[[dict[str, Any]], dict[str, Any]]]] = {}
        self.requests: list[tuple[int, int | None, dict[str, Any]]] = []
        self.list_offsets_version = list_offsets_version

    def on(self, api_key: int, *answers: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.answers.setdefault(api_key, []).extend(answers)

    def version(self, api_key: int, max_version: int | None = None, min_version: int = 0) -> int:
        return {ApiKey.FETCH: 12, ApiKey.LIST_OFFSETS: self.list_offsets_version}.get(api_key, 4)

    async def call(self, call: Call[Any], *, version: int | None = None, **_kw: Any) -> Any:
        self.requests.append((call.api_key, version, call.body))
        return call.answer(self.answers[call.api_key].pop(0)(call.body))

    async def close(self) -> None:
        pass

    def kinds(self) -> list[int]:
        return [k for k, _v, _b in self.requests]


def fetch_answer(code: int = 0, records: bytes | None = None, *, log_start: int = 5, hw: int = 40) -> Any:
    part = {
        "partition_index": 0,
        "error_code": code,
        "high_watermark": hw,
        "last_stable_offset": hw,
        "log_start_offset": log_start,
        "records": records,
    }
    return lambda _body: {
        "error_code": 0,
        "session_id": 0,
        "responses": [{"topic": "t", "partitions": [part]}],
    }


def list_offsets_answer(offset: int, epoch: int, code: int = 0) -> Any:
    part = {
        "partition_index": 0,
        "error_code": code,
        "timestamp": -1,
        "offset": offset,
        "leader_epoch": epoch,
    }
    return lambda _body: {"topics": [{"name": "t", "partitions": [part]}]}


def epoch_answer(epoch: int, end_offset: int) -> Any:
    part = {"partition": 0, "error_code": 0, "leader_epoch": epoch, "end_offset": end_offset}
    return lambda _body: {"topics": [{"topic": "t", "partitions": [part]}]}


def make_fetcher(follower: ReplicaManager, conn: Any, tier_bootstrap: Any) -> ReplicaFetcher:
    async def connect(_node: int) -> Any:
        return conn

    return ReplicaFetcher(
        node_id=follower.node_id,
        source_id=1,
        fetcher_id=0,
        logs=follower,
        connect=connect,
        broker_epoch=lambda: 42,
        config=FetcherConfig(max_bytes=1 << 20, wait_max_ms=0, backoff_ms=10),
        tier_bootstrap=tier_bootstrap,
    )


async def round_(fetcher: ReplicaFetcher, state: PartitionFetchState) -> None:
    state.delayed_until = 0
    await fetcher.run_once([state])


class FakeBootstrap:
    """Answers from a queue of results (an Aux, or an exception to raise); records the calls
    and the leader's OffsetForLeaderEpoch answer for the epoch before the local start's."""

    def __init__(self, *results: Aux | Exception) -> None:
        self.results = list(results)
        self.calls: list[tuple[TopicIdPartition, int, int, int]] = []
        self.earlier: list[tuple[int, int]] = []
        self.during: Callable[[], None] | None = None

    async def __call__(
        self,
        tip: TopicIdPartition,
        local_start: int,
        epoch: int,
        log_start: int,
        /,
        *,
        earlier_epoch_end: EarlierEpochEnd,
    ) -> Aux:
        self.calls.append((tip, local_start, epoch, log_start))
        if epoch > 0:
            self.earlier.append(await earlier_epoch_end(epoch - 1))
        if self.during is not None:
            self.during()
        result = self.results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result


def remote_part(tmp_path: Path) -> tuple[Aux, bytes]:
    """The remote state at 30 of a leader whose producer PID wrote offsets 0..29 in epochs 2
    (from 0), 3 (from 10) and 4 (from 25), and the leader's next batch (offset 30, epoch 4)."""
    leader = idempotent_log(tmp_path / "leader" / "t-0", 30, {2: 0, 3: 10, 4: 25})
    aux = Aux(30, leader.leader_epoch_cache.entries, leader.producer_state.encode(30))
    nxt = make_batch(
        1, base_offset=30, partition_leader_epoch=4, producer_id=PID, producer_epoch=0, base_sequence=30
    )
    return aux, nxt


async def test_a_new_replica_starts_from_the_remote_tier_and_fetches_on(tmp_path: Path) -> None:
    clock = Clock()
    follower = make_rm(tmp_path / "f", 2, clock)
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=4)
    aux, next_batch = remote_part(tmp_path)
    conn = ScriptedLeader()
    conn.on(ApiKey.FETCH, fetch_answer(E_TIERED), fetch_answer(records=next_batch))
    conn.on(ApiKey.LIST_OFFSETS, list_offsets_answer(30, 4))
    conn.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, epoch_answer(3, 25))
    bootstrap = FakeBootstrap(aux)
    fetcher = make_fetcher(follower, conn, bootstrap)
    fetcher.add_partition("t", 0, TID, 4)
    state = fetcher.partitions[("t", 0)]

    await round_(fetcher, state)  # fetch from 0: 109
    assert conn.kinds() == [ApiKey.FETCH] and state.tier_leader_log_start == 5
    assert fp.log_end_offset == 0, "nothing is done before the bootstrap"
    await round_(fetcher, state)  # the bootstrap, then the fetch at its next offset
    assert conn.kinds() == [ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.FETCH]
    _k, version, body = conn.requests[1]
    assert version is not None and version >= 8 and body["replica_id"] == 2
    assert body["topics"] == [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": 4, "timestamp": -4}]}
    ]
    assert conn.requests[2][2]["topics"][0]["partitions"][0]["leader_epoch"] == 3
    assert bootstrap.calls == [(TIP, 30, 4, 5)] and bootstrap.earlier == [(3, 25)]
    fetched = conn.requests[3][2]["topics"][0]["partitions"][0]
    assert (fetched["fetch_offset"], fetched["last_fetched_epoch"]) == (30, 4)
    assert state.tier_leader_log_start is None and state.delayed_until == 0
    plog = fp.log
    assert (plog.log_start_offset, plog.local_log_start_offset, plog.log_end_offset) == (5, 30, 31)
    assert [tuple(e) for e in plog.leader_epoch_cache.entries] == [(2, 5), (3, 10), (4, 25)]
    entry = plog.producer_entry(PID)
    assert entry is not None and entry.last_seq == 30, "the producer's sequence ran on across the bootstrap"


async def test_a_failed_bootstrap_changes_nothing_and_is_retried(tmp_path: Path) -> None:
    clock = Clock()
    follower = make_rm(tmp_path / "f", 2, clock)
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=4)
    # A stale replica: three records of its own from long ago.
    fp.log.append_as_follower(make_batch(3, base_offset=0, partition_leader_epoch=1), now_ms=NOW)
    before = (fp.log.log_end_offset, fp.log.leader_epoch_cache.entries)
    aux, next_batch = remote_part(tmp_path)
    wrong = aux._replace(next_offset=31)  # the snapshot holds the state at 30: refused by the log
    conn = ScriptedLeader()
    conn.on(ApiKey.FETCH, fetch_answer(E_TIERED), fetch_answer(records=next_batch))
    conn.on(
        ApiKey.LIST_OFFSETS,
        list_offsets_answer(-1, -1, code=6),  # NOT_LEADER_OR_FOLLOWER
        list_offsets_answer(30, 4),
        list_offsets_answer(30, 4),
        list_offsets_answer(30, 4),
        list_offsets_answer(30, 4),
    )
    conn.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, *[epoch_answer(3, 25)] * 4)
    bootstrap = FakeBootstrap(RemoteStorageError("metadata not ready"), RuntimeError("boom"), wrong, aux)
    fetcher = make_fetcher(follower, conn, bootstrap)
    fetcher.add_partition("t", 0, TID, 4)
    state = fetcher.partitions[("t", 0)]
    await round_(fetcher, state)
    for _failure in range(4):  # ListOffsets error, RemoteStorageError, any error, a refused state
        await round_(fetcher, state)
        assert state.delayed_until > 0 and state.tier_leader_log_start == 5, "backed off, still pending"
        assert (fp.log.log_end_offset, fp.log.leader_epoch_cache.entries) == before, "untouched"
        assert conn.kinds().count(ApiKey.FETCH) == 1, "no fetch while the bootstrap is pending"
    await round_(fetcher, state)
    assert len(bootstrap.calls) == 4
    assert (fp.log.log_start_offset, fp.log.local_log_start_offset, fp.log.log_end_offset) == (5, 30, 31)
    # The fetcher's own loop backs a failing partition off rather than spinning.
    assert conn.kinds().count(ApiKey.LIST_OFFSETS) == 5


async def test_without_remote_storage_109_restarts_at_the_leaders_log_start_then_backs_off(
    tmp_path: Path,
) -> None:
    clock = Clock()
    follower = make_rm(tmp_path / "f", 2, clock)
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=4)
    conn = ScriptedLeader()
    conn.on(ApiKey.FETCH, fetch_answer(E_TIERED, log_start=5), fetch_answer(E_TIERED, log_start=5))
    fetcher = make_fetcher(follower, conn, None)
    fetcher.add_partition("t", 0, TID, 4)
    state = fetcher.partitions[("t", 0)]
    await round_(fetcher, state)
    assert (fp.log.log_start_offset, fp.log_end_offset) == (5, 5) and state.delayed_until == 0
    await round_(fetcher, state)
    assert state.delayed_until > 0 and state.tier_leader_log_start is None
    assert conn.kinds() == [ApiKey.FETCH, ApiKey.FETCH] and fp.log_end_offset == 5


async def test_a_partition_removed_during_its_bootstrap_is_left_alone(tmp_path: Path) -> None:
    clock = Clock()
    follower = make_rm(tmp_path / "f", 2, clock)
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=4)
    aux, _next = remote_part(tmp_path)
    conn = ScriptedLeader()
    conn.on(ApiKey.FETCH, fetch_answer(E_TIERED))
    conn.on(ApiKey.LIST_OFFSETS, list_offsets_answer(30, 4))
    conn.on(ApiKey.OFFSET_FOR_LEADER_EPOCH, epoch_answer(3, 25))
    bootstrap = FakeBootstrap(aux)
    fetcher = make_fetcher(follower, conn, bootstrap)
    bootstrap.during = lambda: fetcher.remove_partition("t", 0)
    fetcher.add_partition("t", 0, TID, 4)
    state = fetcher.partitions[("t", 0)]
    await round_(fetcher, state)
    await round_(fetcher, state)
    assert bootstrap.calls and fp.log_end_offset == 0 and fp.log.leader_epoch_cache.entries == []
    assert conn.kinds() == [ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_FOR_LEADER_EPOCH]


def test_tier_bootstrap_needs_follower_logs_that_install_it(tmp_path: Path) -> None:
    class PlainLogs:  # the FollowerLogs methods only
        def follower_log_state(self, topic: str, partition: int) -> tuple[int, int, int]:
            return 0, -1, 0

    with pytest.raises(TypeError, match="install_follower_aux_state"):
        ReplicaFetcherManager(
            node_id=2,
            logs=PlainLogs(),  # type: ignore[arg-type]
            endpoint=lambda _b: None,
            topic_id=lambda _t: TID,
            broker_epoch=lambda: 1,
            config=FetcherConfig(),
            tier_bootstrap=FakeBootstrap(),
        )
    manager = ReplicaFetcherManager(
        node_id=2,
        logs=make_rm(tmp_path / "f", 2, Clock()),
        endpoint=lambda _b: None,
        topic_id=lambda _t: TID,
        broker_epoch=lambda: 1,
        config=FetcherConfig(),
        tier_bootstrap=FakeBootstrap(),
    )
    assert manager.tier_bootstrap is not None


class LeaderWithListOffsets(InProcessConnection):
    """The in-process leader of test_replica_fetcher, also answering ListOffsets v8."""

    def version(self, api_key: int, max_version: int | None = None, min_version: int = 0) -> int:
        return 8 if api_key == ApiKey.LIST_OFFSETS else super().version(api_key, max_version, min_version)

    async def request(self, api_key: int, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if api_key == ApiKey.LIST_OFFSETS:
            self.requests.append((api_key, body))
            answer: dict[str, Any] = list_offsets.handle(self.ctx, body)
            return answer
        return await super().request(api_key, body, **kw)


async def test_a_brand_new_replica_of_a_tiered_leader_does_not_replicate_from_zero(tmp_path: Path) -> None:
    clock = Clock()
    clock.ms = NOW
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    lp = leader.make_leader("t", 0, leader_epoch=3, replicas=[1], isr=[1])
    for offset in range(60):
        if offset == 20:
            lp = leader.make_leader("t", 0, leader_epoch=5, replicas=[1], isr=[1])
        leader.append_as_leader(
            "t",
            0,
            make_batch(1, ts=NOW + offset, producer_id=PID, producer_epoch=0, base_sequence=offset),
            required_acks=1,
        )
    plog = lp.log
    bases = plog.segment_base_offsets()
    # The remote log manager copied the segments below bases[k] (k: the first above epoch 5's
    # start); local retention deleted them.
    k = next(i for i, b in enumerate(bases) if b > 20)
    remote = Aux(
        bases[k],
        [e for e in plog.leader_epoch_cache.entries if e.start_offset < bases[k]],
        plog.segment_upload_data(bases[k - 1]).producer_snapshot.read_bytes(),
    )
    plog.update_highest_offset_in_remote(bases[k] - 1)
    plog.apply_retention(NOW)
    assert plog.local_log_start_offset == bases[k] and plog.log_start_offset == 0
    # A reassignment adds broker 2: it fetches from 0.
    lp = leader.make_leader("t", 0, leader_epoch=6, replicas=[1, 2], isr=[1])
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=6)
    conn = LeaderWithListOffsets(leader)
    bootstrap = FakeBootstrap(remote)
    fetcher = make_fetcher(follower, conn, bootstrap)
    fetcher.add_partition("t", 0, TID, 6)
    state = fetcher.partitions[("t", 0)]
    for _ in range(20):  # a fetch answers from one segment
        await round_(fetcher, state)
        if fp.log_end_offset == 60 and lp.high_watermark == 60:
            break
    first = conn.requests[0][1]["topics"][0]["partitions"][0]
    assert first["fetch_offset"] == 0
    assert bootstrap.calls == [(TIP, bases[k], 5, 0)]
    # The leader's OffsetForLeaderEpoch for epoch 4 (unknown, below 5): its first known epoch 3 ends at 20.
    assert bootstrap.earlier == [(3, 20)]
    fetch_offsets = [
        b["topics"][0]["partitions"][0]["fetch_offset"] for api, b in conn.requests if api == ApiKey.FETCH
    ]
    assert fetch_offsets[0] == 0 and min(fetch_offsets[1:]) == bases[k], "never below the local start again"
    f = fp.log
    assert (f.log_start_offset, f.local_log_start_offset) == (0, bases[k])
    assert f.log_end_offset == plog.log_end_offset == 60
    assert [tuple(e) for e in f.leader_epoch_cache.entries] == [(3, 0), (5, 20)]  # epoch 6 wrote nothing
    assert f.read(bases[k], 1 << 20, max_offset=60) == plog.read(bases[k], 1 << 20, max_offset=60)
    fe, le = f.producer_entry(PID), plog.producer_entry(PID)
    assert fe is not None and le is not None and (fe.last_seq, fe.batches) == (le.last_seq, le.batches)
    assert lp.high_watermark == 60
