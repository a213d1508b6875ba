"""Replica fetchers and the leader's ISR bookkeeping, without sockets: a follower's
:class:`ReplicaFetcher` talks to a leader's real Fetch and OffsetForLeaderEpoch handlers through
an in-process connection, so appends, high watermarks, diverging epochs (KIP-320), the
OffsetForLeaderEpoch fallback, a moved log start and fenced epochs are all checked end to end."""

from __future__ import annotations

import inspect
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from zurau.broker.handlers import fetch, offset_for_leader_epoch
from zurau.client.typed_api import Call
from zurau.clock import SystemClock
from zurau.config import BrokerConfig
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import IneligibleReplicaError, NotEnoughReplicasAfterAppendError
from zurau.protocol.records.builder import build_batch
from zurau.replication.partition import Partition
from zurau.replication.replica_fetcher import (
    FetcherConfig,
    PartitionFetchState,
    ReplicaFetcher,
    truncation_offset,
)
from zurau.replication.replica_fetcher_manager import fetcher_id
from zurau.replication.replica_manager import ReplicaManager
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager

TID = uuid.UUID(int=0xF00)
E_INELIGIBLE = IneligibleReplicaError.code


class Clock(SystemClock):
    """Wall-clock milliseconds a test sets (``ms``); timers on the running loop."""

    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.ms

    def now_ms(self) -> int:
        return self.ms


def make_rm(path: Path, node_id: int, clock: Clock) -> ReplicaManager:
    config = LogConfig()
    lm = LogManager([path], clock, default_config=config)
    return ReplicaManager(node_id, lm, lambda _t: config, clock)


def batch(n: int = 1) -> bytes:
    return build_batch([(b"k", b"v%d" % i, [], 1_700_000_000_000 + i) for i in range(n)])


class InProcessConnection:
    """A 'connection' to a leader that hands requests to its handlers (Fetch below v12 drops
    the last fetched epoch, as the wire would)."""

    def __init__(self, leader: ReplicaManager, fetch_version: int = 18) -> None:
        topic = SimpleNamespace(name="t", topic_id=TID, num_partitions=1, partitions={0: None})
        image = SimpleNamespace(get=lambda n: topic if n == "t" else None, by_id=lambda i: topic if i == TID else None)
        services = SimpleNamespace(
            node_id=leader.node_id,
            authorizer=None,
            schema_validator=None,
            metrics=None,
            config=BrokerConfig({}),
            clock=leader.clock,
            fetch_sessions=None,
        )
        self.ctx: Any = SimpleNamespace(
            replica_manager=leader,
            image=image,
            running=True,
            node_id=leader.node_id,
            services=services,
            config=BrokerConfig({}),
        )
        self.fetch_version = fetch_version
        self.requests: list[tuple[int, dict[str, Any]]] = []

    def version(self, api_key: int, max_version: int | None = None, min_version: int = 0) -> int:
        return self.fetch_version if api_key == ApiKey.FETCH else 4

    async def request(self, api_key: int, body: dict[str, Any], **_kw: Any) -> dict[str, Any]:
        self.requests.append((api_key, body))
        if api_key == ApiKey.FETCH:
            self.ctx.api_version = self.fetch_version
            if self.fetch_version < 12:
                for t in body["topics"]:
                    for p in t["partitions"]:
                        p.pop("last_fetched_epoch", None)
            resp = fetch.handle(self.ctx, {**body, "max_wait_ms": 0})  # answered at once, or a coroutine
            if inspect.isawaitable(resp):
                resp = await resp
            for t in resp["responses"]:
                for p in t["partitions"]:
                    if p["records"] is not None and not isinstance(p["records"], bytes):
                        p["records"] = bytes(p["records"])
            return resp
        assert api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH
        answer: dict[str, Any] = offset_for_leader_epoch.handle(self.ctx, body)
        return answer

    async def call(self, call: Call[Any], **kw: Any) -> Any:
        return call.answer(await self.request(call.api_key, call.body, **kw))

    async def close(self) -> None:
        pass


def make_fetcher(follower: ReplicaManager, conn: InProcessConnection, leader_id: int = 1) -> ReplicaFetcher:
    async def connect(_node: int) -> InProcessConnection:
        return conn

    return ReplicaFetcher(
        node_id=follower.node_id,
        source_id=leader_id,
        fetcher_id=0,
        logs=follower,
        connect=connect,
        broker_epoch=lambda: 42,
        config=FetcherConfig(max_bytes=1 << 20, wait_max_ms=0, backoff_ms=10),
    )


async def follow(fetcher: ReplicaFetcher, p: Partition, rounds: int = 1) -> PartitionFetchState:
    fetcher.add_partition(p.topic, p.index, TID, p.leader_epoch)
    state = fetcher.partitions[(p.topic, p.index)]
    for _ in range(rounds):
        state.delayed_until = 0
        await fetcher.run_once([state])
    return state


def log_bytes(rm: ReplicaManager) -> bytes:
    p = rm.get("t", 0)
    assert p is not None
    return b"".join((p.log.directory / name).read_bytes() for name in sorted(x.name for x in p.log.directory.glob("*.log")))


async def test_a_follower_copies_the_leader_and_commits_acks_all(tmp_path: Path) -> None:
    clock = Clock()
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    lp = leader.make_leader("t", 0, leader_epoch=3, replicas=[1, 2], isr=[1, 2])
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=3)
    for n in (2, 3, 1):
        leader.append_as_leader("t", 0, batch(n), required_acks=-1)
    op = leader.delayed_produce({("t", 0): 6})
    assert not op.done and lp.high_watermark == 0
    conn = InProcessConnection(leader)
    fetcher = make_fetcher(follower, conn)
    await follow(fetcher, fp)
    _api, body = conn.requests[0]
    assert body["replica_state"] == {"replica_id": 2, "replica_epoch": 42}
    part = body["topics"][0]["partitions"][0]
    assert (part["fetch_offset"], part["current_leader_epoch"], part["last_fetched_epoch"]) == (0, 3, -1)
    assert fp.log_end_offset == 6 and lp.high_watermark == 0  # the fetch at 0 proved nothing yet
    await follow(fetcher, fp)
    assert lp.high_watermark == 6 and op.done and op.errors == {("t", 0): 0}
    assert fp.high_watermark == 6, "the follower learns the high watermark from the answer"
    assert log_bytes(follower) == log_bytes(leader)
    assert fp.log.leader_epoch_cache.entries == lp.log.leader_epoch_cache.entries


async def test_a_diverged_follower_truncates_where_the_leaders_epochs_say(tmp_path: Path) -> None:
    clock = Clock()
    a, b = make_rm(tmp_path / "a", 1, clock), make_rm(tmp_path / "b", 2, clock)
    # b leads epoch 0 and writes 5 batches; a copies only the first 3.
    b.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[2])
    for _ in range(5):
        b.append_as_leader("t", 0, batch(), required_acks=1)
    a.make_follower("t", 0, leader_id=2, leader_epoch=0)
    r = b.read("t", 0, 0, 1 << 20, replica_id=1)
    assert r.records is not None
    import os

    data = os.pread(r.records.fd, r.records.size, r.records.position)
    a.append_as_follower("t", 0, data[: len(data) * 3 // 5])
    # a leads epoch 1 and writes 2 more; b becomes its follower with 2 records a never had.
    ap = a.make_leader("t", 0, leader_epoch=1, replicas=[1, 2], isr=[1, 2])
    a.append_as_leader("t", 0, batch(), required_acks=1)
    a.append_as_leader("t", 0, batch(), required_acks=1)
    bp = b.make_follower("t", 0, leader_id=1, leader_epoch=1)
    assert (bp.log_end_offset, ap.log_end_offset) == (5, 5)
    conn = InProcessConnection(a)
    fetcher = make_fetcher(b, conn)
    await follow(fetcher, bp)
    assert bp.log_end_offset == 3, "diverging epoch (0, 3): truncated to where epoch 0 ends on the leader"
    await follow(fetcher, bp, rounds=2)
    assert log_bytes(a) == log_bytes(b)
    assert [(e.epoch, e.start_offset) for e in bp.log.leader_epoch_cache.entries] == [(0, 0), (1, 3)]
    assert ap.high_watermark == 5


async def test_offset_for_leader_epoch_truncation_without_diverging_epochs(tmp_path: Path) -> None:
    clock = Clock()
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    fp = follower.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[2])
    for _ in range(4):
        follower.append_as_leader("t", 0, batch(), required_acks=1)
    lp = leader.make_leader("t", 0, leader_epoch=2, replicas=[1, 2], isr=[1, 2])
    leader.append_as_leader("t", 0, batch(3), required_acks=1)
    follower.make_follower("t", 0, leader_id=1, leader_epoch=2)
    conn = InProcessConnection(leader, fetch_version=11)
    fetcher = make_fetcher(follower, conn)
    await follow(fetcher, fp)
    kinds = [api for api, _b in conn.requests]
    assert kinds[0] == ApiKey.OFFSET_FOR_LEADER_EPOCH
    # Epoch 0 is unknown to the leader below epoch 2: it answers (0, 0) and the follower empties.
    assert [(e.epoch, e.start_offset) for e in fp.log.leader_epoch_cache.entries] == [(2, 0)]
    assert fp.log_end_offset == 3 and log_bytes(follower) == log_bytes(leader)
    assert lp.log_end_offset == 3


async def test_a_moved_log_start_restarts_the_follower_and_fencing_backs_off(tmp_path: Path) -> None:
    clock = Clock()
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    leader.make_leader("t", 0, leader_epoch=1, replicas=[1, 2], isr=[1])
    for _ in range(10):
        leader.append_as_leader("t", 0, batch(), required_acks=1)
    assert leader.delete_records("t", 0, 8) == 8
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=1)
    fetcher = make_fetcher(follower, InProcessConnection(leader))
    await follow(fetcher, fp)  # OFFSET_OUT_OF_RANGE: restart at the leader's log start
    assert (fp.log.log_start_offset, fp.log_end_offset) == (8, 8)
    await follow(fetcher, fp)
    assert fp.log_end_offset == 10

    stale = follower.make_follower("t", 0, leader_id=1, leader_epoch=0)  # older metadata here
    state = await follow(fetcher, stale)
    assert state.delayed_until > 0, "FENCED_LEADER_EPOCH: back off until the metadata catches up"
    assert fp.log_end_offset == 10


def test_truncation_offsets() -> None:
    class Logs(SimpleNamespace):
        def follower_log_state(self, _t: str, _p: int) -> tuple[int, int, int]:
            return 10, 4, 6

        def follower_end_offset_for_epoch(self, _t: str, _p: int, epoch: int) -> tuple[int, int]:
            return {3: (3, 8), 2: (1, 5)}.get(epoch, (-1, -1))

    logs: Any = Logs()
    assert truncation_offset(logs, "t", 0, 3, -1) == (6, True)  # the leader knows nothing: HW
    assert truncation_offset(logs, "t", 0, -1, 7) == (7, True)
    assert truncation_offset(logs, "t", 0, 3, 9) == (8, True)  # same epoch: the smaller end
    assert truncation_offset(logs, "t", 0, 3, 7) == (7, True)
    assert truncation_offset(logs, "t", 0, 2, 9) == (5, False)  # follower only has epoch 1 <= 2
    assert truncation_offset(logs, "t", 0, 9, 12) == (10, True)
    assert {fetcher_id("t", i, 3) for i in range(12)} == {0, 1, 2}
    assert fetcher_id("t", 5, 1) == 0


async def test_isr_expands_when_caught_up_and_shrinks_when_lagging(tmp_path: Path) -> None:
    clock = Clock()
    rm = make_rm(tmp_path, 1, clock)
    sent: list[tuple[Partition, list[int]]] = []
    rm.isr_change_sender = lambda p, isr: sent.append((p, isr))
    rm.broker_live = lambda b: b != 4
    p = rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2, 3, 4], isr=[1, 2], partition_epoch=3)
    rm.append_as_leader("t", 0, batch(2), required_acks=1)
    rm.read("t", 0, 2, 100, replica_id=2)
    assert p.high_watermark == 2 and sent == []
    rm.read("t", 0, 1, 100, replica_id=3)  # behind the high watermark: not yet in sync
    rm.read("t", 0, 2, 100, replica_id=4)  # in sync, but its broker is not live
    assert sent == []
    rm.read("t", 0, 2, 100, replica_id=3)
    assert sent == [(p, [1, 2, 3])] and p.pending_isr == [1, 2, 3] and p.isr == [1, 2]
    rm.read("t", 0, 2, 100, replica_id=3)
    assert len(sent) == 1, "one proposal in flight per partition"
    # While 3 is being added it holds the high watermark back (maximal ISR).
    rm.append_as_leader("t", 0, batch(), required_acks=-1)
    rm.read("t", 0, 3, 100, replica_id=2)
    assert p.high_watermark == 2
    rm.apply_isr_change("t", 0, error_code=0, leader_epoch=0, isr=[1, 2, 3], partition_epoch=4)
    assert (p.isr, p.pending_isr, p.partition_epoch) == ([1, 2, 3], None, 4)
    rm.apply_isr_change("t", 0, error_code=0, leader_epoch=0, isr=[1, 2], partition_epoch=4)
    assert p.isr == [1, 2, 3], "an answer no newer than what the leader knows is ignored"

    # 3 stops fetching: after replica.lag.time.max.ms it is proposed out; 2 keeps fetching.
    sent.clear()
    clock.ms += 500
    rm.read("t", 0, 3, 100, replica_id=2)
    assert rm.maybe_shrink_isr(1000) == 0
    clock.ms += 600
    rm.read("t", 0, 3, 100, replica_id=2)
    assert rm.maybe_shrink_isr(1000) == 1 and sent == [(p, [1, 2])]
    op = rm.delayed_produce({("t", 0): 3})
    assert not op.done
    p.partition_epoch = 4
    rm.apply_isr_change("t", 0, error_code=0, leader_epoch=0, isr=[1, 2], partition_epoch=5)
    assert p.high_watermark == 3 and op.errors == {("t", 0): 0}, "the shrink lets the high watermark pass"

    # With min.insync.replicas above the new ISR, the produce waiting on the shrink fails.
    rm2 = make_rm(tmp_path / "m", 1, clock)
    rm2.isr_change_sender = lambda _p, _isr: None
    p2 = rm2.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    p2.log.config = LogConfig(min_insync_replicas=2)
    rm2.append_as_leader("t", 0, batch(), required_acks=-1)
    op2 = rm2.delayed_produce({("t", 0): 1})
    rm2.apply_isr_change("t", 0, error_code=0, leader_epoch=0, isr=[1], partition_epoch=1)
    assert op2.errors == {("t", 0): NotEnoughReplicasAfterAppendError.code}
    # A refused proposal is not repeated at once (a storm of AlterPartitions), only after a backoff.
    rm2.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1], partition_epoch=1)
    rm2.read("t", 0, 1, 100, replica_id=2)
    assert p2.pending_isr == [1, 2]
    rm2.apply_isr_change("t", 0, error_code=E_INELIGIBLE)
    assert p2.pending_isr is None
    rm2.read("t", 0, 1, 100, replica_id=2)
    assert p2.pending_isr is None
    clock.ms += 200
    rm2.read("t", 0, 1, 100, replica_id=2)
    assert p2.pending_isr == [1, 2]


async def test_a_follower_fetches_in_a_session_naming_only_what_changed(tmp_path: Path) -> None:
    """KIP-227: the first fetch is full (epoch 0), later ones name only partitions whose fetch
    offset moved; an idle partition in the session still counts as caught up on the leader."""
    clock = Clock()
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    lp = leader.make_leader("t", 0, leader_epoch=3, replicas=[1, 2], isr=[1, 2])
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=3)
    leader.append_as_leader("t", 0, batch(2), required_acks=1)
    conn = InProcessConnection(leader)
    fetcher = make_fetcher(follower, conn)
    await follow(fetcher, fp, rounds=3)
    bodies = [b for api, b in conn.requests if api == ApiKey.FETCH]
    assert (bodies[0]["session_id"], bodies[0]["session_epoch"]) == (0, 0)
    assert bodies[1]["session_id"] != 0 and bodies[1]["session_epoch"] == 1
    assert bodies[1]["topics"][0]["partitions"][0]["fetch_offset"] == 2  # the offset moved: named
    assert bodies[2]["session_epoch"] == 2 and bodies[2]["topics"] == []  # nothing changed
    assert fp.log_end_offset == 2 and lp.high_watermark == 2
    clock.ms += 60_000
    state = fetcher.partitions[("t", 0)]
    state.delayed_until = 0
    await fetcher.run_once([state])
    assert lp.out_of_sync_replicas(clock(), 30_000) == []  # the idle fetch kept it in sync
    # A dropped connection starts over with a full fetch.
    await fetcher._drop_connection()
    state.delayed_until = 0
    await fetcher.run_once([state])
    last = [b for api, b in conn.requests if api == ApiKey.FETCH][-1]
    assert (last["session_id"], last["session_epoch"]) == (0, 0) and last["topics"]
