"""In-memory fakes of the tiered-storage interfaces for the remote log manager tests:
:class:`FakeRSM` (a RemoteStorageManager keeping objects in dicts, with failure injection and a
gate to hold a copy mid-upload), :class:`FakeRLMM` (a RemoteLogMetadataManager that checks state
transitions as the real one does) and :class:`FakeTieredLog` (a partition log of real v2 batches
in segments, with files written on demand for uploads).
"""

from __future__ import annotations

import asyncio
import io
import struct
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from zurau.protocol.records.batch import iter_batches, read_header
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.replication.tiered.tiered_log import ClosedSegment
from zurau.storage.leader_epoch_cache import EpochEntry, LeaderEpochCache, encode_leader_epoch_checkpoint
from zurau.storage.remote.remote_log_segment import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.storage.remote.remote_storage_manager import RemoteResourceNotFoundError, RemoteStorageError
from zurau.storage.txn_index import AbortedTxn, encode_entries
from zurau.types import TopicIdPartition

TIP = TopicIdPartition(uuid.UUID(int=7), "t", 0)
S = RemoteLogSegmentState


def data_batch(
    base: int, n: int = 3, *, ts: int = 1000, epoch: int = 0, pid: int = -1, txn: bool = False, size: int = 20
) -> bytes:
    """One uncompressed batch of ``n`` records at ``base`` (values of ``size`` bytes)."""
    records = [(b"k%d" % (base + i), bytes([65 + (base + i) % 26]) * size, (), ts + i) for i in range(n)]
    return build_batch(
        records,
        base_offset=base,
        partition_leader_epoch=epoch,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        is_transactional=txn,
    )


def abort_marker(offset: int, pid: int, *, epoch: int = 0) -> bytes:
    return build_control_batch(False, pid, 0, 0, offset, timestamp_ms=1000, partition_leader_epoch=epoch)


# ---------------------------------------------------------------------------------------- RSM
class FakeRSM:
    """Objects per upload id: ``"log"`` and each IndexType present."""

    def __init__(self) -> None:
        self.objects: dict[uuid.UUID, dict[object, bytes]] = {}
        self.copies: list[RemoteLogSegmentMetadata] = []
        self.deletes: list[uuid.UUID] = []
        self.fail_copies = 0  # the next N copies fail (after storing part of the objects)
        self.fail_deletes = 0
        self.gate: threading.Event | None = None  # set: copies wait for it
        self.copy_started = threading.Event()
        self.lock = threading.Lock()

    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        sid = metadata.segment_id.id
        with self.lock:
            self.copies.append(metadata)
            objs = self.objects.setdefault(sid, {})
            objs["log"] = data.log_segment.read_bytes()  # a partial upload
            fail = self.fail_copies > 0
            if fail:
                self.fail_copies -= 1
        self.copy_started.set()
        if self.gate is not None:
            self.gate.wait(10)
        if fail:
            raise RemoteStorageError("injected copy failure")
        with self.lock:  # a store keeps what is written after a delete of the upload
            objs = self.objects.setdefault(sid, {})
            objs["log"] = data.log_segment.read_bytes()
        objs[IndexType.OFFSET] = data.offset_index.read_bytes()
        objs[IndexType.TIMESTAMP] = data.time_index.read_bytes()
        if data.transaction_index is not None:
            objs[IndexType.TRANSACTION] = data.transaction_index.read_bytes()
        objs[IndexType.PRODUCER_SNAPSHOT] = data.producer_snapshot.read_bytes()
        objs[IndexType.LEADER_EPOCH] = data.leader_epoch_index
        return None

    def _obj(self, metadata: RemoteLogSegmentMetadata, key: object) -> bytes:
        objs = self.objects.get(metadata.segment_id.id)
        if objs is None or key not in objs:
            raise RemoteResourceNotFoundError(f"{metadata.segment_id} has no {key}")
        return objs[key]

    def fetch_log_segment(
        self, metadata: RemoteLogSegmentMetadata, start_position: int, end_position: int | None = None
    ) -> BinaryIO:
        data = self._obj(metadata, "log")
        end = len(data) if end_position is None else end_position + 1
        return io.BytesIO(data[start_position:end])

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        return io.BytesIO(self._obj(metadata, index_type))

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        with self.lock:
            if self.fail_deletes > 0:
                self.fail_deletes -= 1
                raise RemoteStorageError("injected delete failure")
            self.deletes.append(metadata.segment_id.id)
            self.objects.pop(metadata.segment_id.id, None)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------- RLMM
class FakeRLMM:
    """The remote log metadata of one broker's cache, applied at once."""

    def __init__(self) -> None:
        self.segments: dict[uuid.UUID, RemoteLogSegmentMetadata] = {}
        self.events: list[tuple[uuid.UUID, RemoteLogSegmentState]] = []
        self.partition_deletes: list[tuple[TopicIdPartition, RemotePartitionDeleteState]] = []
        self.not_ready: set[TopicIdPartition] = set()
        self.fail_updates = 0
        #: When set, a COPY_SEGMENT_FINISHED publication waits for it (as the topic-based manager
        #: waits for the acknowledgement and its reader) before it is applied.
        self.finish_gate: asyncio.Event | None = None
        self.finish_waiting = asyncio.Event()

    async def add_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        sid = metadata.segment_id.id
        if sid in self.segments or metadata.state is not S.COPY_SEGMENT_STARTED:
            raise ValueError(f"bad new segment {metadata}")
        self.segments[sid] = metadata
        self.events.append((sid, metadata.state))

    async def update_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        sid = metadata.segment_id.id
        old = self.segments.get(sid)
        if metadata.state is S.COPY_SEGMENT_FINISHED and self.finish_gate is not None:
            self.finish_waiting.set()
            await self.finish_gate.wait()
            old = self.segments.get(sid)
        if old is None or not old.state.may_become(metadata.state):
            raise ValueError(f"bad transition of {sid}")
        if self.fail_updates > 0:
            self.fail_updates -= 1
            raise RemoteStorageError("injected publish failure")
        self.segments[sid] = metadata
        self.events.append((sid, metadata.state))

    async def put_partition_delete(
        self,
        tip: TopicIdPartition,
        state: RemotePartitionDeleteState,
        *,
        broker_id: int,
        event_timestamp_ms: int,
    ) -> None:
        self.partition_deletes.append((tip, state))

    def _finished(self, tip: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        return [s for s in self.list_segments(tip) if s.state is S.COPY_SEGMENT_FINISHED]

    def segment_for(self, tip: TopicIdPartition, epoch: int, offset: int) -> RemoteLogSegmentMetadata | None:
        for s in self._finished(tip):
            if s.epoch_of(offset) == epoch:
                return s
        return None

    def highest_offset_for_epoch(self, tip: TopicIdPartition, epoch: int) -> int | None:
        ends = [s.end_offset for s in self._finished(tip) if s.segment_leader_epochs[0][0] <= epoch]
        return max(ends) if ends else None

    def list_segments(self, tip: TopicIdPartition) -> Sequence[RemoteLogSegmentMetadata]:
        segs = [s for s in self.segments.values() if s.topic_id_partition == tip]
        return sorted(segs, key=lambda s: (s.start_offset, s.event_timestamp_ms))

    def remote_size(self, tip: TopicIdPartition) -> int:
        return sum(s.segment_size_in_bytes for s in self._finished(tip))

    def ready(self, tip: TopicIdPartition) -> bool:
        return tip not in self.not_ready

    def on_partitions_hosted(self, tips: Iterable[TopicIdPartition]) -> None:
        pass

    def on_partitions_stopped(self, tips: Iterable[TopicIdPartition]) -> None:
        pass

    async def close(self) -> None:
        pass

    def states(self, tip: TopicIdPartition = TIP) -> list[tuple[int, int, RemoteLogSegmentState]]:
        return [(s.start_offset, s.end_offset, s.state) for s in self.list_segments(tip)]


# ---------------------------------------------------------------------------------------- log
@dataclass
class FakeConfig:
    remote_storage_enable: bool = True
    remote_log_copy_disable: bool = False
    retention_ms: int = -1
    retention_bytes: int = -1


@dataclass
class FakeSegment:
    base: int
    data: bytearray = field(default_factory=bytearray)
    next_offset: int = -1  # offset after the last batch
    max_ts: int = -1
    aborted: list[AbortedTxn] = field(default_factory=list)


class FakeTieredLog:
    """A partition log of real batches in segments; the last segment is the active one."""

    def __init__(
        self, directory: Path, tip: TopicIdPartition = TIP, *, epochs: Iterable[EpochEntry] = ()
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.topic_id_partition = tip
        self.config = FakeConfig()
        self.cache = LeaderEpochCache(directory, list(epochs) or [EpochEntry(0, 0)])
        self.segments: list[FakeSegment] = [FakeSegment(0, next_offset=0)]
        self.log_start_offset = 0
        self.lso: int | None = None
        self.highest_in_remote = -1
        self.highest_updates: list[int] = []
        self.start_updates: list[int] = []

    # the TieredLog Protocol
    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self.cache

    @property
    def local_log_start_offset(self) -> int:
        return self.segments[0].base

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        return self.log_end_offset if self.lso is None else self.lso

    @property
    def only_local_size_in_bytes(self) -> int:
        return sum(len(s.data) for s in self.segments if s.base > self.highest_in_remote)

    def closed_segments(self) -> list[ClosedSegment]:
        segs = self.segments
        return [
            ClosedSegment(s.base, segs[i + 1].base - 1, len(s.data), s.max_ts)
            for i, s in enumerate(segs[:-1])
        ]

    def segment_data(self, base_offset: int) -> LogSegmentData:
        segs = self.segments
        i = next(i for i, s in enumerate(segs[:-1]) if s.base == base_offset)  # StopIteration -> a bug
        seg, end = segs[i], segs[i + 1].base - 1
        d = self.directory / f"{base_offset:020d}"
        d.mkdir(exist_ok=True)
        (d / "log").write_bytes(bytes(seg.data))
        index = b"".join(
            struct.pack(">ii", h.last_offset - seg.base, pos) for pos, h in iter_batches(seg.data)
        )
        (d / "index").write_bytes(index)
        (d / "timeindex").write_bytes(b"")
        txn = None
        if seg.aborted:
            txn = d / "txnindex"
            txn.write_bytes(encode_entries(seg.aborted))
        (d / "snapshot").write_bytes(b"snapshot@%d" % (end + 1))
        epochs = [e for e in self.cache.entries if e.start_offset <= end]
        return LogSegmentData(
            d / "log",
            d / "index",
            d / "timeindex",
            txn,
            d / "snapshot",
            encode_leader_epoch_checkpoint(epochs),
        )

    def update_highest_offset_in_remote(self, offset: int) -> None:
        self.highest_updates.append(offset)
        self.highest_in_remote = offset

    def advance_log_start_offset(self, offset: int) -> None:
        if offset <= self.log_start_offset:
            return
        self.start_updates.append(offset)
        self.log_start_offset = offset
        self.cache.truncate_from_start(offset, write=False)
        while len(self.segments) > 1 and self.segments[1].base <= offset:
            self.segments.pop(0)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        return [
            e
            for s in self.segments
            for e in s.aborted
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound
        ]

    # building the log
    def append(self, batch: bytes, *, aborted: AbortedTxn | None = None) -> None:
        h = read_header(batch)
        seg = self.segments[-1]
        assert h.base_offset == self.log_end_offset, (h.base_offset, self.log_end_offset)
        seg.data += batch
        seg.next_offset = h.next_offset
        seg.max_ts = max(seg.max_ts, h.max_timestamp)
        if aborted is not None:
            seg.aborted.append(aborted)

    def roll(self) -> None:
        self.segments.append(FakeSegment(self.log_end_offset, next_offset=self.log_end_offset))

    def all_bytes(self, start: int = 0) -> bytes:
        return b"".join(bytes(s.data) for s in self.segments if s.base >= start)


def build_log(
    directory: Path,
    segments: int,
    *,
    batches: int = 2,
    n: int = 3,
    ts: int = 1000,
    epochs: Iterable[EpochEntry] = (),
) -> FakeTieredLog:
    """A log of ``segments`` closed segments of ``batches`` batches of ``n`` records each (plus an
    empty active segment); record timestamps ``ts`` + 1000 * segment index."""
    log = FakeTieredLog(directory, epochs=epochs)
    for i in range(segments):
        for _ in range(batches):
            epoch = log.cache.epoch_for_offset(log.log_end_offset)
            log.append(data_batch(log.log_end_offset, n, ts=ts + 1000 * i, epoch=epoch))
        log.roll()
    return log
