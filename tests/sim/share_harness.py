"""A seeded, deterministic simulation of the share-partition manager (KIP-932 share groups).

The real :class:`~zurau.replication.share.share_partition_manager.SharePartitionManager` (and so
the real :class:`~zurau.replication.share.share_partition.SharePartition` state machines) runs
on one asyncio loop with a :class:`~zurau.clock.ManualClock`, against

* :class:`SimLog`: a leader's partition log holding real v2 record batches in a temporary file
  (``read_slice`` answers a byte range of it, as the real log does, stopping at segment ends and
  at ``max_offset``), with transactions (COMMIT/ABORT control batches, the aborted-transaction
  list), a high watermark that lags the log end, a last stable offset and a log start offset that
  DeleteRecords moves;
* :class:`SimPersister`: the share coordinator's real
  :class:`~zurau.coordinator.share.share_coordinator_shard.ShareCoordinatorShard` (so the real
  merge, leader-epoch fencing and snapshot/update records), whose reads and writes can be delayed
  (before or after they take effect), lost, answered with an error after they took effect, or
  raise -- all on a seeded schedule -- and whose committed records are replayed into a fresh
  shard from time to time (a share-coordinator failover).

Members fetch (acquire), acknowledge (ACCEPT/RELEASE/REJECT, sometimes offsets they do not
hold), close their share sessions; time advances (locks expire); the partition's leadership
moves (``on_resigned`` and a new leader epoch, sometimes only the epoch bump, sometimes a period
of not leading); records, transactional records and markers are produced; the log start offset
moves; the cleaner removes whole batches (compaction); ``share.isolation.level`` and
``share.record.lock.duration.ms`` change now and then. A step starts one operation, sometimes two or three whose tasks then interleave; held
reads and writes complete in later steps, so operations also overlap across steps. Everything is
drawn from one ``random.Random(seed)``; virtual time moves only when a step advances it, and
after every step the loop runs until no callback is ready, so a seed replays the same run
exactly. The simulation reads the manager's loaded share-partitions (white box) and learns the
moment an acknowledgement is applied (a subclass of the real state machine, installed for the
run), so what it expects of an acknowledgement is decided against the state it meets.

Properties (checked after every step, at every delivery and at the end; a violation raises
:class:`ShareSimViolation` naming the seed):

1. An offset whose ACCEPT or REJECT was answered OK is never delivered again (across leader
   changes and reloads too).
2. No record is delivered with a delivery count above the limit. Delivery counts are *exact*:
   the ``k``-th delivery of an offset by one loaded share-partition (an *incarnation*: from a
   load to its drop) carries the count the load read from the share coordinator plus ``k``; and
   the share coordinator's count of an offset never decreases, nor does a finished offset come
   back, at any write. So within an incarnation counts rise by exactly one per delivery, and a
   delivery's count can fail to rise above an earlier one's (repeat it or go below it) only
   across a reload (a leader change, or a failed write) and only when no successful write
   carried the offset's count since that earlier delivery (acquisitions are not persisted; the
   release, lock-expiry or acknowledgement write that would have carried it failed, was fenced,
   or never came because the lead moved first).
3. Nothing is lost: at the end every open transaction is ended, faults stop, and all members
   accept everything until nothing is left; then every deliverable offset at or above the log
   start offset (and at or above the start ``share.auto.offset.reset`` chose) is finished in the
   share coordinator's state and justified: an ACCEPT or REJECT of it by its holder reached the
   state machine (whatever the answer; ACKNOWLEDGED ones: an ACCEPT), or it was delivered
   ``delivery_count_limit`` times; a reload then delivers
   nothing. During the run too, every offset the in-memory state or the share coordinator holds
   as finished, or has passed, is justified the same way or is not deliverable (a control
   record, an aborted record under read_committed, below the log start offset).
4. Two members never hold the same offset at once: a delivery never hits an offset that some
   member holds (delivered to it by the current incarnation, lock not expired, not acknowledged
   or released since); and the in-memory ACQUIRED records are exactly the holds the simulation
   expects, none past its lock deadline.

5. Dead letters (when the group has a dead-letter topic): a record the state machine finished
   unsuccessfully (REJECT, or released or expired at the delivery limit) is dead-lettered before
   a write makes its archival durable -- except the archival a write carries for a record still
   ACQUIRED at the limit (locks are written as they would be released), which can precede its
   expiry and so its dead letter; a leader that fails then archives it with no dead letter.

Also: an acknowledgement of offsets the member holds is never INVALID_RECORD_STATE (it fails
only with a persistence error), one of offsets it does not hold never succeeds, and the returned
record batches hold every acquired offset and no control batch.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import random
import tempfile
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from zurau.clock import ManualClock
from zurau.coordinator.share.share_coordinator_shard import (
    Effects,
    ShareCoordinatorShard,
    SharePartitionState,
    ShareStateConfig,
)
from zurau.coordinator.share.share_state_records import ShareStateKey, ShareStateRecord
from zurau.protocol import errors as E
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.protocol.share_states import AcknowledgeType, RecordState, StateBatch
from zurau.replication.share import share_partition_manager as spm
from zurau.replication.share.dead_letters import DeadLetter
from zurau.replication.share.share_partition import AcknowledgeResult, SharePartition
from zurau.replication.share.share_partition_manager import ShareConfig, SharePartitionManager
from zurau.storage.partition_log import LogReadSlice
from zurau.storage.txn_index import AbortedTxn

GROUP = "g"
DLQ_TOPIC = "dlq.g"
TOPIC = "t"
_FINISHED = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
_ACK_ERRORS_FOR_HELD = (E.InvalidRecordStateError.code, E.InvalidRequestError.code)


class ShareSimViolation(AssertionError):
    pass


@dataclass(frozen=True)
class ShareSimParams:
    steps: int = 300
    partitions: int = 2
    members: int = 3
    delivery_count_limit: int = 3
    max_record_locks: int = 12
    lock_ms: int = 1_000
    write_failure: float = 0.1  # per write: lost, applied-then-error, or raising
    read_failure: float = 0.05
    delay: float = 0.25  # per read/write: held until a later step releases it
    snapshot_every: int = 3  # share.coordinator.snapshot.update.records.per.snapshot


# ---------------------------------------------------------------------------------- the log


@dataclass
class _Batch:
    base: int
    last: int
    pos: int
    size: int
    segment: int
    plain: bool  # neither transactional nor control: the cleaner may remove it


class SimLog:
    """A partition log as the manager reads it (see the module docstring)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self.fd = self._file.fileno()
        self.batches: list[_Batch] = []
        self._lasts: list[int] = []
        self._size = 0
        self.segment = 0
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        self.control: set[int] = set()
        self.aborted_offsets: set[int] = set()
        self.aborted: list[AbortedTxn] = []
        self.open_txns: dict[int, list[int]] = {}  # producer id -> offsets of its open transaction
        self.removed: set[int] = set()  # offsets whose batch compaction removed

    def close(self) -> None:
        self._file.close()

    @property
    def last_stable_offset(self) -> int:
        firsts = [offs[0] for offs in self.open_txns.values() if offs]
        return min([self.high_watermark, *firsts])

    def deliverable(self, offset: int, read_committed: bool) -> bool:
        return (
            offset < self.log_end_offset
            and offset not in self.control
            and offset not in self.removed
            and not (read_committed and offset in self.aborted_offsets)
        )

    def _write(self, base: int, last: int, data: bytes, plain: bool = False) -> None:
        self._file.seek(self._size)
        self._file.write(data)
        self._file.flush()
        self.batches.append(_Batch(base, last, self._size, len(data), self.segment, plain))
        self._lasts.append(last)
        self._size += len(data)
        self.log_end_offset = last + 1

    def append(self, n: int, now: int, producer_id: int = -1, transactional: bool = False) -> None:
        base = self.log_end_offset
        records = [NewRecord(None, b"v%d" % (base + i), (), now) for i in range(n)]
        txn = producer_id >= 0
        self._write(
            base,
            base + n - 1,
            build_batch(
                records,
                base_offset=base,
                producer_id=producer_id,
                producer_epoch=0 if txn else -1,
                base_sequence=0 if txn else -1,
                is_transactional=transactional,
            ),
            plain=not transactional,
        )
        if transactional:
            self.open_txns.setdefault(producer_id, []).extend(range(base, base + n))

    def end_txn(self, producer_id: int, commit: bool, now: int) -> None:
        offsets = self.open_txns.pop(producer_id)
        base = self.log_end_offset
        self._write(base, base, build_control_batch(commit, producer_id, 0, 0, base, timestamp_ms=now))
        self.control.add(base)
        if not commit:
            self.aborted.append(AbortedTxn(producer_id, offsets[0], base, self.last_stable_offset))
            self.aborted_offsets.update(offsets)

    def roll(self) -> None:
        self.segment += 1

    def compact(self, rng: random.Random) -> tuple[int, int] | None:
        """The cleaner removes one plain batch below the high watermark (never the last batch):
        the file is rewritten without it, as a cleaned segment is. Returns its offsets."""
        cands = [i for i, b in enumerate(self.batches[:-1]) if b.plain and b.last < self.high_watermark]
        if not cands:
            return None
        gone = self.batches.pop(rng.choice(cands))
        self._lasts = [b.last for b in self.batches]
        self.removed.update(range(gone.base, gone.last + 1))
        old = self._file
        self._file = tempfile.TemporaryFile()
        self.fd = self._file.fileno()
        pos = 0
        for b in self.batches:
            data = os.pread(old.fileno(), b.size, b.pos)
            self._file.write(data)
            b.pos = pos
            pos += b.size
        self._file.flush()
        self._size = pos
        old.close()
        return gone.base, gone.last

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        return [a for a in self.aborted if a.last_offset >= fetch_offset and a.first_offset < upper_bound]

    def read_slice(
        self, fetch_offset: int, max_bytes: int, *, max_offset: int, min_one_batch: bool = True
    ) -> LogReadSlice | None:
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise E.OffsetOutOfRangeError(f"offset {fetch_offset} out of range")
        if fetch_offset >= min(max_offset, self.log_end_offset):
            return None
        i = bisect.bisect_left(self._lasts, fetch_offset)
        first = self.batches[i]
        if first.base >= max_offset:
            return None
        end = first.pos
        for b in self.batches[i:]:
            if b.segment != first.segment or b.base >= max_offset or b.pos + b.size - first.pos > max_bytes:
                break
            end = b.pos + b.size
        if end == first.pos:
            if not min_one_batch:
                return None
            end = first.pos + first.size
        return LogReadSlice(self.fd, first.pos, end - first.pos, first.base)


@dataclass
class SimPartition:
    leader_epoch: int
    log: SimLog


# ---------------------------------------------------------------------------------- the persister


def _expand(s: SharePartitionState | None, lo: int, upto: int) -> dict[int, tuple[int, int]] | None:
    """Offset -> (state, count) of the persisted state for offsets in ``[lo, upto)`` that are
    below the start offset (ACKNOWLEDGED: finished, the exact state forgotten) or in a batch;
    None if uninitialized."""
    if s is None or s.start_offset < 0:
        return None
    out = {o: (int(RecordState.ACKNOWLEDGED), 0) for o in range(lo, min(s.start_offset, upto))}
    for b in s.state_batches:
        for o in range(max(b.first_offset, lo), min(b.last_offset + 1, upto)):
            out[o] = (b.delivery_state, b.delivery_count)
    return out


class SimPersister:
    """ReadShareGroupState/WriteShareGroupState over a real share-coordinator shard, with faults."""

    def __init__(self, sim: ShareSim) -> None:
        self.sim = sim
        self.config = ShareStateConfig(snapshot_update_records_per_snapshot=sim.params.snapshot_every)
        topic = SimpleNamespace(name=TOPIC, topic_id=sim.topic_id, partitions=sim.params.partitions)
        self.topics = SimpleNamespace(
            get=lambda name: topic if name == TOPIC else None,
            by_id=lambda tid: topic if tid == sim.topic_id else None,
            names=lambda: [TOPIC],
        )
        self.shard = ShareCoordinatorShard(self.config, self.topics)  # type: ignore[arg-type]
        self.records: list[ShareStateRecord] = []  # every committed record, in order

    def key(self, p: int) -> ShareStateKey:
        return ShareStateKey(GROUP, self.sim.topic_id, p)

    def state(self, p: int) -> SharePartitionState | None:
        return self.shard.states.get(self.key(p))

    def _run(self, fx: Effects) -> Any:
        replies = list(fx.replies)
        for w in fx.writes:
            self.records.extend(w.records)
            replies.extend(self.shard.complete_write(w, None, self.sim.clock.now_ms()).replies)
        assert len(replies) == 1, replies
        return replies[0][1]

    def initialize(self, p: int) -> None:
        r = self._run(
            self.shard.initialize(object(), GROUP, self.sim.topic_id, p, 0, -1, self.sim.clock.now_ms())
        )
        assert r.error_code == 0, r

    def failover(self) -> None:
        """A new share coordinator replays the committed records: it must hold the same state."""
        fresh = ShareCoordinatorShard(self.config, self.topics)  # type: ignore[arg-type]
        fresh.load(self.records)
        for p in range(self.sim.params.partitions):
            k = self.key(p)
            if fresh.states.get(k) != self.shard.states.get(k):
                self.sim.fail(f"p{p}: state after a share-coordinator failover differs")
            if fresh.leader_epochs.get(k) != self.shard.leader_epochs.get(k):
                self.sim.fail(f"p{p}: leader epoch after a share-coordinator failover differs")
        self.shard = fresh

    async def _maybe_delay(self, what: str) -> None:
        sim = self.sim
        if sim.faults and sim.rng.random() < sim.params.delay:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            sim.gates.append((fut, what))
            await fut

    async def read_state(self, group_id: str, items: dict[tuple[uuid.UUID, int], Any]) -> dict[Any, Any]:
        sim = self.sim
        out: dict[Any, Any] = {}
        for (tid, p), item in items.items():
            await self._maybe_delay(f"read p{p}")
            if sim.faults and sim.rng.random() < sim.params.read_failure:
                out[(tid, p)] = {
                    "partition": p,
                    "error_code": E.CoordinatorLoadInProgressError.code,
                    "error_message": "sim: loading",
                }
                continue
            r = self._run(
                self.shard.read(object(), group_id, tid, p, item["leader_epoch"], sim.clock.now_ms())
            )
            d = {
                "partition": p,
                "error_code": r.error_code,
                "error_message": r.error_message,
                "state_epoch": r.state_epoch,
                "start_offset": r.start_offset,
                "state_batches": [
                    {
                        "first_offset": b.first_offset,
                        "last_offset": b.last_offset,
                        "delivery_state": b.delivery_state,
                        "delivery_count": b.delivery_count,
                    }
                    for b in r.state_batches
                ],
            }
            if r.error_code == 0:
                sim.last_read[p] = d
            out[(tid, p)] = d
        return out

    async def write_state(self, group_id: str, items: dict[tuple[uuid.UUID, int], Any]) -> dict[Any, Any]:
        sim = self.sim
        out: dict[Any, Any] = {}
        for (tid, p), item in items.items():
            # records the writer holds ACQUIRED now: written as they would be released (ARCHIVED
            # at the delivery limit), with no failure and no dead letter yet
            held = {
                o
                for h in sim.mgr._holders.values()
                if h.key[2] == p and h.leader_epoch == item["leader_epoch"]
                for o in range(h.sp.start_offset, h.sp.end_offset + 1)
                if h.sp.record_state(o)[0] is RecordState.ACQUIRED
            }
            mode = "ok"
            if sim.faults:
                x = sim.rng.random() / sim.params.write_failure if sim.params.write_failure else 1.0
                mode = "lost" if x < 0.4 else "timeout" if x < 0.8 else "raise" if x < 1.0 else "ok"
            after = sim.faults and sim.rng.random() < 0.5  # the response is delayed, not the request
            if not after:
                await self._maybe_delay(f"write p{p} ({mode})")
            code = E.CoordinatorNotAvailableError.code
            if mode in ("ok", "timeout"):
                before = self.state(p)
                r = self._run(
                    self.shard.write(
                        object(),
                        group_id,
                        tid,
                        p,
                        item["state_epoch"],
                        item["leader_epoch"],
                        item["start_offset"],
                        [
                            StateBatch(
                                b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"]
                            )
                            for b in item["state_batches"]
                        ],
                        sim.clock.now_ms(),
                    )
                )
                if r.error_code == 0:
                    sim.check_durable_step(p, before, self.state(p), held)
                code = r.error_code if mode == "ok" else E.RequestTimedOutError.code
            if after:
                await self._maybe_delay(f"write p{p} response ({mode})")
            if mode == "raise":
                raise E.CoordinatorNotAvailableError("sim: the share coordinator went away")
            out[(tid, p)] = {
                "partition": p,
                "error_code": code,
                "error_message": None if code == 0 else "sim",
            }
        return out


# ---------------------------------------------------------------------------------- the simulation


@dataclass
class _Hold:
    member: str
    holder: Any
    deadline: int


@dataclass
class _Incarnation:
    base_start: int
    base: dict[int, tuple[int, int]]  # offset -> (state, count) read at load
    deliveries: dict[int, int] = field(default_factory=dict)


class ShareSim:
    def __init__(self, seed: int, params: ShareSimParams | None = None) -> None:
        self.seed = seed
        self.params = p = params or ShareSimParams()
        self.rng = random.Random(seed)
        self.clock = ManualClock()
        self.topic_id = uuid.UUID(int=self.rng.getrandbits(128))
        self.read_committed = self.rng.random() < 0.4
        self.ever_read_committed = self.read_committed  # aborted records may have been archived
        self.lock_ms = p.lock_ms  # share.record.lock.duration.ms of the group (changes now and then)
        self.redelivery_delay_ms = self.rng.choice([0, 0, p.lock_ms // 3])  # share.redelivery.delay.ms
        self.dlq = self.rng.random() < 0.7  # errors.deadletterqueue.topic.name set
        self.dlq_copy = self.rng.random() < 0.5  # errors.deadletterqueue.copy.record.enable
        self.must_dead_letter: set[tuple[int, int]] = set()  # failed in memory, letter owed
        self.dead_lettered: set[tuple[int, int]] = set()  # letters the sink acknowledged
        self.reset = self.rng.choice(["earliest", "latest"])
        self.members = [f"m{i}" for i in range(p.members)]
        self.logs = [SimLog() for _ in range(p.partitions)]
        self.epochs = [1] * p.partitions
        self.leading = [True] * p.partitions
        self.initialized = [False] * p.partitions
        self.faults = True
        self.gates: list[tuple[asyncio.Future[None], str]] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.step_no = 0
        self.trace: list[str] = []
        self.persister = SimPersister(self)
        self.mgr = SharePartitionManager(
            self.persister,
            self.clock,
            self._leader,
            lambda tid: TOPIC if tid == self.topic_id else None,
            ShareConfig(
                record_lock_duration_ms=p.lock_ms,
                delivery_count_limit=p.delivery_count_limit,
                max_record_locks=p.max_record_locks,
            ),
            group_config=self._group_config,
            dead_letters=SimDeadLetters(self),
        )
        # the model
        self.last_read: dict[int, dict[str, Any]] = {}
        self.incarnations: dict[int, _Incarnation] = {}  # id(holder) -> its base
        self._keep: list[Any] = []  # holders seen (so their ids stay unique)
        self.holds: dict[tuple[int, int], _Hold] = {}
        self.ok_done: set[tuple[int, int]] = set()  # ACCEPT/REJECT answered OK
        self.accept_sent: set[tuple[int, int]] = set()
        self.reject_sent: set[tuple[int, int]] = set()
        self.max_count: dict[tuple[int, int], int] = {}
        self.exempt_below = [0] * p.partitions  # below the start share.auto.offset.reset chose
        self.passed_checked = [0] * p.partitions  # offsets below: checked as justified
        self.delivered_total = 0
        self.acked_ok_total = 0
        self.stats: dict[str, int] = {}
        self.violation: ShareSimViolation | None = None
        # id(acknowledgement batches) -> held when applied (None: either outcome is right)
        self.ack_validity: dict[int, bool | None] = {}

    # ------------------------------------------------------------------ plumbing

    def fail(self, msg: str) -> None:
        """Raise a violation naming the seed. The first one is also kept: one raised inside the
        manager's call of the persister would be taken for a persister error there, so
        :meth:`settle` raises it again."""
        tail = "\n  ".join(self.trace[-25:])
        exc = ShareSimViolation(
            f"seed {self.seed} step {self.step_no} t={self.clock.now_ms()}: {msg}\n"
            f"replay: ZURAU_SHARE_SIM_SEED={self.seed}\nlast steps:\n  {tail}"
        )
        if self.violation is None:
            self.violation = exc
        raise exc

    def _leader(self, topic: str, partition: int) -> SimPartition:
        if topic != TOPIC or not 0 <= partition < self.params.partitions:
            raise E.UnknownTopicOrPartitionError(f"{topic}-{partition}")
        if not self.leading[partition]:
            raise E.NotLeaderOrFollowerError(f"not leading {topic}-{partition}")
        return SimPartition(self.epochs[partition], self.logs[partition])

    def _group_config(self, group_id: str, name: str) -> str | None:
        if name == "share.auto.offset.reset":
            return self.reset
        if name == "share.record.lock.duration.ms":
            return str(self.lock_ms)
        if name == "share.isolation.level":
            return "read_committed" if self.read_committed else "read_uncommitted"
        if name == "share.redelivery.delay.ms":
            return str(self.redelivery_delay_ms)
        if name == "errors.deadletterqueue.topic.name":
            return DLQ_TOPIC if self.dlq else None
        if name == "errors.deadletterqueue.copy.record.enable":
            return self.dlq_copy
        return None

    def upto(self, p: int) -> int:
        log = self.logs[p]
        return log.last_stable_offset if self.read_committed else log.high_watermark

    def holder(self, p: int) -> Any:
        """The loaded share-partition of ``p`` that serves requests now, or None."""
        h = self.mgr._holders.get((GROUP, self.topic_id, p))
        if h is None or not self.leading[p] or h.leader_epoch != self.epochs[p]:
            return None
        return h

    def _incarnation(self, p: int, h: Any) -> _Incarnation:
        inc = self.incarnations.get(id(h))
        if inc is None:
            r = self.last_read[p]
            base: dict[int, tuple[int, int]] = {}
            for b in r["state_batches"]:
                for o in range(b["first_offset"], b["last_offset"] + 1):
                    base[o] = (b["delivery_state"], b["delivery_count"])
            inc = _Incarnation(r["start_offset"], base)
            if r["start_offset"] == -1:  # started where share.auto.offset.reset says
                self.exempt_below[p] = max(self.exempt_below[p], h.sp.start_offset)
            self.incarnations[id(h)] = inc
            self._keep.append(h)
        return inc

    def _valid_hold(self, key: tuple[int, int]) -> _Hold | None:
        hold = self.holds.get(key)
        if hold is None:
            return None
        if hold.holder is not self.holder(key[0]) or hold.deadline <= self.clock.now_ms():
            del self.holds[key]
            return None
        return hold

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self.tasks.append(asyncio.get_running_loop().create_task(coro))

    async def settle(self) -> None:
        loop = asyncio.get_running_loop()
        ready = loop._ready  # type: ignore[attr-defined]
        for _ in range(100_000):
            await asyncio.sleep(0)
            if not ready:
                break
        else:
            self.fail("the loop never settles")
        done = [t for t in self.tasks if t.done()]
        self.tasks = [t for t in self.tasks if not t.done()]
        for t in done:
            t.result()  # a violation found inside an operation
        if self.violation is not None:
            raise self.violation

    def justified(self, p: int, o: int) -> bool:
        """Whether offset ``o`` of ``p`` may be finished (see property 3)."""
        log = self.logs[p]
        return (
            o < log.log_start_offset
            or o < self.exempt_below[p]
            or not log.deliverable(o, self.ever_read_committed)
            or (p, o) in self.accept_sent
            or (p, o) in self.reject_sent
            or self.max_count.get((p, o), 0) >= self.params.delivery_count_limit
        )

    # ------------------------------------------------------------------ checks

    def check_durable_step(
        self,
        p: int,
        before: SharePartitionState | None,
        after: SharePartitionState | None,
        held: set[int] = frozenset(),  # type: ignore[assignment]
    ) -> None:
        """A write took effect: no offset's persisted count went down, nothing finished came back,
        the start offset did not move back, and everything finished is justified."""
        if after is None:
            self.fail(f"p{p}: the state vanished at a write")
        assert after is not None
        upto = max(self.logs[p].log_end_offset, after.start_offset) + 1
        if (before is None or before.start_offset < 0) and after.start_offset >= 0:
            # the start share.auto.offset.reset chose became durable
            self.exempt_below[p] = max(self.exempt_below[p], after.start_offset)
        if before is not None and before.start_offset > after.start_offset:
            self.fail(f"p{p}: persisted start offset went back {before.start_offset} -> {after.start_offset}")
        # offsets below the earlier start offset were checked by earlier writes
        lo = before.start_offset if before is not None and before.start_offset >= 0 else 0
        b = _expand(before, lo, upto)
        a = _expand(after, lo, upto)
        if a is None:
            return
        if b is not None:
            for o in range(lo, upto):
                sb, cb = b.get(o, (int(RecordState.AVAILABLE), 0))
                sa, ca = a.get(o, (int(RecordState.AVAILABLE), 0))
                if sb in _FINISHED and sa not in _FINISHED:
                    self.fail(f"p{p}: persisted offset {o} went from {sb}/{cb} back to {sa}/{ca}")
                if o >= after.start_offset and sa not in _FINISHED and ca < cb:
                    self.fail(f"p{p}: persisted delivery count of {o} went down {cb} -> {ca}")
        log = self.logs[p]
        for o, (s, _c) in a.items():
            if s in _FINISHED and not self.justified(p, o):
                self.fail(f"p{p}: offset {o} persisted as finished ({s}) without reason")
            if (
                self.dlq
                and s in _FINISHED
                and (b is None or b.get(o, (0, 0))[0] not in _FINISHED)
                and (p, o) in self.must_dead_letter
                and (p, o) not in self.dead_lettered
                and o >= log.log_start_offset
                and o not in held
            ):
                self.fail(
                    f"p{p}: offset {o} durably finished unsuccessfully before its dead letter was written"
                )
        for bt in after.state_batches:
            if bt.delivery_count > self.params.delivery_count_limit:
                self.fail(f"p{p}: persisted count {bt} above the limit")

    def check_memory(self) -> None:
        now = self.clock.now_ms()
        for p in range(self.params.partitions):
            h = self.holder(p)
            if h is None:
                continue
            inc = self._incarnation(p, h)
            sp = h.sp
            log = self.logs[p]
            # (justifications only accumulate: offsets checked once stay justified)
            lo = max(log.log_start_offset, self.exempt_below[p], self.passed_checked[p])
            for o in range(lo, sp.start_offset):
                if not self.justified(p, o):
                    self.fail(f"p{p}: start offset {sp.start_offset} passed unfinished offset {o}")
            self.passed_checked[p] = max(self.passed_checked[p], sp.start_offset)
            acquired = 0
            for o in range(sp.start_offset, sp.end_offset + 1):
                state, count, owner = sp.record_state(o)
                hold = self._valid_hold((p, o))
                if state is RecordState.ACQUIRED:
                    acquired += 1
                    deadline = sp._records[o].deadline_ms
                    if deadline is None or deadline <= now:
                        self.fail(
                            f"p{p}: offset {o} still ACQUIRED by {owner} past its lock deadline {deadline}"
                        )
                    if hold is None or hold.member != owner:
                        self.fail(f"p{p}: offset {o} ACQUIRED by {owner}, the simulation expects {hold}")
                    expected = inc.base.get(o, (0, 0))[1] + inc.deliveries.get(o, 0)
                    if count != expected:
                        self.fail(f"p{p}: offset {o} ACQUIRED with count {count}, expected {expected}")
                elif hold is not None:
                    self.fail(f"p{p}: offset {o} is {state.name} but {hold.member} holds it")
                elif state in _FINISHED and not self.justified(p, o):
                    self.fail(f"p{p}: offset {o} is {state.name} without reason")
                if count > self.params.delivery_count_limit:
                    self.fail(f"p{p}: offset {o} has count {count} above the limit")
            if acquired > self.params.max_record_locks:
                self.fail(f"p{p}: {acquired} records acquired, above max_record_locks")

    # ------------------------------------------------------------------ operations

    def tps(self, rng: random.Random | None = None) -> list[tuple[uuid.UUID, int]]:
        ps = list(range(self.params.partitions))
        if rng is not None:
            rng.shuffle(ps)
            ps = ps[: rng.randint(1, len(ps))]
        return [(self.topic_id, p) for p in ps]

    async def fetch(
        self, member: str, tps: list[tuple[uuid.UUID, int]], max_records: int, max_bytes: int
    ) -> None:
        out = await self.mgr.acquire(GROUP, member, tps, max_records, max_bytes)
        self.on_fetched(member, out, max_records)

    def on_fetched(self, member: str, out: dict[tuple[uuid.UUID, int], Any], max_records: int) -> None:
        now = self.clock.now_ms()
        total = 0
        for (_tid, p), got in out.items():
            if got.error is not None:
                self.stats["fetch_errors"] = self.stats.get("fetch_errors", 0) + 1
                continue
            if not got.acquired:
                continue
            h = self.holder(p)
            if h is None:
                self.fail(f"p{p}: records delivered with no serving share-partition")
            inc = self._incarnation(p, h)
            covered: list[tuple[int, int]] = []
            for _pos, hdr in iter_batches(got.records or b""):
                if hdr.is_control:
                    self.fail(f"p{p}: a control batch at {hdr.base_offset} was returned")
                covered.append((hdr.base_offset, hdr.base_offset + hdr.last_offset_delta))
            log = self.logs[p]
            for a in got.acquired:
                for o in range(a.first_offset, a.last_offset + 1):
                    key = (p, o)
                    total += 1
                    if not any(lo <= o <= hi for lo, hi in covered):
                        self.fail(f"p{p}: acquired offset {o} is in no returned batch")
                    if not log.deliverable(o, self.read_committed) or o >= self.upto(p):
                        self.fail(f"p{p}: offset {o} delivered but it is not a deliverable record")
                    if key in self.ok_done:
                        self.fail(f"p{p}: offset {o} delivered again after its ACCEPT/REJECT was answered OK")
                    if a.delivery_count > self.params.delivery_count_limit:
                        self.fail(f"p{p}: offset {o} delivered with count {a.delivery_count} above the limit")
                    if inc.base_start != -1:
                        if o < inc.base_start:
                            self.fail(
                                f"p{p}: offset {o} delivered below the loaded start offset {inc.base_start}"
                            )
                        if inc.base.get(o, (0, 0))[0] in _FINISHED:
                            self.fail(f"p{p}: offset {o} delivered but loaded as finished {inc.base[o]}")
                    expected = inc.base.get(o, (0, 0))[1] + inc.deliveries.get(o, 0) + 1
                    if a.delivery_count != expected:
                        self.fail(
                            f"p{p}: offset {o} delivered with count {a.delivery_count}, expected {expected}"
                        )
                    other = self._valid_hold(key)
                    if other is not None:
                        self.fail(f"p{p}: offset {o} delivered to {member} while {other.member} holds it")
                    if a.delivery_count <= self.max_count.get(key, 0):  # a reload forgot an acquisition
                        self.stats["count_not_up"] = self.stats.get("count_not_up", 0) + 1
                    inc.deliveries[o] = inc.deliveries.get(o, 0) + 1
                    self.holds[key] = _Hold(member, h, now + self.lock_ms)
                    self.max_count[key] = max(self.max_count.get(key, 0), a.delivery_count)
                    self.must_dead_letter.discard(key)  # that failure never became durable
        if total > max_records:
            self.fail(f"{total} records acquired, more than max_records {max_records}")
        self.delivered_total += total

    def on_apply_ack(self, sp: Any, member: str, batches: Any) -> None:
        """The manager is about to apply ``member``'s acknowledgement ``batches`` to ``sp``: decide
        now whether the member holds every offset (so whether it must succeed, but for a failed
        write); either way it no longer holds them afterwards.

        One case is left open (None): ``sp`` is loaded but of an earlier leader epoch. That
        happens when the epoch moved (without ``on_resigned``) while the load's first write was
        held: the acknowledgement waiting for that load then meets the old share-partition. It
        may succeed -- its write carries the old epoch, which the share coordinator fences as soon
        as a load at the new epoch has read, so it succeeds only if no new incarnation exists
        yet, and such a load will read it -- or fail."""
        p = next(
            (q for q in range(self.params.partitions) if (h := self.holder(q)) is not None and h.sp is sp),
            None,
        )
        stale = next((q for (_g, _t, q), h in self.mgr._holders.items() if h.sp is sp), None)
        valid: bool | None = p is not None
        offsets = [o for first, last, _t in batches for o in range(first, last + 1)]
        if p is not None:
            for o in offsets:
                hold = self._valid_hold((p, o))
                if hold is None or hold.member != member:
                    valid = False
            if valid:
                for o in offsets:
                    del self.holds[(p, o)]
        elif stale is not None:
            p, valid = stale, None
        if p is not None and valid is not False:  # it may take effect: the offsets may finish
            for first, last, types in batches:
                for i, o in enumerate(range(first, last + 1)):
                    t = types[i] if len(types) > 1 else types[0]
                    if t == AcknowledgeType.ACCEPT:
                        self.accept_sent.add((p, o))
                    elif t == AcknowledgeType.REJECT:
                        self.reject_sent.add((p, o))
        self.ack_validity[id(batches)] = valid

    async def acknowledge(self, member: str, p: int, acks: list[tuple[int, int]]) -> None:
        """``acks``: ascending (offset, ack type)."""
        batches: list[tuple[int, int, list[int]]] = []
        i = 0
        while i < len(acks):
            j = i
            while j + 1 < len(acks) and acks[j + 1][0] == acks[j][0] + 1:
                j += 1
            run = acks[i : j + 1]
            types = [t for _o, t in run]
            if len(set(types)) == 1 and self.rng.random() < 0.7:
                types = types[:1]
            batches.append((run[0][0], run[-1][0], types))
            i = j + 1
        res = (await self.mgr.acknowledge(GROUP, member, {(self.topic_id, p): batches}))[(self.topic_id, p)]
        valid = self.ack_validity.pop(id(batches), False)  # False: it never reached the state
        kind = "stale" if valid is None else "held" if valid else "not_held"
        stat = f"ack_{kind}_{'ok' if res.ok else res.error_code}"
        self.stats[stat] = self.stats.get(stat, 0) + 1
        if res.ok:
            if valid is False:
                self.fail(f"p{p}: {member}'s acknowledgement {batches} of records it does not hold succeeded")
            self.acked_ok_total += len(acks)
            for o, t in acks:
                if t in (AcknowledgeType.ACCEPT, AcknowledgeType.REJECT):
                    self.ok_done.add((p, o))
        elif valid and res.error_code in _ACK_ERRORS_FOR_HELD:
            self.fail(f"p{p}: {member}'s acknowledgement {batches} of records it holds failed: {res}")

    async def release_member(self, member: str) -> None:
        for key, hold in list(self.holds.items()):
            if hold.member == member:
                del self.holds[key]
        await self.mgr.release_member(GROUP, member, self.tps())

    # ------------------------------------------------------------------ steps

    def step(self) -> None:
        rng = self.rng
        P = self.params.partitions
        p = rng.randrange(P)
        log = self.logs[p]
        now = self.clock.now_ms()
        choices: list[tuple[str, int]] = [
            ("fetch", 30),
            ("ack", 28),
            ("advance", 10),
            ("append", 16),
            ("hw", 8),
            ("gate", 14 if self.gates else 0),
            ("leader", 2),
            ("regain", 6 if not self.leading[p] else 0),
            ("delete", 1),
            ("close", 2),
            ("failover", 1),
            ("init", 6 if not self.initialized[p] else 0),
            ("roll", 1),
            ("isolation", 1),
            ("lock", 1),
            ("compact", 2),
        ]
        kind = rng.choices([c for c, _ in choices], [w for _, w in choices])[0]
        self.stats[kind] = self.stats.get(kind, 0) + 1
        member = rng.choice(self.members)
        if kind == "fetch":
            tps = self.tps(rng)
            mr = rng.choice([1, 2, 3, 5, 8, 20])
            mb = rng.choice([1, 100, 300, 1000, 1 << 20])
            self.trace.append(f"fetch {member} {[t[1] for t in tps]} max_records={mr} max_bytes={mb}")
            self.spawn(self.fetch(member, tps, mr, mb))
        elif kind == "ack":
            mine = sorted(k[1] for k, h in self.holds.items() if h.member == member and k[0] == p)
            if not mine and rng.random() < 0.8:
                return
            chosen = [o for o in mine if rng.random() < 0.6]
            if rng.random() < 0.1 or not chosen:  # an offset it may well not hold
                extra = rng.randrange(max(log.log_end_offset, 1))
                chosen = sorted(set(chosen) | {extra})
            weights = [5, 2, 2]
            acks = [
                (
                    o,
                    rng.choices(
                        [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT], weights
                    )[0],
                )
                for o in chosen
            ]
            self.trace.append(f"ack {member} p{p} {[(o, int(t)) for o, t in acks]}")
            self.spawn(self.acknowledge(member, p, [(o, int(t)) for o, t in acks]))
        elif kind == "advance":
            ms = rng.choice(
                [1, 10, 100, self.params.lock_ms // 2, self.params.lock_ms, self.params.lock_ms * 2]
            )
            self.trace.append(f"advance {ms} ms")
            self.clock.advance(ms)
        elif kind == "append":
            x = rng.random()
            pid = rng.randrange(3)
            if x < 0.5:
                n = rng.randint(1, 4)
                self.trace.append(f"append p{p} {n} records")
                log.append(n, now)
            elif x < 0.75 or pid not in log.open_txns:
                n = rng.randint(1, 3)
                self.trace.append(f"append p{p} {n} transactional records of producer {pid}")
                log.append(n, now, producer_id=pid, transactional=True)
            else:
                commit = rng.random() < 0.6
                self.trace.append(f"{'commit' if commit else 'abort'} p{p} producer {pid}")
                log.end_txn(pid, commit, now)
            if rng.random() < 0.3:
                log.high_watermark = log.log_end_offset
        elif kind == "hw":
            ends = [b.last + 1 for b in log.batches if b.last + 1 > log.high_watermark]
            if ends:
                log.high_watermark = rng.choice(ends)
                self.trace.append(f"hw p{p} -> {log.high_watermark}")
                self.mgr.wake(TOPIC, p)
        elif kind == "gate":
            fut, what = self.gates.pop(rng.randrange(len(self.gates)))
            self.trace.append(f"deliver {what}")
            fut.set_result(None)
        elif kind == "leader":
            self.epochs[p] += 1
            how = rng.random()
            if how < 0.4:
                self.trace.append(f"p{p} leader epoch {self.epochs[p]} (on_resigned, lead kept)")
                self.mgr.on_resigned(TOPIC, p)
            elif how < 0.7:
                self.trace.append(f"p{p} leader epoch {self.epochs[p]} (no on_resigned)")
            else:
                self.trace.append(f"p{p} lead lost (epoch {self.epochs[p]})")
                self.leading[p] = False
                self.mgr.on_resigned(TOPIC, p)
        elif kind == "regain":
            self.epochs[p] += 1
            self.leading[p] = True
            self.trace.append(f"p{p} lead regained (epoch {self.epochs[p]})")
        elif kind == "delete":
            if log.high_watermark > log.log_start_offset:
                log.log_start_offset = rng.randint(log.log_start_offset + 1, log.high_watermark)
                self.trace.append(f"delete records p{p} below {log.log_start_offset}")
        elif kind == "close":
            self.trace.append(f"session close {member}")
            self.spawn(self.release_member(member))
        elif kind == "failover":
            self.trace.append("share coordinator failover")
            self.persister.failover()
        elif kind == "init":
            self.trace.append(f"initialize p{p}")
            self.initialized[p] = True
            self.persister.initialize(p)
        elif kind == "roll":
            log.roll()
        elif kind == "lock":  # share.record.lock.duration.ms changed: later locks may end sooner
            self.lock_ms = rng.choice(
                [self.params.lock_ms // 4, self.params.lock_ms, self.params.lock_ms * 2]
            )
            self.trace.append(f"share.record.lock.duration.ms {self.lock_ms}")
        elif kind == "compact":
            removed = log.compact(rng)
            if removed is not None:
                self.trace.append(f"compaction removed p{p} {removed[0]}..{removed[1]}")
        elif kind == "isolation":  # share.isolation.level changed (a group config)
            self.read_committed = not self.read_committed
            self.ever_read_committed |= self.read_committed
            self.trace.append(
                f"share.isolation.level read_{'committed' if self.read_committed else 'uncommitted'}"
            )

    async def run(self) -> None:
        for p in range(self.params.partitions):
            self.logs[p].append(self.rng.randint(1, 5), self.clock.now_ms())
            self.logs[p].high_watermark = self.logs[p].log_end_offset
            if self.rng.random() < 0.7:
                self.initialized[p] = True
                self.persister.initialize(p)
        for step_no in range(self.params.steps):
            self.step_no = step_no
            # usually one operation, sometimes a few started together (their tasks interleave)
            for _ in range(self.rng.choice((1, 1, 1, 2, 3))):
                self.step()
            await self.settle()
            self.check_memory()
        await self.drain()

    async def drain(self) -> None:
        """Faults off, everything delivered and accepted; then check that nothing was lost."""
        self.trace.append("--- drain")
        self.faults = False
        while self.gates:
            fut, _what = self.gates.pop(0)
            fut.set_result(None)
            await self.settle()
        await self.settle()
        now = self.clock.now_ms()
        for p, log in enumerate(self.logs):
            for pid in sorted(log.open_txns):
                log.end_txn(pid, self.rng.random() < 0.5, now)
            log.high_watermark = log.log_end_offset
            if not self.leading[p]:
                self.leading[p] = True
                self.epochs[p] += 1
            if not self.initialized[p]:
                self.initialized[p] = True
                self.persister.initialize(p)
        rounds = 0
        while True:
            rounds += 1
            if rounds > 1_000:
                self.fail("the share-partitions never drained")
            self.clock.advance(max(self.lock_ms, self.params.lock_ms) * 2 + 1)
            await self.settle()
            before = self.delivered_total
            for m in self.members:
                await self.fetch(m, self.tps(), 1000, 1 << 20)
                await self.settle()
                mine = sorted(k for k, h in self.holds.items() if h.member == m)
                for p in range(self.params.partitions):
                    offs = [o for q, o in mine if q == p]
                    if offs:
                        await self.acknowledge(m, p, [(o, int(AcknowledgeType.ACCEPT)) for o in offs])
                        await self.settle()
            self.check_memory()
            if self.delivered_total == before and all(
                self._quiescent(p) for p in range(self.params.partitions)
            ):
                break
        self.stats["drain_rounds"] = rounds
        self.step_no = -1
        self.persister.failover()
        for p, log in enumerate(self.logs):
            state = self.persister.state(p)
            assert state is not None
            exp = _expand(state, 0, log.log_end_offset) or {}
            for o in range(max(log.log_start_offset, self.exempt_below[p]), log.log_end_offset):
                if not log.deliverable(o, self.read_committed):
                    continue
                s, c = exp.get(o, (int(RecordState.AVAILABLE), 0))
                if s not in _FINISHED:
                    self.fail(f"p{p}: offset {o} not finished at the end ({s}/{c}) in {state}")
                if not self.justified(p, o):
                    self.fail(f"p{p}: offset {o} finished at the end without reason")
                if (
                    s == RecordState.ACKNOWLEDGED
                    and o >= state.start_offset
                    and (p, o) not in self.accept_sent
                ):
                    self.fail(f"p{p}: offset {o} ACKNOWLEDGED but never accepted")
            # a new leader finds nothing more to deliver
            self.epochs[p] += 1
            self.mgr.on_resigned(TOPIC, p)
        before = self.delivered_total
        for m in self.members:
            await self.fetch(m, self.tps(), 1000, 1 << 20)
            await self.settle()
        if self.delivered_total != before:
            self.fail("records delivered after the drain and a reload")
        for p in range(self.params.partitions):
            if not self._quiescent(p):
                h = self.holder(p)
                self.fail(
                    f"p{p}: after a reload the share-partition is {h and (h.sp.start_offset, h.sp.end_offset)}"
                )
        self.check_memory()

    def _quiescent(self, p: int) -> bool:
        h = self.holder(p)
        return h is not None and h.sp.start_offset >= self.upto(p) and h.sp.end_offset < h.sp.start_offset

    def close(self) -> None:
        self.mgr.close()
        for log in self.logs:
            log.close()


class SimDeadLetters:
    """The dead-letter sink: letters may be held (a slow produce) but are never refused (the
    manager retries a refused send on real-time sleeps, which a simulation cannot drive)."""

    def __init__(self, sim: ShareSim) -> None:
        self.sim = sim

    async def send(self, topic: str, letters: Sequence[DeadLetter]) -> None:
        sim = self.sim
        await sim.persister._maybe_delay(f"dead letters {[(x.partition, x.offset) for x in letters]}")
        for x in letters:
            if topic != DLQ_TOPIC or x.group_id != GROUP or x.topic != TOPIC:
                sim.fail(f"dead letter {x} to {topic}")
            if x.delivery_count > sim.params.delivery_count_limit or x.delivery_count < 1:
                sim.fail(f"dead letter {x} with a bad delivery count")
            if sim.dlq_copy and x.value is not None and x.value != b"v%d" % x.offset:
                sim.fail(f"dead letter {x} copies the wrong record")
            sim.dead_lettered.add((x.partition, x.offset))


class _SimSharePartition(SharePartition):
    """The real state machine, telling the running simulation when an acknowledgement is applied
    and which records it finished unsuccessfully (those the manager must dead-letter)."""

    def drain_failed(self) -> list[tuple[int, int, str]]:
        out = super().drain_failed()
        sim = _running
        if sim is not None and out:
            p = next((q for (_g, _t, q), h in sim.mgr._holders.items() if h.sp is self), None)
            if p is not None:
                sim.must_dead_letter.update((p, o) for o, _c, _r in out)
        return out

    def acknowledge(
        self, member_id: str, batches: Sequence[tuple[int, int, Sequence[int]]]
    ) -> AcknowledgeResult:
        if _running is not None:
            _running.on_apply_ack(self, member_id, batches)
        return super().acknowledge(member_id, batches)


_running: ShareSim | None = None


def run_share_seed(
    seed: int,
    params: ShareSimParams | None = None,
    script: Callable[[ShareSim], Coroutine[Any, Any, None]] | None = None,
) -> ShareSim:
    """Run one seeded simulation; a ShareSimViolation names the seed. With ``script``, run that
    instead of the random steps (faults off), with the same checks available."""
    global _running
    sim = ShareSim(seed, params)

    async def main() -> None:
        try:
            if script is None:
                await sim.run()
            else:
                sim.faults = False
                await script(sim)
        finally:
            for fut, _ in sim.gates:
                fut.cancel()
            for t in sim.tasks:
                t.cancel()
            await asyncio.sleep(0)

    saved = spm.SharePartition
    spm.SharePartition = _SimSharePartition  # type: ignore[misc]
    _running = sim
    try:
        asyncio.run(main())
    finally:
        spm.SharePartition = saved  # type: ignore[misc]
        _running = None
        sim.close()
    return sim
