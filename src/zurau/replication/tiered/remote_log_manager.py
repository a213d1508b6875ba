"""The remote log manager (Kafka's ``RemoteLogManager``, KIP-405): on each partition leader of a
remote-enabled topic it copies closed segments to the remote tier, applies total retention to the
remote segments, and deletes a deleted topic's remote data. Reads of remote offsets are
:mod:`zurau.replication.tiered.remote_log_reader`'s.

Wiring (the broker's side):

* leadership: :meth:`RemoteLogManager.on_became_leader` ``(log, leader_epoch)`` for every
  partition of a remote-enabled topic this broker now leads (again on every new leader epoch),
  :meth:`RemoteLogManager.on_stopped_leading` ``(tip)`` when it becomes a follower or stops hosting
  it; the remote log metadata must be told to read the partition's events
  (``rlmm.on_partitions_hosted``) on every replica, leader or follower.
* :meth:`RemoteLogManager.start` runs one copy and one expiration pass per led partition every
  ``remote.log.manager.task.interval.ms`` on the injected clock; :meth:`run_once` is one such tick
  (tests call it, or :meth:`copy_once` / :meth:`expire_once` for one partition).
* topic deletion: :meth:`delete_partitions` on the broker that led the partition (or on every
  replica: it is idempotent), before ``rlmm.on_partitions_stopped``; retry the partitions it
  returns at a later tick.
* fetch path: an offset in ``[log_start_offset, local_log_start_offset)`` of a remote-enabled
  topic is read with ``rlm.reader.read(log, fetch_offset, max_bytes, read_committed=...,
  min_one_message=...)`` instead of the local log (a follower asking for it gets
  OFFSET_MOVED_TO_TIERED_STORAGE instead); RemoteStorageError becomes UNKNOWN_SERVER_ERROR for
  that partition, OffsetOutOfRangeError OFFSET_OUT_OF_RANGE.
* follower bootstrap: :func:`~zurau.replication.tiered.remote_log_aux_state.build_remote_log_aux_state`.

Copy task, per led partition, per tick, only when ``rlmm.ready(tip)``, ``remote.storage.enable``
and not ``remote.log.copy.disable``: the highest offset already remote for the leader's epoch
lineage is found from the metadata (:func:`~zurau.replication.tiered.remote_lineage.highest_remote_offset`)
and handed to the log (``update_highest_offset_in_remote``); then each closed segment wholly below
the last stable offset and ending above it is copied, in offset order:

1. a new :class:`RemoteLogSegmentId` (a new one for every attempt) is published in state
   COPY_SEGMENT_STARTED with the segment's offsets, size, max timestamp and its leader epochs (the
   cache's entries clipped to the segment);
2. ``rsm.copy_log_segment_data`` runs in the copier pool
   (``remote.log.manager.copier.thread.pool.size`` threads);
3. if this broker still leads the partition in the same leader epoch, COPY_SEGMENT_FINISHED is
   published and the log learns the new highest remote offset. Otherwise nothing more is
   published: the upload stays COPY_SEGMENT_STARTED and the next leader's expiration deletes it;
   this broker deletes the upload's objects too, since that expiration may have run while the
   plugin was still writing them (:meth:`RemoteLogManager.close` does the same for the uploads
   of the tasks it cancels, once their threads are done). Likewise when the COPY_SEGMENT_FINISHED
   publication is refused (another broker, e.g. a leader that has not yet learnt it lost its
   leadership, moved the upload on to deletion meanwhile): the objects are deleted and the segment
   is copied again at a later tick under a new id.

A failed copy is cleaned up at once, best effort (DELETE_SEGMENT_STARTED, ``rsm.delete``,
DELETE_SEGMENT_FINISHED), and the segment is tried again at the next tick under a new id; a
clean-up that fails leaves a COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED segment that the
expiration task deletes later. Nothing is published COPY_SEGMENT_FINISHED that the plugin did not
report fully stored.

Copy quota (KIP-956, Kafka's ``RLMQuotaManager`` for copies): before each segment copy the task
waits while the broker-wide ``copy_quota``
(``remote.log.manager.copy.max.bytes.per.second`` over ``remote.log.manager.copy.quota.window.num``
windows of ``.window.size.seconds``) is exceeded, sleeping its throttle time (at most one
window, then checking again: a raised dynamic rate applies within a window) on the injected
clock, and checking its leadership after each wait; then the whole segment's size is recorded
before the copy starts (as Kafka does; no await between the check and the record, so two
partitions' tasks never both pass on the same room). A segment larger than what the windows
allow is still copied when the quota has room: the rate is held over the window span, not per
byte. The waits are counted in ``stats.copy_throttles`` / ``copy_throttle_time_ms``.

Fetch quota (Kafka's ``RLMQuotaManager`` for fetches): :meth:`RemoteLogManager.fetch_throttle_time_ms`
is asked by the fetch path before it starts a remote read (0: go on; else the fetch answers that
partition without records, Kafka's ``isRemoteFetchQuotaExceeded``, counted in
``stats.fetch_throttles`` / ``fetch_throttle_time_ms``); the bytes each remote read returns to a
fetch are recorded with :meth:`RemoteLogManager.record_remote_fetch`.

Expiration task, per led partition, per tick, only when ``rlmm.ready(tip)``: see
:mod:`~zurau.replication.tiered.remote_retention` for what is deleted. The log start offset moves
past expired segments *before* their deletion is published, so no reader is ever sent to a
segment being deleted; each deletion is DELETE_SEGMENT_STARTED, ``rsm.delete`` (expiration pool,
``remote.log.manager.expiration.thread.pool.size`` threads), DELETE_SEGMENT_FINISHED, and stops
(to go on at the next tick) when leadership is lost or a call fails.

Invariants: only the leader of the current epoch publishes COPY_SEGMENT_STARTED/FINISHED; an
upload id is never reused; a segment this broker is still uploading is never deleted by its own
expiration task (``_copying``, from its COPY_SEGMENT_STARTED until its COPY_SEGMENT_FINISHED is
published); every publication is awaited before the next step (the metadata is
the journal that makes each task resumable after a crash).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from zurau.clock import Clock, SystemClock
from zurau.config.remote_log_views import RemoteLogManagerConfig
from zurau.replication.byte_rate_quota import UNLIMITED_RATE, ByteRateQuota
from zurau.replication.tiered.remote_lineage import cache_ranges, clip_epochs, highest_remote_offset
from zurau.replication.tiered.remote_log_reader import RemoteLogReader
from zurau.replication.tiered.remote_log_stats import RemoteLogStats
from zurau.replication.tiered.remote_retention import plan_remote_retention
from zurau.replication.tiered.tiered_log import ClosedSegment, TieredLog
from zurau.storage.remote.remote_index_cache import RemoteIndexCache
from zurau.storage.remote.remote_log_metadata_manager import RemoteLogMetadataManager
from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.storage.remote.remote_storage_manager import RemoteStorageError, RemoteStorageManager
from zurau.types import TopicIdPartition

log = logging.getLogger("zurau.replication.tiered.remote_log_manager")

_S = RemoteLogSegmentState


@dataclass(slots=True)
class _Leadership:
    log: TieredLog
    leader_epoch: int
    copy_task: asyncio.Task[int] | None = None
    expire_task: asyncio.Task[int] | None = None


class LeadershipLostError(Exception):
    """The partition's leadership (or leader epoch) changed while a task ran."""


@dataclass(frozen=True, slots=True)
class _Fence:
    """The leadership a task started under; :meth:`RemoteLogManager._check` compares it."""

    tip: TopicIdPartition
    leader_epoch: int


class RemoteLogManager:
    """One broker's remote log manager (see the module docstring)."""

    def __init__(
        self,
        *,
        broker_id: int,
        rsm: RemoteStorageManager,
        rlmm: RemoteLogMetadataManager,
        config: RemoteLogManagerConfig | None = None,
        clock: Clock | None = None,
        stats: RemoteLogStats | None = None,
        index_cache: RemoteIndexCache | None = None,
        copy_quota: ByteRateQuota | None = None,
        fetch_quota: ByteRateQuota | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.rsm = rsm
        self.rlmm = rlmm
        self.config = config or RemoteLogManagerConfig.defaults()
        self.clock: Clock = clock or SystemClock()
        self.stats = stats if stats is not None else RemoteLogStats()
        #: KIP-956's broker-wide quotas (default: unlimited), see the module docstring.
        self.copy_quota = copy_quota or ByteRateQuota(self.clock, lambda: UNLIMITED_RATE)
        self.fetch_quota = fetch_quota or ByteRateQuota(self.clock, lambda: UNLIMITED_RATE)
        #: The readers' cache of remote indexes (``index_cache``: one the broker shares, e.g. with
        #: its metrics; else one of ``index_cache_bytes`` over ``rsm``). Deleting a segment
        #: invalidates its entries.
        self.index_cache = (
            index_cache if index_cache is not None else RemoteIndexCache(rsm, self.config.index_file_cache_total_size_bytes)
        )
        self.reader = RemoteLogReader(
            rsm, rlmm, threads=self.config.reader_threads, index_cache=self.index_cache, stats=self.stats
        )
        self._copier = ThreadPoolExecutor(max(1, self.config.copier_threads), thread_name_prefix="rlm-copier")
        self._expirer = ThreadPoolExecutor(
            max(1, self.config.expiration_threads), thread_name_prefix="rlm-expiration"
        )
        self._leaders: dict[TopicIdPartition, _Leadership] = {}
        #: Upload ids whose copy call is running on this broker (never deleted as leftovers).
        self._copying: set[uuid.UUID] = set()
        #: Uploads published COPY_SEGMENT_STARTED whose plugin call may be running or has returned,
        #: and whose COPY_SEGMENT_FINISHED was never attempted: :meth:`close` deletes their objects
        #: once the copier threads are done (a cancelled task cannot stop its thread).
        self._unfinished: dict[uuid.UUID, RemoteLogSegmentMetadata] = {}
        self._runner: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[int]] = set()
        self._closed = False

    # ------------------------------------------------------------------ leadership
    def on_became_leader(self, log: TieredLog, leader_epoch: int) -> None:
        """This broker leads ``log``'s partition in ``leader_epoch`` (a new epoch replaces the
        old one: tasks of the old epoch publish nothing more, and the periodic runner starts the
        next task of the partition only when the old one has returned)."""
        tip = log.topic_id_partition
        old = self._leaders.get(tip)
        st = _Leadership(log, leader_epoch)
        if old is not None:
            st.copy_task, st.expire_task = old.copy_task, old.expire_task
        self._leaders[tip] = st

    def on_stopped_leading(self, tip: TopicIdPartition) -> None:
        """This broker no longer leads ``tip`` (a follower now, or the replica is gone). Running
        tasks are not cancelled (an upload thread cannot be stopped): they notice and stop
        before their next publication."""
        self._leaders.pop(tip, None)
        self.stats.partitions.pop(tip, None)

    def leads(self, tip: TopicIdPartition) -> bool:
        return tip in self._leaders

    def _check(self, fence: _Fence) -> None:
        st = self._leaders.get(fence.tip)
        if self._closed or st is None or st.leader_epoch != fence.leader_epoch:
            raise LeadershipLostError(f"{fence.tip}: no longer the leader in epoch {fence.leader_epoch}")

    # ------------------------------------------------------------------ the periodic tasks
    def start(self) -> None:
        """Run :meth:`run_once` every ``task_interval_ms`` until :meth:`close`."""
        if self._runner is None:
            self._runner = asyncio.get_running_loop().create_task(self._run(), name="remote-log-manager")

    async def _run(self) -> None:
        while not self._closed:
            await self._sleep(self.config.task_interval_ms)
            if self._closed:
                return
            for tip, st in list(self._leaders.items()):
                # A partition's copy and expiration never overlap: an expiration that ran during
                # a copy would take the upload between its copy and its COPY_SEGMENT_FINISHED
                # for a leftover and delete a segment the local log then deletes too.
                if (st.copy_task is None or st.copy_task.done()) and (
                    st.expire_task is None or st.expire_task.done()
                ):
                    task = self._spawn(self._copy_then_expire(tip), f"rlm-{tip.topic}-{tip.partition}")
                    st.copy_task = st.expire_task = task

    async def _copy_then_expire(self, tip: TopicIdPartition) -> int:
        copied = await self._guarded(self.copy_once(tip))
        return copied + await self._guarded(self.expire_once(tip))

    def _spawn(self, work: Coroutine[None, None, int], name: str) -> asyncio.Task[int]:
        task = asyncio.get_running_loop().create_task(self._guarded(work), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guarded(self, work: Awaitable[int]) -> int:
        try:
            return await work
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("remote log manager task failed")
            return 0

    async def _sleep(self, ms: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        timer = self.clock.call_later(ms, wake)
        try:
            await fut
        finally:
            timer.cancel()

    async def run_once(self) -> None:
        """One tick: a copy then an expiration pass of every led partition, one after the other."""
        for tip in list(self._leaders):
            await self._guarded(self.copy_once(tip))
            await self._guarded(self.expire_once(tip))

    async def close(self) -> None:
        self._closed = True
        tasks: list[asyncio.Task[int] | asyncio.Task[None]] = list(self._tasks)
        if self._runner is not None:
            tasks.append(self._runner)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Uploads of cancelled tasks go on in their threads: wait for them, then delete what they
        # wrote (they are COPY_SEGMENT_STARTED; a later leader's expiration ends their metadata),
        # so that no object is written after another broker deleted the upload as a leftover.
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: self._copier.shutdown(wait=True, cancel_futures=True))
        for started in list(self._unfinished.values()):
            try:
                await loop.run_in_executor(self._expirer, self.rsm.delete_log_segment_data, started)
            except Exception as e:
                log.warning(
                    "%s: deleting unfinished upload %s failed: %r",
                    started.topic_id_partition,
                    started.segment_id,
                    e,
                )
        self._unfinished.clear()
        self._expirer.shutdown(wait=False, cancel_futures=True)
        self.reader.close()

    # ------------------------------------------------------------------ copy
    def copy_candidates(self, tiered: TieredLog, copy_from: int) -> list[ClosedSegment]:
        """Closed segments ending at or after ``copy_from`` and wholly below the LSO, in order."""
        lso = tiered.last_stable_offset
        return [s for s in tiered.closed_segments() if s.end_offset >= copy_from and s.end_offset < lso]

    async def copy_once(self, tip: TopicIdPartition) -> int:
        """Copy every eligible segment of ``tip`` (see the module docstring); the number copied.
        Stops at the first failure (the rest waits for the next tick)."""
        st = self._leaders.get(tip)
        if st is None or self._closed:
            return 0
        tiered, fence = st.log, _Fence(tip, st.leader_epoch)
        cfg = tiered.config
        if not cfg.remote_storage_enable or cfg.remote_log_copy_disable or not self.rlmm.ready(tip):
            return 0
        lineage = cache_ranges(tiered.leader_epoch_cache.entries, tiered.log_end_offset)
        highest = highest_remote_offset(self.rlmm.list_segments(tip), lineage)
        tiered.update_highest_offset_in_remote(highest)
        pstats = self.stats.partition(tip)
        pstats.highest_offset_in_remote = highest
        candidates = self.copy_candidates(tiered, highest + 1)
        pstats.copy_lag_segments = len(candidates)
        pstats.copy_lag_bytes = sum(c.size_in_bytes for c in candidates)
        copied = 0
        for seg in candidates:
            try:
                self._check(fence)
                await self._await_copy_quota(fence)
                self.copy_quota.record(seg.size_in_bytes)
                await self._copy_segment(tiered, seg, fence)
            except LeadershipLostError:
                log.info("%s: leadership changed during a copy; stopping", tip)
                return copied
            except (RemoteStorageError, OSError, KeyError, ValueError) as e:
                log.warning("%s: copy of segment %d failed, retrying later: %r", tip, seg.base_offset, e)
                return copied
            copied += 1
            pstats.copy_lag_segments -= 1
            pstats.copy_lag_bytes -= seg.size_in_bytes
        return copied

    async def _await_copy_quota(self, fence: _Fence) -> None:
        """Wait while the copy quota is exceeded (see the module docstring); LeadershipLostError
        when the leadership changed meanwhile."""
        quota = self.copy_quota
        throttle = quota.throttle_time_ms()
        if throttle <= 0:
            return
        self.stats.copy_throttles += 1
        started = self.clock.now_ms()
        log.debug("%s: remote copy quota exceeded; waiting %d ms", fence.tip, throttle)
        try:
            while throttle > 0:
                await self._sleep(min(throttle, quota.window_ms))
                self._check(fence)
                throttle = quota.throttle_time_ms()
        finally:
            self.stats.copy_throttle_time_ms += max(self.clock.now_ms() - started, 0)

    # ------------------------------------------------------------------ fetch quota
    def fetch_throttle_time_ms(self) -> int:
        """0 when a fetch may read from the remote tier now; else the fetch quota's throttle time
        (the fetch answers without the remote records; counted in the stats)."""
        throttle = self.fetch_quota.throttle_time_ms()
        if throttle > 0:
            self.stats.fetch_throttles += 1
            self.stats.fetch_throttle_time_ms += throttle
        return throttle

    def record_remote_fetch(self, nbytes: int) -> None:
        """Bytes a remote read returned to a fetch (the fetch quota's traffic)."""
        self.fetch_quota.record(nbytes)

    async def _copy_segment(self, tiered: TieredLog, seg: ClosedSegment, fence: _Fence) -> None:
        tip = fence.tip
        epochs = clip_epochs(tiered.leader_epoch_cache.entries, seg.base_offset, seg.end_offset)
        if not epochs:
            raise ValueError(f"no leader epoch covers offset {seg.base_offset}")
        data = tiered.segment_data(seg.base_offset)
        started = RemoteLogSegmentMetadata(
            segment_id=RemoteLogSegmentId.generate(tip),
            start_offset=seg.base_offset,
            end_offset=seg.end_offset,
            max_timestamp_ms=seg.max_timestamp_ms,
            broker_id=self.broker_id,
            event_timestamp_ms=self.clock.now_ms(),
            segment_size_in_bytes=seg.size_in_bytes,
            segment_leader_epochs=epochs,
            txn_index_empty=data.transaction_index is None,
        )
        self.stats.copy_requests += 1
        # In ``_copying`` until COPY_SEGMENT_FINISHED is published: while that publication is
        # awaited the metadata still says COPY_SEGMENT_STARTED, and this broker's expiration task
        # must not take the upload for a leftover (it would delete a segment just finished).
        sid = started.segment_id.id
        self._copying.add(sid)
        try:
            await self.rlmm.add_segment(started)
            self._unfinished[sid] = started
            try:
                custom = await asyncio.get_running_loop().run_in_executor(
                    self._copier, self.rsm.copy_log_segment_data, started, data
                )
                if custom is not None and len(custom) > self.config.custom_metadata_max_bytes:
                    raise RemoteStorageError(
                        f"custom metadata of {len(custom)} bytes exceeds {self.config.custom_metadata_max_bytes}"
                    )
            except Exception:
                self.stats.copy_failures += 1
                await self._abandon(started)
                self._unfinished.pop(sid, None)
                raise
            try:
                self._check(fence)  # never publish FINISHED under a stale leader epoch
            except LeadershipLostError:
                # The next leader may have deleted this upload as a leftover while the plugin was
                # still writing it: delete what was written, whatever the metadata says now.
                await self._discard_own_upload(started)
                self._unfinished.pop(sid, None)  # kept if cancelled meanwhile: close() deletes it
                raise
            del self._unfinished[sid]  # from here on the objects may be data: never deleted here
            finished = started.with_state(
                _S.COPY_SEGMENT_FINISHED,
                event_timestamp_ms=self.clock.now_ms(),
                broker_id=self.broker_id,
                custom_metadata=custom,
            )
            try:
                await self.rlmm.update_segment(finished)
            except Exception as e:
                if self._finished_refused(started, e):
                    await self._discard_own_upload(started)
                raise
        finally:
            # Only now: until FINISHED is applied the upload must not look like a leftover.
            self._copying.discard(sid)
        tiered.update_highest_offset_in_remote(seg.end_offset)
        log.info(
            "%s: copied segment %d-%d (%d bytes) to remote storage as %s",
            tip, seg.base_offset, seg.end_offset, seg.size_in_bytes, started.segment_id.id,
        )
        self.stats.segments_copied += 1
        self.stats.bytes_copied += seg.size_in_bytes
        self.stats.partition(tip).highest_offset_in_remote = seg.end_offset

    def _finished_refused(self, started: RemoteLogSegmentMetadata, error: Exception) -> bool:
        """Whether a failed COPY_SEGMENT_FINISHED publication of ``started`` can never take effect:
        the metadata refused it (ValueError: nothing was written) or every reader drops it (another
        broker, a stale leader, moved the upload on to deletion first). Otherwise (a timeout, say)
        it may have been applied, and the upload's objects must stay."""
        if isinstance(error, ValueError):
            return True
        sid = started.segment_id.id
        now = next(
            (s for s in self.rlmm.list_segments(started.topic_id_partition) if s.segment_id.id == sid), None
        )
        return now is not None and now.state in (_S.DELETE_SEGMENT_STARTED, _S.DELETE_SEGMENT_FINISHED)

    async def _discard_own_upload(self, started: RemoteLogSegmentMetadata) -> None:
        """Delete the objects of an upload of this broker that will never be finished, once its
        plugin call has returned: the next leader may have deleted the upload as a leftover while
        the plugin still wrote it. Nothing is published (this broker no longer leads): the
        metadata stays COPY_SEGMENT_STARTED (or whatever the next leader made it), and a leader's
        expiration ends it (deleting objects again is a no-op). Best effort. Never for an upload
        whose COPY_SEGMENT_FINISHED may have been published."""
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._expirer, self.rsm.delete_log_segment_data, started
            )
        except Exception as e:
            log.warning(
                "%s: deleting abandoned upload %s failed: %r",
                started.topic_id_partition,
                started.segment_id,
                e,
            )

    async def _abandon(self, started: RemoteLogSegmentMetadata) -> None:
        """Best-effort clean-up of a failed upload (the expiration task retries what fails)."""
        try:
            await self._delete_segment(started)
        except Exception as e:
            log.warning(
                "%s: clean-up of failed upload %s failed: %r",
                started.topic_id_partition,
                started.segment_id,
                e,
            )

    # ------------------------------------------------------------------ deletion
    async def _delete_segment(self, seg: RemoteLogSegmentMetadata) -> bool:
        """DELETE_SEGMENT_STARTED (unless it is already), ``rsm.delete``,
        DELETE_SEGMENT_FINISHED. False when the metadata refused a transition (another broker
        moved the segment on); raises what the plugin raises."""
        try:
            if seg.state is not _S.DELETE_SEGMENT_STARTED:
                seg = seg.with_state(
                    _S.DELETE_SEGMENT_STARTED,
                    event_timestamp_ms=self.clock.now_ms(),
                    broker_id=self.broker_id,
                )
                await self.rlmm.update_segment(seg)
        except ValueError as e:
            log.info("%s: not deleting %s: %s", seg.topic_id_partition, seg.segment_id, e)
            return False
        self.stats.delete_requests += 1
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._expirer, self.rsm.delete_log_segment_data, seg
            )
        except Exception:
            self.stats.delete_failures += 1
            raise
        finally:
            # DELETE_SEGMENT_STARTED: never read again, whether or not its objects are gone yet.
            self.index_cache.invalidate(seg.segment_id.id)
        try:
            await self.rlmm.update_segment(
                seg.with_state(
                    _S.DELETE_SEGMENT_FINISHED,
                    event_timestamp_ms=self.clock.now_ms(),
                    broker_id=self.broker_id,
                )
            )
        except ValueError as e:
            log.info("%s: %s already deleted: %s", seg.topic_id_partition, seg.segment_id, e)
            return False
        log.info(
            "%s: deleted remote segment %d-%d (%s)",
            seg.topic_id_partition, seg.start_offset, seg.end_offset, seg.segment_id.id,
        )
        self.stats.segments_deleted += 1
        self.stats.bytes_deleted += seg.segment_size_in_bytes
        return True

    async def expire_once(self, tip: TopicIdPartition) -> int:
        """Delete what remote retention says of ``tip`` (see the module docstring); the number of
        segments deleted. Stops at leadership loss or the first failed call."""
        st = self._leaders.get(tip)
        if st is None or self._closed or not self.rlmm.ready(tip):
            return 0
        tiered, fence = st.log, _Fence(tip, st.leader_epoch)
        cfg = tiered.config
        plan = plan_remote_retention(
            self.rlmm.list_segments(tip),
            lineage=cache_ranges(tiered.leader_epoch_cache.entries, tiered.log_end_offset),
            log_start_offset=tiered.log_start_offset,
            only_local_size=tiered.only_local_size_in_bytes,
            retention_ms=cfg.retention_ms,
            retention_bytes=cfg.retention_bytes,
            now_ms=self.clock.now_ms(),
            copying=self._copying,
        )
        if plan.new_log_start_offset is not None:
            log.info("%s: remote retention moves the log start to %d", tip, plan.new_log_start_offset)
            tiered.advance_log_start_offset(plan.new_log_start_offset)
        deleted = 0
        leftovers = {id(s) for s in plan.leftovers}
        for seg in plan.to_delete:
            if id(seg) in leftovers and not self._still_leftover(tip, seg):
                continue  # its upload finished (or another broker moved it on) since the plan
            try:
                self._check(fence)
                if await self._delete_segment(seg):
                    deleted += 1
            except LeadershipLostError:
                break
            except (RemoteStorageError, OSError) as e:
                log.warning(
                    "%s: deleting remote segment %s failed, retrying later: %r", tip, seg.segment_id, e
                )
                break
        pstats = self.stats.partition(tip)
        finished = [s for s in self.rlmm.list_segments(tip) if s.state is _S.COPY_SEGMENT_FINISHED]
        pstats.remote_segments = len(finished)
        pstats.remote_size_bytes = sum(s.segment_size_in_bytes for s in finished)
        return deleted

    def _still_leftover(self, tip: TopicIdPartition, seg: RemoteLogSegmentMetadata) -> bool:
        """Whether ``seg`` is, as of the metadata now, still an upload no one will finish."""
        if seg.segment_id.id in self._copying:
            return False
        for now in self.rlmm.list_segments(tip):
            if now.segment_id == seg.segment_id:
                return now.state in (_S.COPY_SEGMENT_STARTED, _S.DELETE_SEGMENT_STARTED)
        return False

    # ------------------------------------------------------------------ topic deletion
    async def delete_partitions(self, tips: Iterable[TopicIdPartition]) -> list[TopicIdPartition]:
        """Delete every remote segment of deleted partitions: DELETE_PARTITION_MARKED and
        _STARTED, each segment's deletion, DELETE_PARTITION_FINISHED. Idempotent and resumable
        (running it again goes on from the metadata's state). Returns the partitions not finished
        (a plugin call failed): the caller retries them later."""
        unfinished = []
        for tip in tips:
            self.on_stopped_leading(tip)
            try:
                await self._delete_partition(tip)
            except (RemoteStorageError, OSError) as e:
                log.warning("%s: deleting remote data failed, retrying later: %r", tip, e)
                unfinished.append(tip)
        return unfinished

    async def _delete_partition(self, tip: TopicIdPartition) -> None:
        for state in (
            RemotePartitionDeleteState.DELETE_PARTITION_MARKED,
            RemotePartitionDeleteState.DELETE_PARTITION_STARTED,
        ):
            await self.rlmm.put_partition_delete(
                tip, state, broker_id=self.broker_id, event_timestamp_ms=self.clock.now_ms()
            )
        for seg in list(self.rlmm.list_segments(tip)):
            if seg.state is not _S.DELETE_SEGMENT_FINISHED:
                await self._delete_segment(seg)
        await self.rlmm.put_partition_delete(
            tip,
            RemotePartitionDeleteState.DELETE_PARTITION_FINISHED,
            broker_id=self.broker_id,
            event_timestamp_ms=self.clock.now_ms(),
        )
