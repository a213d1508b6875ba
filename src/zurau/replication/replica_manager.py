"""Replica manager: the partitions this broker hosts, and appends/reads against them.

Handlers never touch :class:`~zurau.storage.partition_log.PartitionLog` directly; they go through
here so that leadership, the ISR and the high watermark are applied in one place. Single-node
today (this broker leads everything); followers and ISR changes extend this class.

Transactions: clients may not write control batches; the transaction coordinator writes its
COMMIT/ABORT markers through :meth:`ReplicaManager.append_markers`. With ``txn_verifier`` set
(``transaction.partition.verification.enable``, KIP-890), the first transactional batch of a
producer in a partition (no transaction of it open there yet) is accepted only if the
coordinator says the partition belongs to that producer's ongoing transaction at that epoch; so a
late or zombie write can never open a transaction nobody will end (a "hanging" transaction).
"""

from __future__ import annotations

from collections.abc import Callable

from zurau.protocol.errors import (
    InvalidRecordError,
    KafkaError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.records.batch import validate_batches
from zurau.protocol.records.control import build_control_batch
from zurau.replication.partition import Partition
from zurau.replication.purgatory import FetchPurgatory
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.log_validator import convert_compression, needs_conversion, target_codec
from zurau.storage.partition_log import AppendResult

# (topic, partition, producer id, producer epoch) -> None if the transactional write may go ahead,
# else the error to answer it with.
TxnVerifier = Callable[[str, int, int, int], KafkaError | None]


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        log_manager: LogManager,
        log_config_for: Callable[[str], LogConfig],
        now_ms: Callable[[], int],
    ) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self.log_config_for = log_config_for
        self.now_ms = now_ms
        self.purgatory = FetchPurgatory()
        self._partitions: dict[tuple[str, int], Partition] = {}
        self.txn_verifier: TxnVerifier | None = None

    # ------------------------------------------------------------------ hosting
    def host(self, topic: str, index: int) -> Partition:
        """Open (or create) the local log for a partition this broker leads."""
        key = (topic, index)
        p = self._partitions.get(key)
        if p is None:
            log = self.log_manager.get_or_create(topic, index, self.log_config_for(topic))
            # Sole replica: everything in the local log is committed. After a crash the stored
            # high watermark may be stale, so it is brought to the log end at load.
            log.update_high_watermark(log.log_end_offset)
            p = Partition(
                topic,
                index,
                log,
                leader_id=self.node_id,
                replicas=[self.node_id],
                isr=[self.node_id],
                on_new_data=self._on_new_data,
            )
            self._partitions[key] = p
        return p

    def _on_new_data(self, p: Partition) -> None:
        self.purgatory.notify(p.topic, p.index)

    def partition(self, topic: str, index: int) -> Partition:
        p = self._partitions.get((topic, index))
        if p is None:
            raise UnknownTopicOrPartitionError(f"this broker does not host {topic}-{index}")
        if p.leader_id != self.node_id:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} is not the leader of {topic}-{index}")
        return p

    def get(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def stop_hosting(self, topic: str, index: int, delete: bool) -> None:
        p = self._partitions.pop((topic, index), None)
        if p is not None and delete:
            self.log_manager.delete_partition(topic, index)
        self.purgatory.notify(topic, index)

    def update_config(self, topic: str) -> None:
        cfg = self.log_config_for(topic)
        for (t, _i), p in self._partitions.items():
            if t == topic:
                p.log.update_config(cfg)

    # ------------------------------------------------------------------ data
    def append(
        self, topic: str, index: int, records: memoryview, acks: int, *, in_place: bool = False
    ) -> AppendResult:
        """Append a client's produced records as the leader.

        The payload is validated once here (CRC, sizes, magic); control batches are refused
        (only coordinators write markers); a topic ``compression.type`` other than ``producer``
        rewrites batches in another codec. Storage then checks sizes, timestamps and producer
        state and writes. ``in_place=True``: the caller gives ``records`` up (nothing reads it
        afterwards), so if writable the log patches offsets into it rather than into a copy.
        """
        p = self.partition(topic, index)
        cfg = p.log.config
        p.check_min_isr(acks, cfg.min_insync_replicas)
        batches = validate_batches(records)
        verifier = self.txn_verifier
        for _pos, h in batches:
            if h.is_control:
                raise InvalidRecordError("clients may not produce control batches")
            if verifier is not None and h.is_transactional:
                entry = p.log.producer_entry(h.producer_id)
                if entry is None or entry.current_txn_first_offset < 0:
                    err = verifier(topic, index, h.producer_id, h.producer_epoch)
                    if err is not None:
                        raise err
        payload: bytes | bytearray | memoryview = records
        codec = target_codec(cfg.compression_type)
        if needs_conversion(batches, codec):
            assert codec is not None
            payload, batches = convert_compression(records, batches, codec)
        if payload is not records:
            in_place = True  # a fresh buffer of our own
        elif in_place:
            in_place = isinstance(records, bytearray) or (
                isinstance(records, memoryview) and not records.readonly
            )
        result = p.log.append(
            payload, leader_epoch=p.leader_epoch, now_ms=self.now_ms(), validated=batches, in_place=in_place
        )
        if not result.duplicate:
            p.maybe_advance_high_watermark()
        return result

    def append_markers(
        self,
        topic: str,
        index: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> AppendResult:
        """Append a COMMIT (``commit``) or ABORT marker for a producer: the coordinators' path.

        The marker ends the producer's open transaction in the partition (an ABORT is indexed
        in ``.txnindex``) and the high watermark advances as for any append (acks=all: the ISR
        must satisfy ``min.insync.replicas``). A marker with an epoch older than the producer's
        gets INVALID_PRODUCER_EPOCH; one for a producer with no open transaction ends nothing.
        """
        p = self.partition(topic, index)
        p.check_min_isr(-1, p.log.config.min_insync_replicas)
        now = self.now_ms()
        batch = bytearray(
            build_control_batch(commit, producer_id, producer_epoch, coordinator_epoch, timestamp_ms=now)
        )
        result = p.log.append(batch, leader_epoch=p.leader_epoch, now_ms=now, in_place=True)
        if not result.duplicate:
            p.maybe_advance_high_watermark()
        return result
