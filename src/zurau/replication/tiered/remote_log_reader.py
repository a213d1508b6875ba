"""Reads of offsets below the local log start, served from the remote tier (Kafka's
``RemoteLogManager.read`` and ``RemoteLogReader``).

A read of ``fetch_offset`` (on a leader, or on a follower serving a consumer):

1. finds the leader epoch of ``fetch_offset`` in the log's leader-epoch cache and asks the remote
   log metadata for the COPY_SEGMENT_FINISHED segment holding that offset under that epoch
   (``segment_for``); when it has none, scans the partition's segments for one holding the offset
   (preferring the one whose epoch map agrees). None: OffsetOutOfRangeError, as Kafka answers;
2. fetches the segment's offset index (through the shared
   :class:`~zurau.storage.remote.remote_index_cache.RemoteIndexCache`), looks up the position
   of the last indexed batch ending at or before ``fetch_offset``, and streams the ``.log`` from
   there, skipping batches that end below ``fetch_offset``;
3. returns whole batches from the one holding ``fetch_offset`` up to ``max_bytes``, never past the
   segment's end (the consumer's next fetch goes on from the next segment); the first batch is
   returned whole even when larger than ``max_bytes`` unless ``min_one_message`` is False, then
   nothing is (Kafka's ``minOneMessage``);
4. for read_committed, when a returned batch is transactional, gathers the aborted transactions
   overlapping ``[first returned offset, next offset after the last batch)``: from this segment's
   ``.txnindex`` and the following remote segments' until an entry's last stable offset reaches
   the upper bound (no transaction open across that point can be missing), then from the local log
   (Kafka's ``collectAbortedTransactions``).

Blocking calls to the storage plugin run in a thread pool of ``remote.log.reader.threads``; the
remote log metadata and the log are queried on the event loop only. Any failure of the remote
tier (an object missing, a network error, bytes that are not the segment's batches) raises
:class:`~zurau.storage.remote.RemoteStorageError` and never yields other records: the fetch path
answers that partition with UNKNOWN_SERVER_ERROR, which is what Kafka sends for a failed remote
read (``Errors.forException`` of a RemoteStorageException); clients log it and fetch again.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, NamedTuple

from zurau.protocol.errors import OffsetOutOfRangeError
from zurau.protocol.records.batch import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, read_header
from zurau.replication.tiered.remote_lineage import cache_ranges, in_lineage
from zurau.replication.tiered.remote_log_stats import RemoteLogStats
from zurau.replication.tiered.tiered_log import TieredLog
from zurau.storage.offset_index import lookup_bytes
from zurau.storage.remote.remote_index_cache import RemoteIndexCache
from zurau.storage.remote.remote_log_metadata_manager import RemoteLogMetadataManager
from zurau.storage.remote.remote_log_segment import IndexType, RemoteLogSegmentMetadata, RemoteLogSegmentState
from zurau.storage.remote.remote_storage_manager import (
    RemoteResourceNotFoundError,
    RemoteStorageError,
    RemoteStorageManager,
)
from zurau.storage.txn_index import AbortedTxn, decode_entries


class RemoteFetchData(NamedTuple):
    """What a remote read returns: whole v2 batches (empty: nothing to return), and for
    read_committed the aborted transactions overlapping them (None for read_uncommitted)."""

    records: bytes
    aborted_transactions: list[AbortedTxn] | None
    #: The segment the bytes come from (None when empty).
    segment: RemoteLogSegmentMetadata | None


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    parts = []
    while n > 0:
        chunk = stream.read(n)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


class RemoteLogReader:
    """Serves reads of remote offsets (see the module docstring)."""

    def __init__(
        self,
        rsm: RemoteStorageManager,
        rlmm: RemoteLogMetadataManager,
        *,
        threads: int = 10,
        index_cache: RemoteIndexCache | None = None,
        stats: RemoteLogStats | None = None,
    ) -> None:
        self.rsm = rsm
        self.rlmm = rlmm
        self.index_cache = index_cache if index_cache is not None else RemoteIndexCache(rsm)
        self.stats = stats if stats is not None else RemoteLogStats()
        self._executor = ThreadPoolExecutor(
            max_workers=max(1, threads), thread_name_prefix="remote-log-reader"
        )

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ segment lookup (event loop)
    def segment_for(self, log: TieredLog, offset: int) -> RemoteLogSegmentMetadata | None:
        """The COPY_SEGMENT_FINISHED segment holding ``offset`` in the log's lineage, or None."""
        tip = log.topic_id_partition
        cache = log.leader_epoch_cache
        epoch = cache.epoch_for_offset(offset)
        if epoch >= 0:
            seg = self.rlmm.segment_for(tip, epoch, offset)
            if seg is not None and seg.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                return seg
        lineage = cache_ranges(cache.entries, log.log_end_offset)
        fallback = None
        for seg in self.rlmm.list_segments(tip):
            if seg.state is not RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                continue
            if not seg.start_offset <= offset <= seg.end_offset:
                continue
            if epoch >= 0 and seg.epoch_of(offset) == epoch:
                return seg
            if fallback is None and in_lineage(seg, lineage):
                fallback = seg
        return fallback

    # ------------------------------------------------------------------ reads
    async def read(
        self,
        log: TieredLog,
        fetch_offset: int,
        max_bytes: int,
        *,
        read_committed: bool = False,
        min_one_message: bool = True,
    ) -> RemoteFetchData:
        """Batches from ``fetch_offset`` (see the module docstring). Raises OffsetOutOfRangeError
        when no remote segment holds the offset, RemoteStorageError when the remote tier fails."""
        self.stats.fetch_requests += 1
        try:
            result = await self._read(log, fetch_offset, max_bytes, read_committed, min_one_message)
        except OffsetOutOfRangeError:
            raise
        except RemoteStorageError:
            self.stats.fetch_failures += 1
            raise
        except Exception as e:  # bad bytes (CorruptRecordError), a plugin's I/O errors: never guess
            self.stats.fetch_failures += 1
            raise RemoteStorageError(
                f"remote read of {log.topic_id_partition} at {fetch_offset} failed: {e!r}"
            ) from e
        self.stats.bytes_read += len(result.records)
        return result

    async def _read(
        self, log: TieredLog, fetch_offset: int, max_bytes: int, read_committed: bool, min_one_message: bool
    ) -> RemoteFetchData:
        tip = log.topic_id_partition
        seg = self.segment_for(log, fetch_offset)
        if seg is None:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} of {tip.topic}-{tip.partition} is in no remote segment"
            )
        loop = asyncio.get_running_loop()
        records = b""
        headers: list[BatchHeader] = []
        # A segment may hold no batch at or after the offset (offsets a compaction or an aborted
        # producer left unused at its end): go on with the next segment, as Kafka does.
        cur: RemoteLogSegmentMetadata | None = seg
        while cur is not None:
            records, headers, exhausted = await loop.run_in_executor(
                self._executor, self._read_batches, cur, fetch_offset, max_bytes, min_one_message
            )
            if not exhausted:
                break
            cur = self._next_segment(log, cur)
        if not headers or cur is None:
            return RemoteFetchData(b"", [] if read_committed else None, None)
        aborted: list[AbortedTxn] | None = None
        if read_committed:
            aborted = []
            if any(h.is_transactional and not h.is_control for h in headers):
                aborted = await self._aborted_transactions(
                    log, cur, headers[0].base_offset, headers[-1].next_offset
                )
        return RemoteFetchData(records, aborted, cur)

    def _read_batches(
        self, seg: RemoteLogSegmentMetadata, fetch_offset: int, max_bytes: int, min_one_message: bool
    ) -> tuple[bytes, list[BatchHeader], bool]:
        """(worker thread) Whole batches of ``seg`` from the one holding ``fetch_offset``, and
        whether the segment ended before any batch at or after ``fetch_offset``."""
        index = self.index_cache.index(seg, IndexType.OFFSET)
        position = lookup_bytes(index, seg.start_offset, fetch_offset).position
        out = bytearray()
        headers: list[BatchHeader] = []
        expected = -1  # the next batch's base offset must be at least this
        with self.rsm.fetch_log_segment(seg, position) as stream:
            while True:
                head = _read_exact(stream, HEADER_SIZE)
                if not head:
                    return bytes(out), headers, not headers
                if len(head) < HEADER_SIZE:
                    raise RemoteStorageError(f"{seg.segment_id}: torn batch header at byte {position}")
                h = read_header(head)
                if (
                    h.batch_length < HEADER_SIZE - LOG_OVERHEAD
                    or h.base_offset < max(expected, seg.start_offset)
                    or h.last_offset > seg.end_offset
                ):
                    raise RemoteStorageError(
                        f"{seg.segment_id}: unexpected batch {h.base_offset}..{h.last_offset}"
                    )
                expected = h.next_offset
                rest = h.size - HEADER_SIZE
                if h.last_offset < fetch_offset:
                    if len(_read_exact(stream, rest)) != rest:
                        raise RemoteStorageError(f"{seg.segment_id}: torn batch at byte {position}")
                    position += h.size
                    continue
                if len(out) + h.size > max_bytes and (out or not min_one_message):
                    return bytes(out), headers, False
                body = _read_exact(stream, rest)
                if len(body) != rest:
                    raise RemoteStorageError(f"{seg.segment_id}: torn batch at byte {position}")
                out += head
                out += body
                headers.append(h)
                position += h.size
                if len(out) >= max_bytes:
                    return bytes(out), headers, False

    def _next_segment(self, log: TieredLog, seg: RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadata | None:
        offset = seg.end_offset + 1
        if offset >= log.log_end_offset:
            return None
        return self.segment_for(log, offset)

    async def _aborted_transactions(
        self, log: TieredLog, seg: RemoteLogSegmentMetadata, first: int, upper: int
    ) -> list[AbortedTxn]:
        loop = asyncio.get_running_loop()
        found: dict[AbortedTxn, None] = {}
        complete = False
        cur: RemoteLogSegmentMetadata | None = seg
        local_start = log.local_log_start_offset
        while cur is not None:
            if not cur.txn_index_empty:
                entries = await loop.run_in_executor(self._executor, self._txn_entries, cur)
                for e in entries:
                    if e.last_offset >= first and e.first_offset < upper:
                        found[e] = None
                    if e.last_stable_offset >= upper:
                        complete = True
                        break
            if complete:
                break
            cur = self._next_segment(log, cur)
            if cur is not None and cur.start_offset >= local_start:
                break  # the local log's own index covers the rest
        if not complete:
            for e in log.aborted_transactions(first, upper):
                found[e] = None
        return sorted(found, key=lambda e: (e.last_offset, e.producer_id))

    def _txn_entries(self, seg: RemoteLogSegmentMetadata) -> list[AbortedTxn]:
        try:
            return decode_entries(self.index_cache.index(seg, IndexType.TRANSACTION))
        except RemoteResourceNotFoundError:
            return []  # a segment without a transaction index has no aborted transaction
