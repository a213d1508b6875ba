"""The share-partition manager (KIP-932): what a partition leader does for share groups (Kafka's
``SharePartitionManager``): it serves ShareFetch and ShareAcknowledge over
:class:`~zurau.replication.share.share_partition.SharePartition` state machines, one per
``(group id, topic id, partition)`` this broker leads, kept durably by the share coordinator.

Loading. A share-partition is loaded on first use from the share coordinator
(ReadShareGroupState with the partition's leader epoch, which fences writes of earlier leaders).
A start offset of -1 (initialized by the group coordinator, never read since) is resolved with the
group's ``share.auto.offset.reset`` (``latest`` by default: the high watermark; ``earliest``:
the log start offset) and written back at once, so a restart does not move it again. State the
share coordinator has not initialized yet (the group coordinator initializes a partition before it
assigns it) answers the fetch with nothing, not an error: the member's next fetch tries again.
A share-partition whose leader epoch changed (this broker lost and regained the lead, or a newer
epoch arrived) is dropped and loaded again.

Persistence. Every change that must survive (an acknowledgement, a release, a lock expiry,
a session close) is written as the whole state (:meth:`SharePartition.to_state`: start offset
and batches; the share coordinator merges it over what it has). Writes of one share-partition are
serialized and coalesced: one write carries every change made before it started. An
acknowledgement is answered only after its write succeeded. When a write fails, the share-partition
is dropped from memory, so the next use reloads the durable state: what the client was told
failed is then, as far as this broker knows, not done. Acquisitions are not written (locks are not
durable, as in Kafka): after a failover, records that were acquired but not acknowledged are
delivered again, with the delivery count of the last write.

Locks. Each share-partition has at most one timer, at its earliest lock deadline; when it fires
the expired records are released (or archived at the delivery limit), the state is written, and
fetches waiting for data on the partition are woken.

Reads. A fetch reads the log from :meth:`SharePartition.next_fetch_offset` up to the high
watermark (``share.isolation.level`` read_uncommitted: the records of aborted transactions are
delivered, Kafka's default; read_committed: up to the last stable offset, aborted records
archived), hands the record batches (control batches left out, so their offsets are gaps) to
:meth:`SharePartition.acquire`, and answers the batches that hold acquired records.

Leadership. When this broker stops leading a partition, its share-partitions are dropped
(their durable state stays with the share coordinator, where the new leader reads it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from zurau.clock import Clock, TimerHandle
from zurau.config.group_configs import parse_share_auto_offset_reset
from zurau.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedLeaderEpochError,
    FencedStateEpochError,
    InvalidRecordStateError,
    InvalidRequestError,
    KafkaError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    OffsetMovedToTieredStorageError,
    OffsetOutOfRangeError,
    UnknownServerError,
    UnknownTopicIdError,
    for_code,
)
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.protocol.share_states import AcknowledgeType, StateBatch
from zurau.replication.purgatory import FetchPurgatory
from zurau.replication.share.dead_letters import DEFAULT_TOPIC_PREFIX, DeadLetter, DeadLetterSink
from zurau.replication.share.share_partition import (
    AcknowledgeResult,
    AcquiredRecords,
    SharePartition,
    initial_start_offset,
)
from zurau.replication.share.share_session import ShareSessionCache

log = logging.getLogger("zurau.share")

__all__ = [
    "FetchedSharePartition",
    "ShareConfig",
    "SharePartitionManager",
    "ShareStatePersister",
]

UNINITIALIZED = -1  # the start offset of state no leader has read yet
READ_COMMITTED = 1

Key = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)
Item = dict[str, Any]


class ShareStatePersister(Protocol):
    """The share coordinator as a leader needs it (Kafka's ``Persister``): see
    :class:`~zurau.coordinator.share.state_initializer.ShareStateChannel`."""

    async def read_state(
        self, group_id: str, items: Mapping[tuple[uuid.UUID, int], Item]
    ) -> dict[tuple[uuid.UUID, int], Item]: ...

    async def write_state(
        self, group_id: str, items: Mapping[tuple[uuid.UUID, int], Item]
    ) -> dict[tuple[uuid.UUID, int], Item]: ...


class LeaderLog(Protocol):
    """What the manager reads of a partition this broker leads (the replica manager's
    :class:`~zurau.replication.partition.Partition`)."""

    leader_epoch: int
    log: Any


@dataclass(frozen=True)
class ShareConfig:
    """The broker's share-group settings (``group.share.*``) and a group's overrides."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    max_share_sessions: int = 2000


@dataclass
class FetchedSharePartition:
    """One partition's part of a ShareFetch answer."""

    error: KafkaError | None = None
    records: bytes | None = None
    acquired: list[AcquiredRecords] = field(default_factory=list)


@dataclass
class _Holder:
    """One loaded share-partition and its bookkeeping."""

    key: Key
    topic: str
    leader_epoch: int
    state_epoch: int
    sp: SharePartition
    version: int = 0  # changes made
    persisted: int = 0  # changes durable
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    timer: TimerHandle | None = None
    timer_at: int | None = None
    dropped: bool = False
    # Offsets finished unsuccessfully whose dead letters are not written (or given up on) yet: a
    # state write waits for them, so that it never makes such an archival durable first.
    unlettered: set[int] = field(default_factory=set)
    letter_waiters: list[asyncio.Future[None]] = field(default_factory=list)


# Share-coordinator errors that pass: the coordinator is moving or loading after a failover.
TRANSIENT = frozenset(
    {NotCoordinatorError.code, CoordinatorLoadInProgressError.code, CoordinatorNotAvailableError.code}
)


class NotReady(Exception):
    """The share coordinator has no state for the share-partition yet."""


class StateUnavailable(NotReady):
    """The share coordinator of the share-partition is moving or loading (after a failover) and
    did not answer within the persister's retries. A ShareFetch answers the partition with no
    records and no error, as for a share-partition not ready yet, so that consumers keep polling
    (librdkafka raises any other partition error to the application); an acknowledgement gets
    ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class SharePartitionManager:
    """Share-partitions of the partitions this broker leads (see the module docstring).

    ``leader(topic, partition)`` gives the led partition or raises (UNKNOWN_TOPIC_OR_PARTITION,
    NOT_LEADER_OR_FOLLOWER); ``topic_name(topic_id)`` the topic's name or None;
    ``group_config(group_id, name)`` a group's value of a group config (``share.auto.offset.reset``,
    ``share.record.lock.duration.ms``, ``share.isolation.level``) or None for the default;
    ``purgatory``: the broker's fetch purgatory, where ShareFetch waits for data and where
    released records wake it.
    """

    def __init__(
        self,
        persister: ShareStatePersister,
        clock: Clock,
        leader: Callable[[str, int], LeaderLog],
        topic_name: Callable[[uuid.UUID], str | None],
        config: ShareConfig | None = None,
        group_config: Callable[[str, str], Any] = lambda group_id, name: None,
        purgatory: FetchPurgatory | None = None,
        dead_letters: DeadLetterSink | None = None,
        dead_letter_prefix: str = DEFAULT_TOPIC_PREFIX,
    ) -> None:
        self.persister = persister
        self.clock = clock
        self.leader = leader
        self.topic_name = topic_name
        self.config = config or ShareConfig()
        self.group_config = group_config
        self.purgatory = purgatory
        self.dead_letters = dead_letters
        self.dead_letter_prefix = dead_letter_prefix
        self._bad_dlq_names: set[str] = set()
        self.sessions = ShareSessionCache(self.config.max_share_sessions)
        self._holders: dict[Key, _Holder] = {}
        self._loading: dict[Key, asyncio.Future[_Holder]] = {}
        self._by_partition: dict[tuple[str, int], set[Key]] = {}
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        # Counters for metrics, by (group id, event): acquired, accepted, released, rejected,
        # archived (at the delivery limit), dead_lettered, dead_letter_failed.
        self.counts: Counter[tuple[str, str]] = Counter()

    def wake(self, topic: str, partition: int) -> None:
        """Records became available on ``topic-partition``: wake fetches waiting there."""
        if self.purgatory is not None:
            self.purgatory.notify(topic, partition)

    # ------------------------------------------------------------------ group config

    def lock_duration_ms(self, group_id: str) -> int:
        v = self.group_config(group_id, "share.record.lock.duration.ms")
        return int(v) if v is not None else self.config.record_lock_duration_ms

    def release_delay_ms(self, group_id: str) -> int:
        v = self.group_config(group_id, "share.redelivery.delay.ms")
        return int(v) if v else 0

    def _reset(self, group_id: str) -> str:
        return str(self.group_config(group_id, "share.auto.offset.reset") or "latest")

    def _read_committed(self, group_id: str) -> bool:
        return self.group_config(group_id, "share.isolation.level") == "read_committed"

    def _initial_offset(self, group_id: str, plog: Any) -> int:
        """Where a share-partition with no state starts, by ``share.auto.offset.reset``:
        ``latest`` the high watermark, ``earliest`` the log start offset, ``by_duration:<ISO-8601>``
        the first record at or after now minus the duration (the high watermark if none)."""
        reset = self._reset(group_id)
        if reset.startswith("by_duration:"):
            duration_ms = parse_share_auto_offset_reset(reset).duration_ms or 0
            found = plog.offset_for_timestamp(self.clock.now_ms() - duration_ms)
            return plog.high_watermark if found is None else min(found[0], plog.high_watermark)
        return initial_start_offset(reset, plog.log_start_offset, plog.high_watermark)

    # ------------------------------------------------------------------ queries

    def in_flight(self) -> int:
        """Records in the windows of every loaded share-partition that are ACQUIRED now."""
        return sum(h.sp.acquired_count() for h in self._holders.values())

    def loaded(self) -> list[Key]:
        return list(self._holders)

    def share_partitions(self) -> list[tuple[str, str, int, SharePartition]]:
        """``(group id, topic, partition, state)`` of every loaded share-partition."""
        return [(h.key[0], h.topic, h.key[2], h.sp) for h in self._holders.values()]

    # ------------------------------------------------------------------ loading

    async def _holder(self, key: Key) -> _Holder:
        """The loaded share-partition of ``key``, loading it first if needed. Raises the
        partition's error (not leader, unknown topic, coordinator errors) or NotReady."""
        group_id, topic_id, index = key
        topic = self.topic_name(topic_id)
        if topic is None:
            raise UnknownTopicIdError(f"unknown topic id {topic_id}")
        p = self.leader(topic, index)
        h = self._holders.get(key)
        if h is not None:
            if h.leader_epoch == p.leader_epoch:
                return h
            self._drop(h)
        fut = self._loading.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._loading[key] = fut
            try:
                h = await self._load(key, topic, p)
            except BaseException as e:
                del self._loading[key]
                fut.set_exception(e)
                fut.exception()  # retrieved: concurrent waiters re-raise it themselves
                raise
            del self._loading[key]
            fut.set_result(h)
            return h
        return await asyncio.shield(fut)

    async def _load(self, key: Key, topic: str, p: LeaderLog) -> _Holder:
        group_id, topic_id, index = key
        leader_epoch = p.leader_epoch
        got = await self.persister.read_state(
            group_id, {(topic_id, index): {"partition": index, "leader_epoch": leader_epoch}}
        )
        r = got[(topic_id, index)]
        code = r.get("error_code", 0)
        if code == InvalidRequestError.code:
            raise NotReady(r.get("error_message") or "share state not initialized")
        if code == FencedLeaderEpochError.code:
            raise NotLeaderOrFollowerError(f"a newer leader epoch than {leader_epoch} holds {topic}-{index}")
        if code in TRANSIENT:
            raise StateUnavailable(code, r.get("error_message") or "the share coordinator is not available")
        if code:
            raise for_code(code)(r.get("error_message") or "cannot read the share-partition state")
        cfg = self.config
        kwargs = {
            "record_lock_duration_ms": self.lock_duration_ms(group_id),
            "delivery_count_limit": cfg.delivery_count_limit,
            "max_record_locks": cfg.max_record_locks,
            "release_delay_ms": self.release_delay_ms(group_id),
        }
        plog = p.log
        start = r["start_offset"]
        initialized_now = start == UNINITIALIZED
        if initialized_now:
            sp = SharePartition(self.clock, self._initial_offset(group_id, plog), **kwargs)
        else:
            batches = [
                StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                for b in r.get("state_batches", [])
            ]
            sp = SharePartition.from_state(self.clock, max(start, 0), batches, **kwargs)
        sp.update_log_start_offset(plog.log_start_offset)
        h = _Holder(key, topic, leader_epoch, r.get("state_epoch", 0), sp)
        if self._closed:
            raise CoordinatorNotAvailableError("the broker is stopping")
        current = self.leader(topic, index)  # the lead may have moved while reading
        if current.leader_epoch != leader_epoch:
            raise NotLeaderOrFollowerError(f"the leader epoch of {topic}-{index} changed while loading")
        self._holders[key] = h
        self._by_partition.setdefault((topic, index), set()).add(key)
        failed = self._failures(h)  # records delivered up to the limit before a failover
        if failed:
            await self._dead_letter(h, failed)
        if initialized_now or failed:
            h.version += 1
            await self._persist(h)
        return h

    def _drop(self, h: _Holder) -> None:
        h.dropped = True
        if h.timer is not None:
            h.timer.cancel()
            h.timer = None
        if self._holders.get(h.key) is h:
            del self._holders[h.key]
            keys = self._by_partition.get((h.topic, h.key[2]))
            if keys is not None:
                keys.discard(h.key)
                if not keys:
                    del self._by_partition[(h.topic, h.key[2])]

    def on_resigned(self, topic: str, partition: int) -> None:
        """This broker stopped leading ``topic-partition``: forget its share-partitions."""
        for key in list(self._by_partition.get((topic, partition), ())):
            h = self._holders.get(key)
            if h is not None:
                self._drop(h)

    def on_topics_deleted(self, topic_ids: Iterable[uuid.UUID]) -> None:
        gone = set(topic_ids)
        for h in [h for h in self._holders.values() if h.key[1] in gone]:
            self._drop(h)

    # ------------------------------------------------------------------ persistence

    async def _persist(self, h: _Holder) -> None:
        """Make every change made so far durable (see the module docstring). Raises the write's
        error after dropping the share-partition."""
        wanted = h.version
        async with h.write_lock:
            if h.persisted >= wanted:
                return
            # The state carries every archival made so far: their dead letters come first, also
            # those another request is still sending (this write would otherwise overtake them).
            while h.unlettered:
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                h.letter_waiters.append(waiter)
                await waiter
            if h.dropped:
                raise CoordinatorNotAvailableError(
                    "the share-partition was unloaded before its state was written"
                )
            target = h.version
            start, batches = h.sp.to_state()
            group_id, topic_id, index = h.key
            item = {
                "partition": index,
                "state_epoch": h.state_epoch,
                "leader_epoch": h.leader_epoch,
                "start_offset": start,
                "delivery_complete_count": h.sp.delivery_complete_count(),
                "state_batches": [
                    {
                        "first_offset": b.first_offset,
                        "last_offset": b.last_offset,
                        "delivery_state": b.delivery_state,
                        "delivery_count": b.delivery_count,
                    }
                    for b in batches
                ],
            }
            try:
                got = await self.persister.write_state(group_id, {(topic_id, index): item})
                code = got[(topic_id, index)].get("error_code", 0)
                message = got[(topic_id, index)].get("error_message")
            except KafkaError as e:
                code, message = e.code, str(e)
            except Exception as e:  # never leave a waiter without an answer
                log.exception("share-state write of %s failed", h.key)
                code, message = UnknownServerError.code, str(e)
            if code:
                log.info(
                    "share-state write of %s failed with error %d (%s): reloading it", h.key, code, message
                )
                self._drop(h)
                if code in (FencedStateEpochError.code, FencedLeaderEpochError.code):
                    raise NotLeaderOrFollowerError(message or "fenced")
                raise for_code(code)(message or "cannot write the share-partition state")
            h.persisted = max(h.persisted, target)

    def _changed(self, h: _Holder) -> None:
        h.version += 1
        self._arm(h)

    def _arm(self, h: _Holder) -> None:
        """Keep the lock-expiry timer at the earliest lock deadline."""
        dues = [d for d in (h.sp.next_lock_deadline(), h.sp.next_release_due()) if d is not None]
        deadline = min(dues) if dues else None
        if deadline == h.timer_at:
            return
        if h.timer is not None:
            h.timer.cancel()
            h.timer = None
        h.timer_at = deadline
        if deadline is not None and not h.dropped:
            h.timer = self.clock.call_later(max(deadline - self.clock.now_ms(), 0), lambda: self._expire(h))

    def _expire(self, h: _Holder) -> None:
        h.timer = None
        h.timer_at = None
        if h.dropped:
            return
        n = h.sp.expire_locks()
        due = h.sp.next_release_due()
        if n:
            self.counts[(h.key[0], "released")] += n
            self._changed(h)
            self._spawn(self._finish_quietly(h, self._failures(h)))
        else:
            self._arm(h)
        if n or due is None or due > self.clock.now_ms():
            self.wake(h.topic, h.key[2])  # released records, or a redelivery delay that passed

    def _failures(self, h: _Holder) -> list[tuple[int, int, str]]:
        """The records ``h`` finished unsuccessfully since the last call; the caller passes them
        to :meth:`_dead_letter` (state writes wait until it did)."""
        failed = h.sp.drain_failed()
        h.unlettered.update(offset for offset, _count, _reason in failed)
        for _offset, _count, reason in failed:
            self.counts[(h.key[0], "rejected" if reason == "REJECTED" else "archived")] += 1
        return failed

    async def _finish_quietly(self, h: _Holder, failed: list[tuple[int, int, str]]) -> None:
        """Dead-letter ``failed`` (when the group has a DLQ topic), then write the state."""
        await self._dead_letter(h, failed)
        await self._persist_quietly(h)

    async def _dead_letter(self, h: _Holder, failed: list[tuple[int, int, str]]) -> None:
        """Dead-letter ``failed`` (:meth:`_send_dead_letters`), then let the state writes that
        wait for them go on."""
        try:
            await self._send_dead_letters(h, failed)
        finally:
            h.unlettered.difference_update(offset for offset, _count, _reason in failed)
            if not h.unlettered:
                for waiter in h.letter_waiters:
                    if not waiter.done():
                        waiter.set_result(None)
                h.letter_waiters.clear()

    async def _send_dead_letters(self, h: _Holder, failed: list[tuple[int, int, str]]) -> None:
        """Write the dead letters of ``failed`` records of ``h`` (see
        :mod:`zurau.replication.share.dead_letters`); failures are logged and counted, never
        raised (the records stay archived: a dead-letter topic is best effort after retries)."""
        group_id = h.key[0]
        if not failed or self.dead_letters is None:
            return
        topic = str(self.group_config(group_id, "errors.deadletterqueue.topic.name") or "")
        if not topic:
            return
        if not topic.startswith(self.dead_letter_prefix):
            if topic not in self._bad_dlq_names:
                self._bad_dlq_names.add(topic)
                log.warning(
                    "share group %r: dead-letter topic %r does not start with %r: no dead letters written",
                    group_id,
                    topic,
                    self.dead_letter_prefix,
                )
            return
        copy_flag = self.group_config(group_id, "errors.deadletterqueue.copy.record.enable")
        copy = copy_flag is True or str(copy_flag).lower() == "true"
        originals = self._records_at(h, [o for o, _c, _r in failed]) if copy else {}
        letters = []
        for offset, count, reason in failed:
            rec = originals.get(offset)
            letters.append(
                DeadLetter(
                    group_id,
                    h.topic,
                    h.key[2],
                    offset,
                    count,
                    reason,
                    key=None if rec is None else rec.key,
                    value=None if rec is None else rec.value,
                    headers=() if rec is None else tuple(rec.headers),
                    timestamp_ms=None if rec is None else rec.timestamp,
                )
            )
        for attempt in range(5):
            try:
                await self.dead_letters.send(topic, letters)
                self.counts[(group_id, "dead_lettered")] += len(letters)
                return
            except Exception as e:  # noqa: BLE001 - retried, then logged
                if attempt == 4:
                    log.error(
                        "share group %r: %d dead letters not written to %r: %s",
                        group_id,
                        len(letters),
                        topic,
                        e,
                    )
                    self.counts[(group_id, "dead_letter_failed")] += len(letters)
                    return
                await asyncio.sleep(0.2 * 2**attempt)

    def _records_at(self, h: _Holder, offsets: list[int]) -> dict[int, Any]:
        """The records of the log at ``offsets`` (those still there), decoded."""
        want = set(offsets)
        lo, hi = min(want), max(want)  # (want empties as records are found)
        out: dict[int, Any] = {}
        try:
            plog = self.leader(h.topic, h.key[2]).log
            pos_offset = lo
            while want and pos_offset <= hi:
                data = plog.read_slice(
                    pos_offset, 1 << 20, max_offset=plog.high_watermark, min_one_batch=True
                )
                if data is None or data.size == 0:
                    break
                buf = os.pread(data.fd, data.size, data.position)
                last = pos_offset
                for pos, hdr in iter_batches(buf):
                    last = hdr.base_offset + hdr.last_offset_delta
                    if hdr.is_control or last < lo or hdr.base_offset > hi:
                        continue
                    for r in decode_batch_records(buf[pos : pos + hdr.size]):
                        if r.offset in want:
                            out[r.offset] = r
                            want.discard(r.offset)
                if last < pos_offset:
                    break
                pos_offset = last + 1
        except KafkaError as e:
            log.info("share group %r: records of %s not read for dead letters: %s", h.key[0], h.topic, e)
        return out

    async def _persist_quietly(self, h: _Holder) -> None:
        try:
            await self._persist(h)
        except KafkaError as e:
            log.info("share-state of %s not written after a lock change: %s", h.key, e)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ operations

    async def acknowledge(
        self, group_id: str, member_id: str, key_batches: Mapping[tuple[uuid.UUID, int], Sequence[Any]]
    ) -> dict[tuple[uuid.UUID, int], AcknowledgeResult]:
        """Apply a member's acknowledgements (``(topic id, partition)`` -> batches of
        ``(first_offset, last_offset, ack_types)``) and make them durable; one result per
        partition, answered once written."""
        out: dict[tuple[uuid.UUID, int], AcknowledgeResult] = {}

        async def one(tp: tuple[uuid.UUID, int], batches: Sequence[Any]) -> None:
            try:
                h = await self._holder((group_id, tp[0], tp[1]))
            except StateUnavailable as e:
                out[tp] = AcknowledgeResult(e.code, str(e))
                return
            except NotReady:
                out[tp] = AcknowledgeResult(
                    InvalidRecordStateError.code, "the share-partition holds no acquired records yet"
                )
                return
            except KafkaError as e:
                out[tp] = AcknowledgeResult(e.code, str(e) or None)
                return
            result = h.sp.acknowledge(member_id, batches)
            if result.ok:
                self._count(group_id, batches)
                self._changed(h)
                await self._dead_letter(h, self._failures(h))
                try:
                    await self._persist(h)
                except KafkaError as e:
                    result = AcknowledgeResult(e.code, str(e) or None)
            out[tp] = result

        await asyncio.gather(*(one(tp, b) for tp, b in key_batches.items()))
        return out

    def _count(self, group_id: str, batches: Sequence[Any]) -> None:
        """Count accepted and released records (rejections are counted as failures)."""
        accepted = released = 0
        for first, last, types in batches:
            if len(types) == 1:  # one type for the whole range (what clients send)
                n = last - first + 1
                accepted += n if types[0] == AcknowledgeType.ACCEPT else 0
                released += n if types[0] == AcknowledgeType.RELEASE else 0
            else:
                accepted += types.count(AcknowledgeType.ACCEPT)
                released += types.count(AcknowledgeType.RELEASE)
        if accepted:
            self.counts[(group_id, "accepted")] += accepted
        if released:
            self.counts[(group_id, "released")] += released

    async def release_member(
        self, group_id: str, member_id: str, tps: Iterable[tuple[uuid.UUID, int]]
    ) -> None:
        """The member's share session closed: release what it holds on ``tps`` and write it."""
        writes = []
        for tid, index in tps:
            h = self._holders.get((group_id, tid, index))
            if h is None:
                continue
            n = h.sp.release_member(member_id)
            if n:
                self.counts[(group_id, "released")] += n
                self._changed(h)
                writes.append(self._finish_quietly(h, self._failures(h)))
                self.wake(h.topic, index)
        if writes:
            await asyncio.gather(*writes)

    async def acquire(
        self,
        group_id: str,
        member_id: str,
        tps: Sequence[tuple[uuid.UUID, int]],
        max_records: int,
        max_bytes: int,
    ) -> dict[tuple[uuid.UUID, int], FetchedSharePartition]:
        """One pass of a ShareFetch over ``tps``: acquire up to ``max_records`` records in all
        (and about ``max_bytes`` of batches) for the member. Every partition with records or an
        error is in the answer; a partition with neither is left out."""
        out: dict[tuple[uuid.UUID, int], FetchedSharePartition] = {}
        holders: list[tuple[tuple[uuid.UUID, int], _Holder]] = []

        async def load(tp: tuple[uuid.UUID, int]) -> None:
            try:
                holders.append((tp, await self._holder((group_id, tp[0], tp[1]))))
            except NotReady:
                pass
            except KafkaError as e:
                out[tp] = FetchedSharePartition(error=e)

        await asyncio.gather(*(load(tp) for tp in tps))
        order = {tp: i for i, tp in enumerate(tps)}
        holders.sort(key=lambda x: order[x[0]])
        records_left = max_records
        bytes_left = max_bytes
        for tp, h in holders:
            if records_left <= 0 or bytes_left <= 0:
                break
            if h.dropped:
                continue
            try:
                got = self._acquire_one(h, member_id, records_left, bytes_left)
            except KafkaError as e:
                out[tp] = FetchedSharePartition(error=e)
                continue
            failed = self._failures(h)
            if failed:  # restored records beyond a lowered delivery limit
                self._spawn(self._finish_quietly(h, failed))
            if got is not None:
                out[tp] = got
                n = sum(a.last_offset - a.first_offset + 1 for a in got.acquired)
                self.counts[(group_id, "acquired")] += n
                records_left -= n
                bytes_left -= len(got.records or b"")
        return out

    def _acquire_one(
        self, h: _Holder, member_id: str, max_records: int, max_bytes: int
    ) -> FetchedSharePartition | None:
        group_id, _tid, index = h.key
        p = self.leader(h.topic, index)
        if p.leader_epoch != h.leader_epoch:
            self._drop(h)
            raise NotLeaderOrFollowerError(f"the leader epoch of {h.topic}-{index} changed")
        sp = h.sp
        sp.release_delay_ms = self.release_delay_ms(group_id)
        plog = p.log
        if plog.log_start_offset > sp.start_offset:
            sp.update_log_start_offset(plog.log_start_offset)
        if not sp.can_acquire():
            return None
        fetch_at = sp.next_fetch_offset()
        read_committed = self._read_committed(group_id)
        upto = plog.last_stable_offset if read_committed else plog.high_watermark
        if fetch_at >= upto:
            return None
        try:
            data = plog.read_slice(fetch_at, max_bytes, max_offset=upto, min_one_batch=True)
        except OffsetOutOfRangeError:
            sp.update_log_start_offset(plog.log_start_offset)
            self._changed(h)
            return None
        except OffsetMovedToTieredStorageError:
            # Share fetches do not read the remote tier (yet): they start at the local log start.
            sp.update_log_start_offset(plog.local_log_start_offset)
            self._changed(h)
            return None
        if data is None or data.size == 0:
            return None
        buf = os.pread(data.fd, data.size, data.position)
        spans: list[tuple[int, int, int, int]] = []  # base, last, position, size
        aborted: set[int] = set()
        if read_committed:
            aborted = _aborted_batches(plog, fetch_at, upto, buf)
        for pos, hdr in iter_batches(buf):
            last = hdr.base_offset + hdr.last_offset_delta
            if last < fetch_at or hdr.base_offset >= upto:
                continue
            if hdr.is_control or pos in aborted:
                continue  # their offsets are gaps: never delivered
            spans.append((hdr.base_offset, last, pos, hdr.size))
        if not spans:  # only control batches or aborted data: those offsets are gaps
            # (an AVAILABLE record there, e.g. of an aborted transaction delivered before the
            # group switched to read_committed, is archived: else every fetch would read it again)
            last_read = max(hdr.base_offset + hdr.last_offset_delta for _pos, hdr in iter_batches(buf))
            sp.skip_absent(min(last_read, upto - 1), fetch_offset=fetch_at)
            self._changed(h)
            return None
        acquired = sp.acquire(
            member_id,
            [(b, last) for b, last, _p, _s in spans],
            max_records,
            fetch_offset=fetch_at,
            lock_duration_ms=self.lock_duration_ms(group_id),
        )
        self._changed(h)
        if not acquired:
            return None
        lo, hi = acquired[0].first_offset, acquired[-1].last_offset
        parts = [buf[pos : pos + size] for base, last, pos, size in spans if last >= lo and base <= hi]
        return FetchedSharePartition(records=b"".join(parts), acquired=acquired)

    def close(self) -> None:
        self._closed = True
        for h in list(self._holders.values()):
            self._drop(h)


def _aborted_batches(plog: Any, fetch_at: int, upto: int, buf: bytes) -> set[int]:
    """Positions in ``buf`` of the batches of aborted transactions (read_committed share groups):
    a transactional batch of a producer whose aborted transaction spans its base offset."""
    aborted = plog.aborted_transactions(fetch_at, upto)
    if not aborted:
        return set()
    out: set[int] = set()
    for pos, hdr in iter_batches(buf):
        if hdr.is_control or not hdr.is_transactional:
            continue
        for a in aborted:
            if a.producer_id == hdr.producer_id and a.first_offset <= hdr.base_offset <= a.last_offset:
                out.add(pos)
                break
    return out
