"""Reading a coordinator's internal topic partition back when it is loaded.

Both coordinators (groups in ``__consumer_offsets``, transactions in ``__transaction_state``)
rebuild a partition's state by replaying its committed records, from the log start offset to the
high watermark. :class:`PartitionLoader` holds that loop once, a chunk at a time (so a large
partition can be loaded without holding the event loop for its whole length); each coordinator
supplies the parser of its own record format.

A partition that cannot be replayed is never served from what was read before the failure: a
record the parser refuses (a malformed key or value, a value version it does not know, a batch
failing its CRC) raises :class:`CoordinatorLoadError`, and the runtime leaves the partition
unloaded (see coordinator_runtime.py). A record of a *type* the parser does not know (an unknown
key version) is not a failure: the parser skips it, as Kafka's loader skips unknown record types
(a leftover of an aborted upgrade).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from zurau.coordinator.partition_writer import PartitionWriter
from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.primitives import DecodeError

R = TypeVar("R")


class CoordinatorLoadError(Exception):
    """A coordinator partition's records cannot be replayed: the load failed (not a KafkaError:
    the partition is still led here, it just cannot be served)."""


# parse(data, log_start_offset) -> (offset after the batch, its records to replay) per whole batch
ChunkParser = Callable[[bytes, int], Iterable[tuple[int, list[R]]]]


class PartitionLoader(Generic[R]):
    """Reads one partition's committed records in chunks of about ``buffer_bytes``.

    :meth:`next_chunk` returns the records of the next chunk and whether the loader reached the
    high watermark (as it is at that call); :attr:`caught_up` tells whether it also reached the
    log end offset the partition had when the load began (else the caller waits for the high
    watermark to move and calls again). A record that cannot be parsed raises
    :class:`CoordinatorLoadError` naming the partition and the offset of its batch; nothing of
    that chunk is returned. Read errors of the writer (the partition is no longer led here)
    propagate as KafkaError.
    """

    def __init__(
        self,
        writer: PartitionWriter,
        topic: str,
        partition: int,
        buffer_bytes: int,
        parse: ChunkParser[R],
    ) -> None:
        self.writer = writer
        self.topic = topic
        self.partition = partition
        self.buffer_bytes = max(buffer_bytes, 1)
        self.parse = parse
        self.log_start = writer.log_start_offset(topic, partition)
        self.offset = self.log_start
        self.count = 0
        # Everything in the log when the load began: a new leader's high watermark may still be
        # below it (its followers have not fetched yet), yet all of it is the partition's state,
        # so the load ends only once it has replayed up to here (committed by then).
        end = getattr(writer, "log_end_offset", None)
        self.target = end(topic, partition) if end is not None else self.offset

    @property
    def caught_up(self) -> bool:
        """True once everything that was in the log when the load began has been replayed."""
        return self.offset >= self.target

    def next_chunk(self) -> tuple[list[R], bool]:
        hw = self.writer.high_watermark(self.topic, self.partition)
        if self.offset >= hw:
            return [], True
        data = self.writer.read_committed(self.topic, self.partition, self.offset, self.buffer_bytes)
        if not data:
            return [], True
        out: list[R] = []
        before = self.offset
        try:
            for nxt, records in self.parse(data, self.log_start):
                out.extend(records)
                self.offset = max(self.offset, nxt)
        except (DecodeError, CorruptRecordError) as e:
            raise CoordinatorLoadError(
                f"{self.topic}-{self.partition}: the record batch at offset {self.offset} cannot be read: {e}"
            ) from e
        self.count += len(out)
        return out, self.offset >= hw or self.offset == before
