"""One broker's remote tier, wired to its replicas (Kafka's ``RemoteLogManager`` as
``ReplicaManager`` drives it on leadership changes, ``stopPartitions`` and fetches).

:class:`TieredStorage` derives what the remote log manager and the remote log metadata must know
from the replica manager and the metadata image, every ``SYNC_INTERVAL_S`` and after each
metadata change (:meth:`sync`, cheap: a pass over the hosted partitions of tiered topics):

* every hosted replica of a tiered log (``remote.storage.enable`` on a broker with
  ``remote.log.storage.system.enable``) has its ``__remote_log_metadata`` partition read
  (``on_partitions_hosted``), leader or follower, so a new leader knows what is remote;
* a replica led here (in its current leader epoch) is given to the remote log manager
  (``on_became_leader``): it copies closed segments and applies remote retention; one no longer
  led here is taken back (``on_stopped_leading``);
* a follower learns the highest offset in remote storage from the metadata (local retention
  deletes only what is remote) once that metadata is read up to date (``ready``);
* a replica that is no longer hosted stops being read; if its topic was deleted and this broker
  led it, its remote data is deleted first (``delete_partitions``, retried each sync until done);
* a replica whose topic turned tiering off (KIP-950, ``remote.log.delete.on.disable=true``) starts
  at its local log start, and its leader deletes the remote data.
  Remote data of a topic deleted while its leader was down stays in the remote store (logged).

Reads: :meth:`read` serves a fetch below the local log start from the remote tier, for the
fetch path (:mod:`zurau.replication.delayed_fetch`), which asks :meth:`fetch_throttle_time_ms`
first (KIP-956's remote fetch quota; the bytes of each read are recorded in it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from zurau.protocol.errors import OffsetOutOfRangeError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.replication.tiered.partition_tiered_log import PartitionTieredLog
from zurau.replication.tiered.remote_log_manager import RemoteLogManager
from zurau.replication.tiered.remote_log_reader import RemoteFetchData
from zurau.storage.partition_log import PartitionLog
from zurau.storage.remote.remote_log_metadata_manager import RemoteLogMetadataManager
from zurau.storage.remote.remote_log_segment import RemoteLogSegmentState
from zurau.types import TopicIdPartition

log = logging.getLogger("zurau.replication.tiered")

SYNC_INTERVAL_S = 1.0


class HostedReplica(Protocol):
    """What :class:`TieredStorage` reads of a hosted partition (``replication.partition.Partition``)."""

    leader_id: int
    leader_epoch: int
    log: PartitionLog


class TieredStorage:
    """The remote log manager and metadata of one broker, kept in step with its replicas."""

    def __init__(
        self,
        node_id: int,
        hosted: Callable[[], Mapping[tuple[str, int], HostedReplica]],
        topic_id: Callable[[str], object],
        rlm: RemoteLogManager,
        rlmm: RemoteLogMetadataManager,
        *,
        fetch_max_wait_ms: int = 500,
        image_leader: Callable[[str, int], tuple[int, int] | None] = lambda _t, _p: None,
    ) -> None:
        self.node_id = node_id
        self.fetch_max_wait_ms = fetch_max_wait_ms  # remote.fetch.max.wait.ms
        self.fetch_timeouts = 0  # remote reads answered empty after remote.fetch.max.wait.ms
        self.hosted = hosted
        self.topic_id = topic_id  # the topic's id in the current image, None if it is gone
        # (leader, leader epoch) of a partition in the newest metadata image, which the replicas
        # apply a little later: a leadership the image already moved away is given up at once.
        self.image_leader = image_leader
        self.rlm = rlm
        self.rlmm = rlmm
        self._hosted: dict[TopicIdPartition, PartitionTieredLog] = {}
        self._led: dict[TopicIdPartition, int] = {}  # tip -> leader epoch handed to the rlm
        self._to_delete: set[TopicIdPartition] = set()
        self._task: asyncio.Task[None] | None = None
        self._deleting: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self.sync()
        self.rlm.start()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="tiered-storage-sync")

    async def _run(self) -> None:
        while not self._closed:
            await asyncio.sleep(SYNC_INTERVAL_S)
            try:
                self.sync()
            except Exception:  # never let one bad partition stop the remote tier
                log.exception("tiered storage: sync failed")

    def tiered_log(self, topic: str, partition: int, plog: PartitionLog) -> PartitionTieredLog | None:
        """The adapter of a hosted tiered log (None: not tiered, or its topic is unknown here)."""
        tid = self.topic_id(topic)
        if tid is not None:
            adapter = self._hosted.get(TopicIdPartition(tid, topic, partition))  # type: ignore[arg-type]
            if adapter is not None and adapter.log is plog:
                return adapter
        if tid is None or not plog.remote_log_enabled:
            return None
        return PartitionTieredLog(TopicIdPartition(tid, topic, partition), plog)  # type: ignore[arg-type]

    def sync(self) -> None:
        """Bring the remote log manager and metadata in step with the hosted replicas now."""
        if self._closed:
            return
        now: dict[TopicIdPartition, tuple[HostedReplica, PartitionTieredLog]] = {}
        replicas = self.hosted()
        for (topic, index), p in replicas.items():
            plog = p.log
            if not plog.remote_log_enabled:
                continue
            tid = self.topic_id(topic)
            if tid is None:
                continue
            tip = TopicIdPartition(tid, topic, index)  # type: ignore[arg-type]
            adapter = self._hosted.get(tip)
            if adapter is None or adapter.log is not plog:
                adapter = PartitionTieredLog(tip, plog)
            now[tip] = (p, adapter)
        new = [tip for tip in now if tip not in self._hosted]
        if new:
            self.rlmm.on_partitions_hosted(new)
        gone = [tip for tip in self._hosted if tip not in now]
        for tip, (p, adapter) in now.items():
            self._hosted[tip] = adapter
            if p.leader_id == self.node_id and self.image_leader(tip.topic, tip.partition) in (
                None,
                (self.node_id, p.leader_epoch),
            ):
                if self._led.get(tip) != p.leader_epoch or not self.rlm.leads(tip):
                    self.rlm.on_became_leader(adapter, p.leader_epoch)
                    self._led[tip] = p.leader_epoch
                continue
            if tip in self._led:
                del self._led[tip]
                self.rlm.on_stopped_leading(tip)
            if self.rlmm.ready(tip):  # a follower deletes locally only what is remote
                epochs = adapter.log.leader_epoch_cache.entries
                if epochs:
                    highest = self.rlmm.highest_offset_for_epoch(tip, epochs[-1].epoch)
                    if highest is not None and highest >= 0:
                        adapter.update_highest_offset_in_remote(min(highest, adapter.log.log_end_offset - 1))
        stopped = []
        for tip in gone:
            del self._hosted[tip]
            led = self._led.pop(tip, None) is not None
            if led:
                self.rlm.on_stopped_leading(tip)
            still = replicas.get((tip.topic, tip.partition))
            if led and self.topic_id(tip.topic) != tip.topic_id:
                self._to_delete.add(tip)  # the topic was deleted (or re-created): its remote data goes
            elif still is not None and self.topic_id(tip.topic) == tip.topic_id:
                # Tiering turned off (KIP-950: only with remote.log.delete.on.disable=true): the
                # remote data goes (its leader deletes it) and the log starts at its local start.
                if still.leader_id == self.node_id:
                    self._to_delete.add(tip)
                else:
                    stopped.append(tip)
                plog = still.log
                if plog.log_start_offset < plog.local_log_start_offset <= plog.high_watermark:
                    plog.advance_log_start_offset(plog.local_log_start_offset)
                    log.info("%s: tiering off, log start offset now %d", tip, plog.log_start_offset)
            else:
                stopped.append(tip)
        if stopped:
            self.rlmm.on_partitions_stopped(stopped)
        if self._to_delete and (self._deleting is None or self._deleting.done()):
            self._deleting = asyncio.get_running_loop().create_task(
                self._delete_remote(), name="tiered-delete"
            )

    async def _delete_remote(self) -> None:
        tips = sorted(self._to_delete, key=lambda t: (t.topic, t.partition))
        try:
            left = await self.rlm.delete_partitions(tips)
        except Exception:
            log.exception("tiered storage: deleting the remote data of %s failed; retrying", tips)
            return
        done = [t for t in tips if t not in left]
        for t in done:
            self._to_delete.discard(t)
        if done:
            log.info("tiered storage: remote data of %d deleted partition(s) removed", len(done))
            self.rlmm.on_partitions_stopped(done)

    async def read(
        self,
        topic: str,
        partition: int,
        plog: PartitionLog,
        fetch_offset: int,
        max_bytes: int,
        *,
        read_committed: bool,
        min_one_message: bool,
    ) -> RemoteFetchData:
        """Records of a tiered log below its local start, from the remote tier (see
        :meth:`RemoteLogReader.read`: OffsetOutOfRangeError, RemoteStorageError)."""
        adapter = self.tiered_log(topic, partition, plog)
        if adapter is None:
            raise OffsetOutOfRangeError(f"{topic}-{partition} is not tiered on this broker")
        data = await self.rlm.reader.read(
            adapter, fetch_offset, max_bytes, read_committed=read_committed, min_one_message=min_one_message
        )
        self.rlm.record_remote_fetch(len(data.records))
        return data

    def fetch_throttle_time_ms(self) -> int:
        """0 when a fetch may start a remote read now, else the remote fetch quota's throttle
        time (``remote.log.manager.fetch.max.bytes.per.second``): the fetch answers that
        partition without records, and the consumer fetches again."""
        return self.rlm.fetch_throttle_time_ms()

    async def offset_for_timestamp(
        self, topic: str, partition: int, plog: PartitionLog, timestamp: int
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``timestamp`` in the remote
        tier (at or above the log start), or None (Kafka's ``RemoteLogManager.findOffsetByTimestamp``):
        the remote segments of the log's lineage, oldest first, whose largest timestamp reaches
        ``timestamp`` are read batch by batch until a record does. RemoteStorageError when the
        remote tier fails."""
        adapter = self.tiered_log(topic, partition, plog)
        if adapter is None:
            return None
        reader = self.rlm.reader
        segments = sorted(
            (
                s
                for s in self.rlmm.list_segments(adapter.topic_id_partition)
                if s.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED
                and s.max_timestamp_ms >= timestamp
                and s.end_offset >= plog.log_start_offset
            ),
            key=lambda s: s.start_offset,
        )
        for seg in segments:
            offset = max(seg.start_offset, plog.log_start_offset)
            chosen = reader.segment_for(adapter, offset)
            if chosen is None or chosen.segment_id != seg.segment_id:
                continue  # not of this log's lineage (an unclean election's branch), or replaced
            while offset <= seg.end_offset:
                data = await reader.read(adapter, offset, 1 << 20, min_one_message=True)
                if not data.records:
                    break
                for pos, h in iter_batches(data.records):
                    if h.max_timestamp >= timestamp and h.last_offset >= offset:
                        batch = data.records[pos : pos + h.size]
                        for r in decode_batch_records(batch, check_crc=False):
                            if r.offset >= offset and r.timestamp >= timestamp:
                                return r.offset, r.timestamp
                    offset = h.last_offset + 1
        return None

    async def close(self) -> None:
        self._closed = True
        for task in (self._task, self._deleting):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.rlm.close()
        await self.rlmm.close()
