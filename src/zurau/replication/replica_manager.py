"""Replica manager: the partitions this broker hosts, and every append to and read of their logs.

This class is the only door to a partition's :class:`~zurau.storage.partition_log.PartitionLog`:
handlers and coordinators call the methods below and never the log itself, so that leadership,
the ISR, the high watermark and the delayed operations are applied in one place.

* **Appends.** :meth:`ReplicaManager.append_as_leader` (producers and coordinators;
  :class:`AppendOrigin` says which: clients may not write control batches, coordinators may),
  :meth:`ReplicaManager.append_markers` (the transaction coordinator's COMMIT/ABORT markers) and
  :meth:`ReplicaManager.append_as_follower` (batches a replica fetcher copied from the leader:
  their offsets and leader epochs are kept). All go through ``log_validator`` and keep the log's
  leader-epoch cache. After a leader append the high watermark moves as far as the ISR allows.
* **Reads** take a replica id (:meth:`ReplicaManager.read`): a consumer (-1) reads below the high
  watermark (read_uncommitted) or the last stable offset (read_committed); a follower (its broker
  id >= 0) reads up to the log end offset, and its fetch offset tells the leader how far it has
  replicated (which may advance the high watermark).
* **Committed data** for the coordinators: :meth:`high_watermark`, :meth:`log_start_offset`,
  :meth:`read_committed` and :meth:`add_high_watermark_listener` (called on every advance).
* **acks=all** produces wait in the :class:`~zurau.replication.purgatory.ProducePurgatory` until
  the high watermark passes their last offset (:meth:`delayed_produce`,
  :meth:`wait_for_replication`). On one node the sole replica is the whole ISR, so the high
  watermark reaches the log end offset during the append and nothing ever waits.

Transactions: with ``txn_verifier`` set (``transaction.partition.verification.enable``, KIP-890),
the first transactional batch of a producer in a partition (no transaction of it open there yet)
is accepted only if the coordinator says the partition belongs to that producer's ongoing
transaction at that epoch; so a late or zombie write can never open a transaction nobody will end
(a "hanging" transaction).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from zurau.protocol.errors import (
    FencedLeaderEpochError,
    InvalidRecordError,
    InvalidRequestError,
    KafkaError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.records.batch import validate_batches
from zurau.protocol.records.control import build_control_batch
from zurau.replication.partition import Partition
from zurau.replication.purgatory import DelayedProduce, FetchPurgatory, ProducePurgatory, TopicPartitionKey
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.log_validator import convert_compression, needs_conversion, target_codec
from zurau.storage.partition_log import AppendResult, LogReadSlice
from zurau.storage.producer_state import ProducerStateEntry
from zurau.storage.txn_index import AbortedTxn

log = logging.getLogger("zurau.replication")

# Called with (topic, partition, new high watermark) each time a partition's high watermark advances.
HighWatermarkListener = Callable[[str, int, int], None]

# (topic, partition, producer id, producer epoch) -> None if the transactional write may go ahead,
# else the error to answer it with.
TxnVerifier = Callable[[str, int, int, int], KafkaError | None]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1

# ListOffsets special timestamps (Kafka's ListOffsetsRequest constants).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's ``AppendOrigin``)."""

    CLIENT = "client"  # a producer: no control batches
    COORDINATOR = "coordinator"  # the group/transaction coordinators: may write control batches
    REPLICATION = "replication"  # a follower copying the leader's batches (append_as_follower)


# Module constants: an Enum member lookup on the class costs ~0.1 us per produce.
_CLIENT = AppendOrigin.CLIENT
_REPLICATION = AppendOrigin.REPLICATION


class LogReadResult(NamedTuple):
    """One partition's part of a fetch (Kafka's ``LogReadResult``).

    The offsets are always filled in for a hosted partition, even when the read itself failed
    (``error``, e.g. OFFSET_OUT_OF_RANGE), as Kafka answers them.
    """

    records: LogReadSlice | None  # whole batches as a range of one segment file, or None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    aborted_transactions: list[AbortedTxn] | None  # read_committed consumers only
    error: KafkaError | None


class OffsetForTimestamp(NamedTuple):
    offset: int  # -1 when no record matches
    timestamp: int  # -1 unless a record was found by timestamp
    leader_epoch: int


class ReplicaInfo(NamedTuple):
    """A partition replica stored in a log dir (DescribeLogDirs)."""

    topic: str
    partition: int
    size: int  # bytes of all its segment files


def _check_leader_epoch(current_leader_epoch: int, leader_epoch: int) -> None:
    """KIP-320: a client's epoch newer than ours is unknown to us, an older one is fenced."""
    if current_leader_epoch < 0 or current_leader_epoch == leader_epoch:
        return
    if current_leader_epoch > leader_epoch:
        raise UnknownLeaderEpochError(f"leader epoch {current_leader_epoch} is newer than {leader_epoch}")
    raise FencedLeaderEpochError(f"leader epoch {current_leader_epoch} is older than {leader_epoch}")


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
        self.produce_purgatory = ProducePurgatory()
        self._partitions: dict[tuple[str, int], Partition] = {}
        self.txn_verifier: TxnVerifier | None = None
        self._hw_listeners: list[HighWatermarkListener] = []

    # ------------------------------------------------------------------ hosting
    def host(self, topic: str, index: int) -> Partition:
        """Open (or create) the local log for a partition this broker leads as its sole replica."""
        key = (topic, index)
        p = self._partitions.get(key)
        if p is None:
            log_ = self.log_manager.get_or_create(topic, index, self.log_config_for(topic))
            # Sole replica: everything in the local log is committed. After a crash the stored
            # high watermark may be stale, so it is brought to the log end at load.
            log_.update_high_watermark(log_.log_end_offset)
            p = Partition(
                topic,
                index,
                log_,
                leader_id=self.node_id,
                replicas=[self.node_id],
                isr=[self.node_id],
                on_new_data=self._on_new_data,
                on_high_watermark=self._on_high_watermark,
            )
            self._partitions[key] = p
        return p

    def make_leader(
        self, topic: str, index: int, *, leader_epoch: int, replicas: list[int], isr: list[int]
    ) -> Partition:
        """Lead a partition at ``leader_epoch`` with these replicas and ISR (this broker included).

        The high watermark then waits for every ISR follower to fetch (their fetch offsets are
        unknown until they do), as in Kafka.
        """
        p = self.host(topic, index)
        p.leader_id = self.node_id
        p.leader_epoch = leader_epoch
        p.replicas = list(replicas)
        p.isr = list(isr)
        p.follower_end_offsets = {}
        return p

    def make_follower(self, topic: str, index: int, *, leader_id: int, leader_epoch: int) -> Partition:
        """Follow ``leader_id`` for a partition: waiting acks=all produces on it fail with
        NOT_LEADER_OR_FOLLOWER; later appends come through :meth:`append_as_follower`."""
        p = self.host(topic, index)
        p.leader_id = leader_id
        p.leader_epoch = leader_epoch
        p.follower_end_offsets = {}
        self.produce_purgatory.fail((topic, index), NotLeaderOrFollowerError.code)
        self.purgatory.notify(topic, index)
        return p

    def _on_new_data(self, p: Partition) -> None:
        self.purgatory.notify(p.topic, p.index)

    def _on_high_watermark(self, p: Partition, high_watermark: int) -> None:
        if self.produce_purgatory:  # only when some acks=all produce waits (never on one node)
            key = (p.topic, p.index)
            if self.produce_purgatory.has_watchers(key):
                self.produce_purgatory.check(key, high_watermark, self._acks_error(p))
        for listener in self._hw_listeners:
            try:
                listener(p.topic, p.index, high_watermark)
            except Exception:  # a listener's bug must not fail the append that moved the HW
                log.exception("high watermark listener failed for %s-%d", p.topic, p.index)

    def partition(self, topic: str, index: int) -> Partition:
        """The partition if this broker leads it, else UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER."""
        p = self._partitions.get((topic, index))
        if p is None:
            raise UnknownTopicOrPartitionError(f"this broker does not host {topic}-{index}")
        if p.leader_id != self.node_id:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} is not the leader of {topic}-{index}")
        return p

    def _hosted(self, topic: str, index: int) -> Partition:
        p = self._partitions.get((topic, index))
        if p is None:
            raise UnknownTopicOrPartitionError(f"this broker does not host {topic}-{index}")
        return p

    def get(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def stop_hosting(self, topic: str, index: int, delete: bool) -> None:
        p = self._partitions.pop((topic, index), None)
        if p is not None and delete:
            self.log_manager.delete_partition(topic, index)
        self.produce_purgatory.fail((topic, index), NotLeaderOrFollowerError.code)
        self.purgatory.notify(topic, index)

    def update_config(self, topic: str) -> None:
        cfg = self.log_config_for(topic)
        for (t, _i), p in self._partitions.items():
            if t == topic:
                p.log.update_config(cfg)

    # ------------------------------------------------------------------ committed data (coordinators)
    def add_high_watermark_listener(self, listener: HighWatermarkListener) -> None:
        """Call ``listener(topic, partition, new_high_watermark)`` whenever the high watermark of
        a partition this broker leads advances. On one node that is synchronously right after
        the append (the sole replica is the whole ISR); with followers, when the last ISR
        replica has fetched the data. An exception from a listener is logged and ignored."""
        self._hw_listeners.append(listener)

    def high_watermark(self, topic: str, partition: int) -> int:
        """The partition's high watermark (raises UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER)."""
        return self.partition(topic, partition).log.high_watermark

    def log_start_offset(self, topic: str, partition: int) -> int:
        """The partition's log start offset (raises as :meth:`high_watermark`)."""
        return self.partition(topic, partition).log.log_start_offset

    def read_committed(self, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing ``offset``, all below the high watermark.

        At most ``max_bytes`` except that the first batch is returned whole even if larger, so a
        reader always progresses; ``b""`` when ``offset`` is at or after the high watermark. An
        ``offset`` below the log start offset raises OFFSET_OUT_OF_RANGE.
        """
        log_ = self.partition(topic, partition).log
        hw = log_.high_watermark
        if offset >= hw:
            return b""
        return log_.read(offset, max_bytes, max_offset=hw, min_one_batch=True)

    # ------------------------------------------------------------------ appends
    def append_as_leader(
        self,
        topic: str,
        partition: int,
        records: bytes | bytearray | memoryview,
        *,
        required_acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        in_place: bool = False,
    ) -> AppendResult:
        """Append records to a partition this broker leads (a producer's or a coordinator's).

        ``required_acks=-1`` first needs ``min.insync.replicas`` replicas in the ISR
        (NOT_ENOUGH_REPLICAS); waiting for them to replicate is the caller's business
        (:meth:`delayed_produce`). The payload is validated once (CRC, sizes, magic); control
        batches are refused from clients; transactional batches may need the coordinator's word
        (``txn_verifier``); a topic ``compression.type`` other than ``producer`` rewrites batches
        in that codec. The log then validates sizes and timestamps, checks producer state,
        assigns offsets and writes; the high watermark advances as far as the ISR allows.
        ``in_place=True``: the caller gives ``records`` up (nothing reads it afterwards), so if
        writable the log patches offsets into it rather than into a copy.
        """
        if origin is _REPLICATION:
            raise ValueError("replicated batches go through append_as_follower")
        p = self.partition(topic, partition)
        plog = p.log
        cfg = plog.config
        p.check_min_isr(required_acks, cfg.min_insync_replicas)
        batches = validate_batches(records)
        verifier = self.txn_verifier
        client = origin is _CLIENT
        for _pos, h in batches:
            if h.is_control and client:
                raise InvalidRecordError("clients may not produce control batches")
            if verifier is not None and h.is_transactional and not h.is_control:
                entry = plog.producer_entry(h.producer_id)
                if entry is None or entry.current_txn_first_offset < 0:
                    err = verifier(topic, partition, h.producer_id, h.producer_epoch)
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
        result = plog.append(
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

    def append_as_follower(
        self, topic: str, partition: int, records: bytes | bytearray | memoryview
    ) -> AppendResult:
        """Append batches fetched from the leader to a partition this broker follows.

        The batches keep the offsets and leader epochs the leader gave them and are stored byte
        for byte (see ``PartitionLog.append_as_follower``). NOT_LEADER_OR_FOLLOWER if this
        broker leads the partition; UNKNOWN_TOPIC_OR_PARTITION if it does not host it.
        """
        p = self._hosted(topic, partition)
        if p.leader_id == self.node_id:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} leads {topic}-{partition}: it does not follow")
        result = p.log.append_as_follower(records, now_ms=self.now_ms())
        if result.record_count:
            self.purgatory.notify(topic, partition)
        return result

    def update_follower_high_watermark(self, topic: str, partition: int, leader_high_watermark: int) -> int:
        """A follower learns the leader's high watermark from a fetch response: its own becomes
        that, capped at its log end offset (never lower than before). Returns it."""
        p = self._hosted(topic, partition)
        return p.log.update_high_watermark(leader_high_watermark)

    # ------------------------------------------------------------------ acks=all
    def _acks_error(self, p: Partition) -> int:
        """Error code for an acks=all write that the high watermark has passed."""
        if len(p.isr) < p.log.config.min_insync_replicas:
            return NotEnoughReplicasAfterAppendError.code
        return 0

    def delayed_produce(self, required: Mapping[TopicPartitionKey, int]) -> DelayedProduce:
        """An acks=all produce: for each partition the offset its high watermark must reach
        (last appended offset + 1). Partitions already there are decided at once; the rest are
        watched in the produce purgatory. Check ``op.done`` before awaiting
        :meth:`wait_for_replication`."""
        op = DelayedProduce(required)
        node = self.node_id
        for key, offset in op.required.items():
            p = self._partitions.get(key)
            if p is None or p.leader_id != node:
                op.complete_partition(key, NotLeaderOrFollowerError.code)
            elif p.log.high_watermark >= offset:
                op.complete_partition(key, self._acks_error(p))
        if not op.done:
            self.produce_purgatory.watch(op)
        return op

    async def wait_for_replication(self, op: DelayedProduce, timeout_ms: int) -> dict[TopicPartitionKey, int]:
        """Wait for a delayed produce; partitions not replicated within ``timeout_ms`` get
        REQUEST_TIMED_OUT. Returns the error code (0 = acknowledged) of every partition."""
        return await self.produce_purgatory.wait(op, timeout_ms / 1000)

    # ------------------------------------------------------------------ reads
    def read(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        max_bytes: int,
        *,
        replica_id: int = CONSUMER_REPLICA_ID,
        isolation_level: int = READ_UNCOMMITTED,
        min_one_batch: bool = True,
        current_leader_epoch: int = -1,
    ) -> LogReadResult:
        """Read whole batches of a partition this broker leads, for a consumer or a follower.

        Consumers (``replica_id`` < 0) read below the high watermark, or with
        ``isolation_level=1`` (read_committed) below the last stable offset and also get the
        aborted transactions overlapping [fetch_offset, LSO). A follower (``replica_id`` >= 0, a
        replica of the partition, else NOT_LEADER_OR_FOLLOWER) reads up to the log end offset;
        its ``fetch_offset`` records how far it has replicated, which may advance the high
        watermark. ``max_bytes`` <= 0 without ``min_one_batch`` reads nothing (offsets only).
        Partition-level errors (unknown partition, not leader, KIP-320 epoch fencing) raise; a
        read error (OFFSET_OUT_OF_RANGE) comes back in ``error`` with the offsets filled in.
        """
        p = self.partition(topic, partition)
        _check_leader_epoch(current_leader_epoch, p.leader_epoch)
        plog = p.log
        follower = replica_id >= 0
        if follower and (replica_id not in p.replicas or replica_id == p.leader_id):
            raise NotLeaderOrFollowerError(f"broker {replica_id} is not a follower of {topic}-{partition}")
        read_committed = isolation_level == READ_COMMITTED and not follower
        if follower:
            max_offset = plog.log_end_offset
        else:
            max_offset = plog.last_stable_offset if read_committed else plog.high_watermark
        records: LogReadSlice | None = None
        aborted: list[AbortedTxn] | None = [] if read_committed else None
        error: KafkaError | None = None
        try:
            if max_bytes > 0 or min_one_batch:
                records = plog.read_slice(
                    fetch_offset, max(max_bytes, 0), max_offset=max_offset, min_one_batch=min_one_batch
                )
        except OffsetOutOfRangeError as e:
            error = e
        else:
            if follower:
                # Only a valid fetch offset proves what the follower holds (Kafka updates the
                # follower's state after a successful read); the HW in the answer includes it.
                p.update_follower_fetch_state(replica_id, fetch_offset)
        lso = plog.last_stable_offset
        if records is not None and read_committed:
            aborted = plog.aborted_transactions(fetch_offset, lso)
        return LogReadResult(
            records, plog.high_watermark, lso, plog.log_start_offset, plog.log_end_offset, aborted, error
        )

    def fetch_offset_for_timestamp(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        *,
        isolation_level: int = READ_UNCOMMITTED,
        current_leader_epoch: int = -1,
    ) -> OffsetForTimestamp:
        """ListOffsets for one partition this broker leads.

        Special timestamps: -2 earliest and -4 earliest local (the log start offset), -1 latest
        (the high watermark, or the last stable offset for read_committed), -3 the first record
        with the largest timestamp, -5 latest tiered (-1: nothing is tiered); other negative
        values are INVALID_REQUEST. Otherwise the first record with a timestamp at or after
        ``timestamp`` that a reader of ``isolation_level`` may see, or offset -1.
        """
        p = self.partition(topic, partition)
        _check_leader_epoch(current_leader_epoch, p.leader_epoch)
        plog = p.log
        epoch = p.leader_epoch
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetForTimestamp(plog.log_start_offset, -1, epoch)
        if timestamp == LATEST_TIMESTAMP:
            latest = plog.last_stable_offset if isolation_level == READ_COMMITTED else plog.high_watermark
            return OffsetForTimestamp(latest, -1, epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return OffsetForTimestamp(-1, -1, epoch)  # no tiered storage: nothing is tiered
        if timestamp == MAX_TIMESTAMP:
            found = plog.max_timestamp_offset()
            if found is None:
                return OffsetForTimestamp(-1, -1, epoch)
            return OffsetForTimestamp(found[0], found[1], epoch)
        if timestamp < 0:
            raise InvalidRequestError(f"unknown special timestamp {timestamp}")
        found = plog.offset_for_timestamp(timestamp)
        if found is not None:
            limit = plog.last_stable_offset if isolation_level == READ_COMMITTED else plog.high_watermark
            if found[0] < limit:
                return OffsetForTimestamp(found[0], found[1], epoch)
        return OffsetForTimestamp(-1, -1, epoch)

    def end_offset_for_leader_epoch(
        self, topic: str, partition: int, leader_epoch: int, *, current_leader_epoch: int = -1
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch on the leader: ``(epoch, end offset)`` from the leader-epoch cache
        (the largest epoch <= ``leader_epoch`` and where the next one starts, or the log end).

        As in Kafka, ``current_leader_epoch`` is checked against the partition's epoch before
        leadership: a follower answers FENCED/UNKNOWN_LEADER_EPOCH before NOT_LEADER_OR_FOLLOWER."""
        p = self._hosted(topic, partition)
        _check_leader_epoch(current_leader_epoch, p.leader_epoch)
        if p.leader_id != self.node_id:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} is not the leader of {topic}-{partition}")
        return p.log.end_offset_for_epoch(leader_epoch)

    # ------------------------------------------------------------------ admin
    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset``; return the new one.

        ``offset`` -1 means the high watermark. POLICY_VIOLATION if the topic's
        ``cleanup.policy`` lacks ``delete``; OFFSET_OUT_OF_RANGE for another negative offset or
        one beyond the high watermark. An offset at or below the log start offset changes nothing.
        """
        p = self.partition(topic, partition)
        plog = p.log
        if not plog.config.delete_enabled:
            raise PolicyViolationError(
                f"Records of partition {topic}-{partition} can not be deleted due to the configured policy"
            )
        hw = plog.high_watermark
        target = hw if offset == -1 else offset
        if target < 0:
            raise OffsetOutOfRangeError(f"The offset {target} for partition {topic}-{partition} is not valid")
        if target > hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {target} of partition {topic}-{partition} "
                f"since it is larger than the high watermark {hw}"
            )
        return plog.delete_records_before(target)

    def active_producers(self, topic: str, partition: int) -> list[ProducerStateEntry]:
        """DescribeProducers: the producer states the leader keeps, by producer id."""
        plog = self.partition(topic, partition).log
        return [e for _pid, e in sorted(plog.producer_state.producers.items())]

    def describe_log_dirs(self) -> dict[Path, list[ReplicaInfo]]:
        """DescribeLogDirs: every configured log dir (in ``log.dirs`` order) with the partition
        replicas it stores, sorted by topic and partition."""
        lm = self.log_manager
        out: dict[Path, list[ReplicaInfo]] = {Path(d): [] for d in lm.log_dirs}
        for plog in sorted(lm.all_logs(), key=lambda lg: (lg.topic, lg.partition)):
            log_dir = lm.log_dir_of(plog.topic, plog.partition)
            if log_dir is None or Path(log_dir) not in out:
                continue
            out[Path(log_dir)].append(ReplicaInfo(plog.topic, plog.partition, plog.size_in_bytes))
        return out
