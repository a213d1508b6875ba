"""An in-memory :class:`~zurau.coordinator.partition_writer.PartitionWriter` for the coordinator tests.

Each partition is a list of v2 batches with offsets assigned on append and a high watermark that
follows the log end at once (the single-node behaviour), unless the partition is *held*: then its
high watermark stays where it is until :meth:`MemoryPartitionWriter.release` (a slow ISR).
Appends can be made to fail per topic or per partition. :meth:`crash` drops what was appended
above each high watermark, as a failover does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from zurau.protocol.errors import KafkaError
from zurau.protocol.records.batch import iter_batches, set_base_offset
from zurau.protocol.records.control import build_control_batch
from zurau.types import TopicPartitionKey


@dataclass
class MemoryLog:
    batches: list[tuple[int, int, bytes]] = field(default_factory=list)  # (base, last, bytes)
    end: int = 0
    high_watermark: int = 0
    held: bool = False


class MemoryPartitionWriter:
    def __init__(self) -> None:
        self.logs: dict[TopicPartitionKey, MemoryLog] = {}
        self.order: list[tuple[TopicPartitionKey, int]] = []  # (partition, base offset) per append
        self.listeners: list[Callable[[str, int, int], None]] = []
        self.fail_topics: dict[str, KafkaError] = {}
        self.fail_partitions: dict[TopicPartitionKey, KafkaError] = {}
        self.hold_topics: set[str] = set()  # new partitions of these topics start held
        self.hold_all_but: set[str] | None = None  # hold every topic except these

    # ------------------------------------------------------------------ PartitionWriter
    def log(self, topic: str, partition: int) -> MemoryLog:
        tp = (topic, partition)
        lg = self.logs.get(tp)
        if lg is None:
            lg = self.logs[tp] = MemoryLog()
        return lg

    def _held(self, topic: str, lg: MemoryLog) -> bool:
        if lg.held or topic in self.hold_topics:
            return True
        return self.hold_all_but is not None and topic not in self.hold_all_but

    def _append(self, topic: str, partition: int, data: bytes | bytearray) -> int:
        err = self.fail_partitions.get((topic, partition)) or self.fail_topics.get(topic)
        if err is not None:
            raise err
        lg = self.log(topic, partition)
        buf = bytearray(data)
        base = lg.end
        for pos, h in list(iter_batches(buf)):
            set_base_offset(buf, pos, lg.end)
            lg.end += h.last_offset_delta + 1
        last = lg.end - 1
        lg.batches.append((base, last, bytes(buf)))
        self.order.append(((topic, partition), base))
        if not self._held(topic, lg):
            self._advance(topic, partition, lg)
        return last

    def _advance(self, topic: str, partition: int, lg: MemoryLog) -> None:
        if lg.high_watermark < lg.end:
            lg.high_watermark = lg.end
            for listener in list(self.listeners):
                listener(topic, partition, lg.end)

    def append(self, topic: str, partition: int, records: bytearray) -> int:
        return self._append(topic, partition, records)

    def append_markers(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> int:
        batch = build_control_batch(commit, producer_id, producer_epoch, coordinator_epoch, timestamp_ms=0)
        return self._append(topic, partition, batch)

    def high_watermark(self, topic: str, partition: int) -> int:
        return self.log(topic, partition).high_watermark

    def log_start_offset(self, topic: str, partition: int) -> int:
        return 0

    def read_committed(self, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
        lg = self.log(topic, partition)
        out = bytearray()
        for base, last, data in lg.batches:
            if last < offset:
                continue
            if base >= lg.high_watermark or (out and len(out) + len(data) > max_bytes):
                break
            out += data
        return bytes(out)

    def add_high_watermark_listener(self, listener: Callable[[str, int, int], None]) -> None:
        self.listeners.append(listener)

    # ------------------------------------------------------------------ test controls
    def hold(self, topic: str, partition: int) -> None:
        """Keep the high watermark of ``topic-partition`` where it is."""
        self.log(topic, partition).held = True

    def release(self, topic: str | None = None, partition: int | None = None) -> None:
        """Let held partitions (all, a topic's, or one) commit what they have."""
        if topic is None:
            self.hold_topics.clear()
            self.hold_all_but = None
        else:
            self.hold_topics.discard(topic)
        for (t, p), lg in list(self.logs.items()):
            if (topic is None or t == topic) and (partition is None or p == partition):
                lg.held = False
                if not self._held(t, lg):
                    self._advance(t, p, lg)

    def crash(self) -> None:
        """Forget everything above each high watermark and every hold."""
        self.hold_topics.clear()
        self.hold_all_but = None
        for lg in self.logs.values():
            lg.held = False
            lg.batches = [b for b in lg.batches if b[0] < lg.high_watermark]
            lg.end = lg.high_watermark
        self.order = [(tp, base) for tp, base in self.order if base < self.logs[tp].high_watermark]

    def committed(self) -> list[tuple[TopicPartitionKey, bytes]]:
        """Every committed batch, in append order."""
        out = []
        for tp, base in self.order:
            lg = self.logs[tp]
            if base < lg.high_watermark:
                data = next(d for b, _last, d in lg.batches if b == base)
                out.append((tp, data))
        return out
