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
* **Fetch** (:meth:`ReplicaManager.fetch`, :mod:`zurau.replication.delayed_fetch`): a parsed
  :class:`~zurau.replication.fetch_params.FetchParams` is read partition by partition, idle
  partitions of a sessionless consumer fetch from precomputed bytes, and a fetch short of
  ``min_bytes`` waits in the fetch purgatory (on this manager's clock) for appends.
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
* **Leadership** comes from the metadata image (:meth:`make_leader`, :meth:`make_follower`). A
  new leader epoch is written to the leader-epoch cache at the log end offset before any append
  of that epoch, so OffsetForLeaderEpoch and diverging-epoch answers are right from the start; a
  follower hands the partition to the replica fetchers (``fetchers``) and its log is changed only
  by :meth:`append_as_follower` and the truncations the fetchers decide.
* **ISR changes** are the leader's proposals: a follower that has caught up is added
  (:meth:`maybe_expand_isr`, after each of its fetches), one that lags more than
  ``replica.lag.time.max.ms`` removed (:meth:`maybe_shrink_isr`, periodically); each proposal goes
  to ``isr_change_sender`` (AlterPartition to the controller) and at most one per partition is in
  flight; :meth:`apply_isr_change` takes the controller's answer.

Transactions: with ``txn_verifier`` set (``transaction.partition.verification.enable``, KIP-890),
the first transactional batch of a producer in a partition (no transaction of it open there yet)
is accepted only if the coordinator says the partition belongs to that producer's ongoing
transaction at that epoch; so a late or zombie write can never open a transaction nobody will end
(a "hanging" transaction).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from zurau.clock import Clock
from zurau.protocol.errors import (
    FencedLeaderEpochError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidRequestError,
    KafkaError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetMovedToTieredStorageError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.records.batch import iter_batches, validate_batches
from zurau.protocol.records.control import build_control_batch
from zurau.replication import delayed_fetch
from zurau.replication.delayed_fetch import FetchResult, WaitKeys
from zurau.replication.fetch_params import (
    CONSUMER_REPLICA_ID,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchParams,
    FetchTopic,
)
from zurau.replication.partition import FollowerState, Partition
from zurau.replication.purgatory import DelayedProduce, FetchPurgatory, ProducePurgatory, TopicPartitionKey
from zurau.replication.replica_selector import ReplicaSelector, ReplicaView
from zurau.replication.replication_quota import ReplicationQuota
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.log_validator import convert_compression, needs_conversion, target_codec
from zurau.storage.partition_log import AppendResult, LogReadSlice, PartitionLog
from zurau.storage.producer_state import ProducerStateEntry
from zurau.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from zurau.replication.tiered.tiered_storage import TieredStorage

log = logging.getLogger("zurau.replication")

# Called with (topic, partition, new high watermark) each time a partition's high watermark advances.
HighWatermarkListener = Callable[[str, int, int], None]

# (topic, partition, producer id, producer epoch) -> None if the transactional write may go ahead,
# else the error to answer it with.
TxnVerifier = Callable[[str, int, int, int], KafkaError | None]

# A refused or failed ISR change is proposed again no sooner than this (Kafka retries its
# AlterPartition after ``retry.backoff.ms``).
ISR_RETRY_BACKOFF_MS = 100

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


def _tiered_out_of_range(e: KafkaError) -> KafkaError:
    """A consumer's fetch below a tiered log's local start on a broker without a remote tier
    to read from: OFFSET_OUT_OF_RANGE (a follower gets OFFSET_MOVED_TO_TIERED_STORAGE itself,
    as from Kafka's leader)."""
    return OffsetOutOfRangeError(str(e))


class RemoteRead(NamedTuple):
    """A consumer's read that the remote tier must serve (Kafka's ``RemoteStorageFetchInfo``):
    ``fetch_offset`` lies below the log's local start; the fetch path reads it asynchronously
    through :attr:`ReplicaManager.tiered` before it answers."""

    topic: str
    partition: int
    log: PartitionLog
    fetch_offset: int
    max_bytes: int
    min_one_batch: bool
    read_committed: bool


class LogReadResult(NamedTuple):
    """One partition's part of a fetch (Kafka's ``LogReadResult``).

    The offsets are always filled in for a hosted partition, even when the read itself failed
    (``error``, e.g. OFFSET_OUT_OF_RANGE), as Kafka answers them. ``diverging_epoch`` (follower
    fetches, KIP-320): ``(epoch, end offset)`` when the follower's log diverges from the
    leader's; then nothing is read and the follower truncates before fetching again.
    """

    records: LogReadSlice | None  # whole batches as a range of one segment file, or None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    aborted_transactions: list[AbortedTxn] | None  # read_committed consumers only
    error: KafkaError | None
    diverging_epoch: tuple[int, int] | None = None
    remote: RemoteRead | None = None  # the read must be served from the remote tier


class FollowerFetchers(Protocol):
    """The replica fetchers, as the replica manager tells them what to follow."""

    def add_partition(self, p: Partition) -> None:
        """Fetch ``p`` from its leader (``p.leader_id``) at ``p.leader_epoch``, from the log end."""
        ...

    def remove_partition(self, topic: str, index: int) -> None: ...


# (partition, requested ISR) -> None: sends an AlterPartition; the answer comes back through
# ReplicaManager.apply_isr_change.
IsrChangeSender = Callable[[Partition, list[int]], None]


class OffsetForTimestamp(NamedTuple):
    offset: int  # -1 when no record matches
    timestamp: int  # -1 unless a record was found by timestamp
    leader_epoch: int


class ReplicaInfo(NamedTuple):
    """A partition replica stored in a log dir (DescribeLogDirs)."""

    topic: str
    partition: int
    size: int  # bytes of all its segment files


def _open_transaction(p: Partition, producer_id: int, producer_epoch: int) -> bool:
    """Whether the producer has a transaction open in ``p`` at ``producer_epoch`` (Kafka's
    ``hasOngoingTransaction``). A batch at another epoch starts a new transaction as far as
    verification goes: with transactions v2 the next transaction's epoch is the previous one's
    plus one, and its first batch may meet the previous one still open here (its marker not yet
    written), which it must not join."""
    entry = p.log.producer_entry(producer_id)
    return entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == producer_epoch


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
        clock: Clock,
    ) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self.log_config_for = log_config_for
        self.clock = clock  # ISR lag and fetch times, and the purgatories' timers
        self.purgatory = FetchPurgatory(clock)
        self.produce_purgatory = ProducePurgatory(clock)
        self._partitions: dict[tuple[str, int], Partition] = {}
        self.elr_enabled = False  # KIP-966, from the image's finalized features (set_elr_enabled)
        self.txn_verifier: TxnVerifier | None = None
        self._hw_listeners: list[HighWatermarkListener] = []
        self._resign_listeners: list[Callable[[str, int], None]] = []
        # Cluster wiring (None / permissive on a single node).
        self.fetchers: FollowerFetchers | None = None
        self.isr_change_sender: IsrChangeSender | None = None
        self.broker_live: Callable[[int], bool] = lambda _b: True
        # Fetch from follower (KIP-392): ``replica.selector.class`` and each broker's rack.
        self.replica_selector: ReplicaSelector | None = None
        self.broker_rack: Callable[[int], str | None] = lambda _b: None
        self.follower_consumer_reads = 0  # consumer reads this broker served as a follower
        # ISR changes this leader proposed and the controller accepted (Kafka's IsrShrinksPerSec
        # and IsrExpandsPerSec, as totals).
        self.isr_shrinks = 0
        self.isr_expands = 0
        # Replication throttle of the leader side (leader.replication.throttled.*); None: none.
        self.leader_quota: ReplicationQuota | None = None
        # The fetchers' follower-side throttle, kept here for the metrics only.
        self.follower_quota: ReplicationQuota | None = None
        # The remote tier (tiered storage): consumer reads below a tiered log's local start are
        # served through it; None: such reads answer OFFSET_OUT_OF_RANGE.
        self.tiered: TieredStorage | None = None

    # ------------------------------------------------------------------ hosting
    def _open(self, topic: str, index: int) -> tuple[Partition, bool]:
        """The partition's replica, opening (or creating) its log if needed; True if new."""
        key = (topic, index)
        p = self._partitions.get(key)
        if p is not None:
            return p, False
        config = self.log_config_for(topic)
        log_ = self.log_manager.get(topic, index)
        if log_ is None:
            log_ = self.log_manager.get_or_create(topic, index, config)
        elif log_.config != config:
            # Loaded at start with the config its topic had then: the image decides from now on.
            log_.update_config(config)
        p = Partition(
            topic,
            index,
            log_,
            leader_id=-1,
            on_new_data=self._on_new_data,
            on_high_watermark=self._on_high_watermark,
            elr_enabled=self.elr_enabled,
        )
        self._partitions[key] = p
        return p, True

    def host(self, topic: str, index: int) -> Partition:
        """Open (or create) the local log for a partition this broker leads as its sole replica."""
        p, new = self._open(topic, index)
        if new:
            # Sole replica: everything in the local log is committed. After a crash the stored
            # high watermark may be stale, so it is brought to the log end at load.
            p.log.update_high_watermark(p.log.log_end_offset)
            p.leader_id = self.node_id
            p.replicas = [self.node_id]
            p.isr = [self.node_id]
        return p

    def make_leader(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int,
        replicas: list[int],
        isr: list[int],
        partition_epoch: int | None = None,
    ) -> Partition:
        """Lead a partition at ``leader_epoch`` with these replicas and ISR (this broker included).

        A new leader epoch (or a partition this broker did not lead) starts afresh: the epoch is
        written to the leader-epoch cache at the log end offset, the fetchers drop the partition,
        nothing is known of the followers, and the high watermark waits for every ISR follower to
        fetch (as in Kafka). The same epoch again (an ISR change through the metadata) only takes
        the new replicas, ISR and partition epoch; an image older than the partition state this
        leader already has (a lower ``partition_epoch``) changes nothing.
        """
        p, _new = self._open(topic, index)
        plog = p.log
        if p.leader_id != self.node_id or p.leader_epoch != leader_epoch:
            if self.fetchers is not None:
                self.fetchers.remove_partition(topic, index)
            p.leader_id = self.node_id
            p.leader_epoch = leader_epoch
            p.replicas = list(replicas)
            p.isr = list(isr)
            p.pending_isr = None
            if partition_epoch is not None:
                p.partition_epoch = partition_epoch
            plog.assign_leader_epoch(leader_epoch, plog.log_end_offset)
            p.leader_epoch_start_offset = plog.log_end_offset
            p.reset_followers(self.clock.now_ms())
            log.info("%s-%d: leader at epoch %d, ISR %s", topic, index, leader_epoch, p.isr)
        elif partition_epoch is None or partition_epoch >= p.partition_epoch:
            p.replicas = list(replicas)
            p.isr = list(isr)
            if partition_epoch is not None:
                if partition_epoch > p.partition_epoch:
                    p.pending_isr = None  # the controller decided (our change or another)
                p.partition_epoch = partition_epoch
            now = self.clock.now_ms()
            for r in p.replicas:
                if r != self.node_id and r not in p.followers:
                    p.followers[r] = FollowerState(last_caught_up_ms=now)
        p.maybe_advance_high_watermark(notify_data=False)
        if self.produce_purgatory:
            key = (topic, index)
            if self.produce_purgatory.has_watchers(key):
                self.produce_purgatory.check(key, plog.high_watermark, self._acks_error(p))
        return p

    def make_follower(
        self,
        topic: str,
        index: int,
        *,
        leader_id: int,
        leader_epoch: int,
        replicas: list[int] | None = None,
        isr: list[int] | None = None,
        partition_epoch: int | None = None,
    ) -> Partition:
        """Follow ``leader_id`` (-1: no leader now) for a partition: waiting acks=all produces on
        it fail with NOT_LEADER_OR_FOLLOWER; later appends come through
        :meth:`append_as_follower`. A new leader or epoch hands the partition to the fetchers,
        which start from the log end offset (and truncate where the leader's log diverges)."""
        p, new = self._open(topic, index)
        was_leader = p.leader_id == self.node_id
        changed = new or p.leader_id != leader_id or p.leader_epoch != leader_epoch
        p.leader_id = leader_id
        p.leader_epoch = leader_epoch
        if replicas is not None:
            p.replicas = list(replicas)
        if isr is not None:
            p.isr = list(isr)
        if partition_epoch is not None:
            p.partition_epoch = partition_epoch
        p.followers = {}
        p.pending_isr = None
        self.produce_purgatory.fail((topic, index), NotLeaderOrFollowerError.code)
        self.purgatory.notify(topic, index)
        if was_leader:
            self._resigned(topic, index)
        if changed and self.fetchers is not None:
            if leader_id >= 0 and leader_id != self.node_id:
                self.fetchers.add_partition(p)
            else:
                self.fetchers.remove_partition(topic, index)
            log.info("%s-%d: follower of %d at epoch %d", topic, index, leader_id, leader_epoch)
        return p

    def _on_new_data(self, p: Partition, appended: bool) -> None:
        self.purgatory.notify(p.topic, p.index, data=appended)

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

    @property
    def hosted_partitions(self) -> Mapping[tuple[str, int], Partition]:
        """Every replica hosted here by (topic, partition), read-only (the Fetch handler's idle
        check looks partitions up here without a call per partition)."""
        return self._partitions

    def stop_hosting(self, topic: str, index: int, delete: bool) -> None:
        if self.fetchers is not None:
            self.fetchers.remove_partition(topic, index)
        p = self._partitions.pop((topic, index), None)
        if p is not None and delete:
            self.log_manager.delete_partition(topic, index)
        self.produce_purgatory.fail((topic, index), NotLeaderOrFollowerError.code)
        self.purgatory.notify(topic, index)
        if p is not None and p.leader_id == self.node_id:
            self._resigned(topic, index)

    def update_config(self, topic: str) -> None:
        cfg = self.log_config_for(topic)
        for (t, _i), p in self._partitions.items():
            if t == topic:
                p.log.update_config(cfg)

    def set_elr_enabled(self, enabled: bool) -> None:
        """Eligible leader replicas turned on or off (the finalized feature changed): every
        partition's high watermark holds below min ISR, or no longer (KIP-966)."""
        if enabled == self.elr_enabled:
            return
        self.elr_enabled = enabled
        for p in self._partitions.values():
            p.elr_enabled = enabled
            if not enabled and p.leader_id == self.node_id:
                p.maybe_advance_high_watermark(notify_data=False)

    def update_all_configs(self) -> None:
        """Every hosted log takes its topic's config again (the broker's dynamic configs changed)."""
        for (t, _i), p in self._partitions.items():
            p.log.update_config(self.log_config_for(t))

    # ------------------------------------------------------------------ committed data (coordinators)
    def add_high_watermark_listener(self, listener: HighWatermarkListener) -> None:
        """Call ``listener(topic, partition, new_high_watermark)`` whenever the high watermark of
        a partition this broker leads advances. On one node that is synchronously right after
        the append (the sole replica is the whole ISR); with followers, when the last ISR
        replica has fetched the data. An exception from a listener is logged and ignored."""
        self._hw_listeners.append(listener)

    def add_resign_listener(self, listener: Callable[[str, int], None]) -> None:
        """Call ``listener(topic, partition)`` when this broker stops leading a partition (it
        becomes a follower, or stops hosting it): writes waiting for its high watermark here
        will never see it pass."""
        self._resign_listeners.append(listener)

    def _resigned(self, topic: str, index: int) -> None:
        for listener in self._resign_listeners:
            try:
                listener(topic, index)
            except Exception:
                log.exception("resign listener failed for %s-%d", topic, index)

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
        txn_verified: bool = False,
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
        writable the log patches offsets into it rather than into a copy. ``txn_verified=True``:
        the caller verified the transactional batches with a remote transaction coordinator
        (see :meth:`txn_verification_needed`), so the local ``txn_verifier`` is not asked.
        """
        if origin is _REPLICATION:
            raise ValueError("replicated batches go through append_as_follower")
        p = self.partition(topic, partition)
        plog = p.log
        cfg = plog.config
        p.check_min_isr(required_acks, cfg.min_insync_replicas)
        batches = validate_batches(records)
        verifier = None if txn_verified else self.txn_verifier
        client = origin is _CLIENT
        for _pos, h in batches:
            if h.is_control and client:
                raise InvalidRecordError("clients may not produce control batches")
            if verifier is not None and h.is_transactional and not h.is_control:
                if not _open_transaction(p, h.producer_id, h.producer_epoch):
                    err = verifier(topic, partition, h.producer_id, h.producer_epoch)
                    if err is not None:
                        raise err
        payload: bytes | bytearray | memoryview = records
        codec = target_codec(cfg.compression_type)
        if needs_conversion(batches, codec):
            assert codec is not None
            payload, batches = convert_compression(records, batches, codec, cfg.compression_level)
        if payload is not records:
            in_place = True  # a fresh buffer of our own
        elif in_place:
            in_place = isinstance(records, bytearray) or (
                isinstance(records, memoryview) and not records.readonly
            )
        result = plog.append(
            payload, leader_epoch=p.leader_epoch, now_ms=self.clock.now_ms(), validated=batches, in_place=in_place
        )
        if not result.duplicate:
            p.maybe_advance_high_watermark()
        return result

    def txn_verification_needed(
        self, topic: str, partition: int, records: bytes | bytearray | memoryview, *, add_partition: bool = False
    ) -> tuple[int, int] | None:
        """(producer id, epoch) of a transactional batch in ``records`` that would need KIP-890
        verification here (its producer has no transaction open in this partition yet at that
        epoch), else None. ``add_partition``: transactions v2 (Kafka's ``addPartition``): the
        partition must be added to the transaction by its coordinator, whether or not
        verification is enabled. Only headers are read (no CRC check: the append validates); a
        partition this broker does not lead, or a payload too short to hold a header, needs
        nothing (the append reports those errors)."""
        if self.txn_verifier is None and not add_partition:
            return None
        p = self._partitions.get((topic, partition))
        if p is None or p.leader_id != self.node_id:
            return None
        for _pos, h in iter_batches(records):
            if h.is_transactional and not h.is_control and not _open_transaction(p, h.producer_id, h.producer_epoch):
                return h.producer_id, h.producer_epoch
        return None

    def append_markers(
        self,
        topic: str,
        index: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> AppendResult:
        """Append a COMMIT (``commit``) or ABORT marker for a producer: the coordinators' path.

        The marker ends the producer's open transaction in the partition (an ABORT is indexed
        in ``.txnindex``) and the high watermark advances as for any append (acks=all: the ISR
        must satisfy ``min.insync.replicas``). A marker with an epoch older than the producer's
        gets INVALID_PRODUCER_EPOCH; one for a producer with no open transaction ends nothing.
        With ``transaction_version`` >= 2 (transactions v2, WriteTxnMarkers v2) the coordinator
        bumped the epoch for the marker, so it must be *above* the producer's epoch here: one
        at that epoch is a late or duplicate marker (INVALID_PRODUCER_EPOCH), as in Kafka 4.x.
        A marker above the data's epoch becomes the producer's epoch: data at the old epoch is
        refused afterwards (INVALID_PRODUCER_EPOCH).
        """
        p = self.partition(topic, index)
        if transaction_version >= 2:
            entry = p.log.producer_entry(producer_id)
            if entry is not None and entry.producer_epoch >= 0 and producer_epoch <= entry.producer_epoch:
                raise InvalidProducerEpochError(
                    f"transactions v2 marker of producer {producer_id} in {topic}-{index}: epoch "
                    f"{producer_epoch} is not above the producer's epoch {entry.producer_epoch}"
                )
        p.check_min_isr(-1, p.log.config.min_insync_replicas)
        now = self.clock.now_ms()
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
        result = p.log.append_as_follower(records, now_ms=self.clock.now_ms())
        if result.record_count:
            self.purgatory.notify(topic, partition)
        return result

    def update_follower_high_watermark(self, topic: str, partition: int, leader_high_watermark: int) -> int:
        """A follower learns the leader's high watermark from a fetch response: its own becomes
        that, capped at its log end offset (never lower than before). Returns it."""
        p = self._hosted(topic, partition)
        plog = p.log
        before = plog.high_watermark
        hw = plog.update_high_watermark(leader_high_watermark)
        if hw > before:
            self.purgatory.notify(topic, partition, data=False)  # consumers reading from this follower
        return hw

    # ------------------------------------------------------------------ follower side (fetchers)
    def _followed(self, topic: str, partition: int) -> Partition:
        p = self._hosted(topic, partition)
        if p.leader_id == self.node_id:
            raise NotLeaderOrFollowerError(f"broker {self.node_id} leads {topic}-{partition}: it does not follow")
        return p

    def follower_log_state(self, topic: str, partition: int) -> tuple[int, int, int]:
        """A followed partition's (log end offset, epoch of its last batch or -1, high watermark)."""
        plog = self._followed(topic, partition).log
        return plog.log_end_offset, plog.leader_epoch_cache.latest_epoch, plog.high_watermark

    def follower_end_offset_for_epoch(self, topic: str, partition: int, epoch: int) -> tuple[int, int]:
        """The local ``(epoch, end offset)`` answer of a followed partition for ``epoch``
        (largest local epoch <= it, where it ends; (-1, -1) if unknown)."""
        return self._followed(topic, partition).log.end_offset_for_epoch(epoch)

    def truncate_follower(self, topic: str, partition: int, offset: int) -> int:
        """Remove everything at and above ``offset`` from a followed partition (its log diverged
        from the leader's); returns the new log end offset."""
        p = self._followed(topic, partition)
        if offset < p.log.log_end_offset:
            log.info("%s-%d: truncating from %d to %d", topic, partition, p.log.log_end_offset, offset)
        p.log.truncate_to(offset)  # at or past the log end it still drops epochs that start there
        return p.log.log_end_offset

    def restart_follower_at(self, topic: str, partition: int, offset: int) -> None:
        """Empty a followed partition's log and restart it at ``offset`` (the leader's log starts
        after everything this replica holds)."""
        p = self._followed(topic, partition)
        log.info("%s-%d: log restarts at the leader's log start offset %d", topic, partition, offset)
        p.log.truncate_fully_and_start_at(offset)

    def install_follower_aux_state(
        self,
        topic: str,
        partition: int,
        next_offset: int,
        log_start_offset: int,
        epochs: Sequence[EpochEntry],
        producer_snapshot: bytes,
    ) -> None:
        """A followed partition of a tiered topic restarts at ``next_offset`` with the remote
        tier's state below it (Kafka's ``buildRemoteLogAuxState``; see
        ``PartitionLog.install_remote_aux_state``)."""
        p = self._followed(topic, partition)
        log.info(
            "%s-%d: log restarts at %d from remote storage (log start %d)",
            topic, partition, next_offset, log_start_offset,
        )
        p.log.install_remote_aux_state(next_offset, log_start_offset, epochs, producer_snapshot)

    def update_follower_log_start(self, topic: str, partition: int, leader_log_start_offset: int) -> None:
        """Follow the leader's log start offset (retention, DeleteRecords) up to the local high
        watermark."""
        plog = self._followed(topic, partition).log
        target = min(leader_log_start_offset, plog.high_watermark)
        if target > plog.log_start_offset:
            plog.delete_records_before(target)

    # ------------------------------------------------------------------ ISR (leader side)
    def maybe_expand_isr(self, p: Partition, replica_id: int) -> None:
        """After a fetch of follower ``replica_id``: propose adding it to the ISR of ``p`` if it
        has caught up (one proposal in flight per partition, as in Kafka)."""
        if self.isr_change_sender is None or p.pending_isr is not None or p.leader_id != self.node_id:
            return
        if replica_id in p.isr:  # in sync already (every fetch of a caught-up follower)
            return
        if p.isr_retry_after_ms and self.clock.now_ms() < p.isr_retry_after_ms:
            return
        joining = [r for r in p.in_sync_candidates(self.broker_live) if r == replica_id]
        if joining:
            new_isr = p.isr + joining
            p.pending_isr = new_isr
            log.info("%s-%d: proposing ISR expansion %s -> %s", p.topic, p.index, p.isr, new_isr)
            self.isr_change_sender(p, new_isr)

    def maybe_shrink_isr(self, max_lag_ms: int) -> int:
        """Propose removing from each led partition's ISR the followers that were not caught up
        within ``max_lag_ms`` (``replica.lag.time.max.ms``); returns how many proposals went."""
        if self.isr_change_sender is None:
            return 0
        now = self.clock.now_ms()
        sent = 0
        node = self.node_id
        for p in list(self._partitions.values()):
            if p.leader_id != node or p.pending_isr is not None or len(p.isr) <= 1 or now < p.isr_retry_after_ms:
                continue
            lagging = p.out_of_sync_replicas(now, max_lag_ms)
            if lagging:
                new_isr = [r for r in p.isr if r not in lagging]
                p.pending_isr = new_isr
                log.info("%s-%d: proposing ISR shrink %s -> %s (lagging %s)", p.topic, p.index, p.isr, new_isr, lagging)
                self.isr_change_sender(p, new_isr)
                sent += 1
        return sent

    def apply_isr_change(
        self,
        topic: str,
        partition: int,
        *,
        error_code: int,
        leader_epoch: int = -1,
        isr: list[int] | None = None,
        partition_epoch: int = -1,
    ) -> None:
        """The controller's answer to this leader's AlterPartition: on success (same leader
        epoch, a newer partition epoch) the committed ISR becomes ``isr``; in every case the
        proposal is no longer in flight, so a later check may propose again. A shrink may let
        the high watermark advance (and waiting acks=all produces complete). After an error no
        new proposal goes for ``ISR_RETRY_BACKOFF_MS``."""
        p = self._partitions.get((topic, partition))
        if p is None or p.leader_id != self.node_id:
            return
        p.pending_isr = None
        if error_code:
            log.info("%s-%d: AlterPartition refused with error %d", topic, partition, error_code)
            p.isr_retry_after_ms = self.clock.now_ms() + ISR_RETRY_BACKOFF_MS
            return
        if leader_epoch != p.leader_epoch or partition_epoch <= p.partition_epoch or isr is None:
            return  # stale: the metadata has moved on already
        if len(isr) < len(p.isr):
            self.isr_shrinks += 1
        elif len(isr) > len(p.isr):
            self.isr_expands += 1
        p.isr = list(isr)
        p.partition_epoch = partition_epoch
        p.maybe_advance_high_watermark(notify_data=False)
        if self.produce_purgatory:
            key = (topic, partition)
            if self.produce_purgatory.has_watchers(key):
                self.produce_purgatory.check(key, p.log.high_watermark, self._acks_error(p))

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
        return await self.produce_purgatory.wait(op, timeout_ms)

    # ------------------------------------------------------------------ reads
    def fetch(
        self,
        params: FetchParams,
        topics: list[FetchTopic],
        *,
        wait_keys: Callable[[], WaitKeys] | None = None,
        replan: Callable[[], list[FetchTopic]] | None = None,
        bytes_bound: Callable[[], int | None] | None = None,
        running: Callable[[], bool] = lambda: True,
        mark: int | None = None,
    ) -> FetchResult | Coroutine[Any, Any, FetchResult]:
        """A Fetch: the result of reading ``topics`` when that settles it, else a coroutine that
        waits for data (the long poll) and gives the result; see
        :func:`zurau.replication.delayed_fetch.fetch` for the arguments."""
        return delayed_fetch.fetch(
            self, params, topics, wait_keys=wait_keys, replan=replan, bytes_bound=bytes_bound, running=running,
            mark=mark,
        )

    def should_leader_throttle(self, topic: str, partition: int, replica_id: int) -> bool:
        """Whether this leader leaves ``topic-partition``'s records out of follower
        ``replica_id``'s fetch now (Kafka's ``shouldLeaderThrottle``): the follower is not in the
        ISR, the partition is in this broker's ``leader.replication.throttled.replicas`` and the
        leader quota is exceeded. An in-sync follower is never throttled."""
        quota = self.leader_quota
        if quota is None:
            return False
        p = self._partitions.get((topic, partition))
        if p is None or replica_id in p.isr:
            return False
        return quota.is_throttled(topic, partition) and quota.is_quota_exceeded()

    def fetch_mark(self) -> int:
        """The fetch purgatory's notification count now (see :meth:`FetchPurgatory.mark`)."""
        return self.purgatory.mark()

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
        last_fetched_epoch: int = -1,
        replica_epoch: int = -1,
        allow_follower: bool = False,
    ) -> LogReadResult:
        """Read whole batches of a partition this broker leads, for a consumer or a follower.

        ``allow_follower`` (a consumer's Fetch v11+, KIP-392): a partition this broker follows
        serves the consumer too, below its own high watermark (see :meth:`_read_as_follower`).

        Consumers (``replica_id`` < 0) read below the high watermark, or with
        ``isolation_level=1`` (read_committed) below the last stable offset and also get the
        aborted transactions overlapping [fetch_offset, LSO). A follower (``replica_id`` >= 0, a
        replica of the partition, else NOT_LEADER_OR_FOLLOWER) reads up to the log end offset;
        its ``fetch_offset`` records how far it has replicated, which may advance the high
        watermark. ``max_bytes`` <= 0 without ``min_one_batch`` reads nothing (offsets only).
        Partition-level errors (unknown partition, not leader, KIP-320 epoch fencing) raise; a
        read error (OFFSET_OUT_OF_RANGE) comes back in ``error`` with the offsets filled in.

        A follower's ``last_fetched_epoch`` (Fetch v12+, the epoch of its last batch) is checked
        against the leader-epoch cache first: if this leader's log has that epoch ending before
        ``fetch_offset``, or does not know it, the answer is ``diverging_epoch`` = (largest epoch
        <= it, where that epoch ends here) and nothing is read or recorded.
        """
        if allow_follower and replica_id < 0:
            p = self._hosted(topic, partition)
            if p.leader_id != self.node_id:
                return self._read_as_follower(
                    p, fetch_offset, max_bytes, isolation_level, min_one_batch, current_leader_epoch
                )
        else:
            p = self.partition(topic, partition)
        _check_leader_epoch(current_leader_epoch, p.leader_epoch)
        plog = p.log
        follower = replica_id >= 0
        if follower and (replica_id not in p.replicas or replica_id == p.leader_id):
            raise NotLeaderOrFollowerError(f"broker {replica_id} is not a follower of {topic}-{partition}")
        read_committed = isolation_level == READ_COMMITTED and not follower
        if follower and last_fetched_epoch >= 0:
            epoch, end = plog.end_offset_for_epoch(last_fetched_epoch)
            if epoch < last_fetched_epoch or end < fetch_offset:
                return LogReadResult(
                    None,
                    plog.high_watermark,
                    plog.last_stable_offset,
                    plog.log_start_offset,
                    plog.log_end_offset,
                    None,
                    None,
                    (epoch, end),
                )
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
        except OffsetMovedToTieredStorageError as e:
            if follower:
                error = e
            elif self.tiered is not None:
                remote = RemoteRead(
                    topic, partition, plog, fetch_offset, max(max_bytes, 0), min_one_batch, read_committed
                )
                return LogReadResult(
                    None, plog.high_watermark, plog.last_stable_offset, plog.log_start_offset,
                    plog.log_end_offset, aborted, None, None, remote,
                )
            else:
                error = _tiered_out_of_range(e)
        else:
            if follower:
                # Only a valid fetch offset proves what the follower holds (Kafka updates the
                # follower's state after a successful read); the HW in the answer includes it.
                p.update_follower_fetch_state(replica_id, fetch_offset, self.clock.now_ms(), replica_epoch)
                if self.isr_change_sender is not None and p.pending_isr is None:
                    self.maybe_expand_isr(p, replica_id)
        lso = plog.last_stable_offset
        if records is not None and read_committed:
            aborted = plog.aborted_transactions(fetch_offset, lso)
        return LogReadResult(
            records, plog.high_watermark, lso, plog.log_start_offset, plog.log_end_offset, aborted, error
        )

    def fetch_idle(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        current_leader_epoch: int,
        seen: tuple[int, int, int],
        *,
        replica_id: int = CONSUMER_REPLICA_ID,
        read_committed: bool = False,
        replica_epoch: int = -1,
    ) -> bool:
        """True when :meth:`read` of this led partition at ``fetch_offset`` would find no
        records, no error, and the same ``seen`` = (high watermark, last stable offset, log start
        offset): what an incremental fetch session (KIP-227) leaves out without reading. It
        costs a few attribute reads. A follower's idle fetch is recorded as a fetch (it is
        caught up), exactly as reading would. Consumers of a leader with a replica selector
        (KIP-392) are never idle here (they may be sent elsewhere)."""
        p = self._partitions.get((topic, partition))
        if p is None or p.leader_id != self.node_id:
            return False
        if current_leader_epoch >= 0 and current_leader_epoch != p.leader_epoch:
            return False
        plog = p.log
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        if (hw, lso, plog.log_start_offset) != seen:
            return False
        if replica_id < 0:
            return self.replica_selector is None and fetch_offset == (lso if read_committed else hw)
        if fetch_offset != plog.log_end_offset or not p.update_follower_fetch_state(
            replica_id, fetch_offset, self.clock.now_ms(), replica_epoch
        ):
            return False
        if self.isr_change_sender is not None and p.pending_isr is None:
            self.maybe_expand_isr(p, replica_id)
        return True

    def _read_as_follower(
        self,
        p: Partition,
        fetch_offset: int,
        max_bytes: int,
        isolation_level: int,
        min_one_batch: bool,
        current_leader_epoch: int,
    ) -> LogReadResult:
        """A consumer's read of a partition this broker follows (fetch from follower, KIP-392):
        below the high watermark the leader last told this follower (read_committed: below the
        last stable offset, capped the same way), with the aborted transactions of what it reads.
        An offset beyond this replica's log end is OFFSET_OUT_OF_RANGE (the consumer then asks the
        leader); one between its high watermark and log end reads nothing yet."""
        _check_leader_epoch(current_leader_epoch, p.leader_epoch)
        plog = p.log
        read_committed = isolation_level == READ_COMMITTED
        max_offset = plog.last_stable_offset if read_committed else plog.high_watermark
        records: LogReadSlice | None = None
        aborted: list[AbortedTxn] | None = [] if read_committed else None
        error: KafkaError | None = None
        self.follower_consumer_reads += 1
        try:
            if max_bytes > 0 or min_one_batch:
                records = plog.read_slice(
                    fetch_offset, max(max_bytes, 0), max_offset=max_offset, min_one_batch=min_one_batch
                )
        except OffsetOutOfRangeError as e:
            error = e
        except OffsetMovedToTieredStorageError as e:
            if self.tiered is None:
                error = _tiered_out_of_range(e)
            else:
                remote = RemoteRead(
                    p.topic, p.index, plog, fetch_offset, max(max_bytes, 0), min_one_batch, read_committed
                )
                return LogReadResult(
                    None, plog.high_watermark, plog.last_stable_offset, plog.log_start_offset,
                    plog.log_end_offset, aborted, None, None, remote,
                )
        lso = plog.last_stable_offset
        if records is not None and read_committed:
            aborted = plog.aborted_transactions(fetch_offset, lso)
        return LogReadResult(
            records, plog.high_watermark, lso, plog.log_start_offset, plog.log_end_offset, aborted, error
        )

    def preferred_read_replica(self, topic: str, partition: int, fetch_offset: int, client_rack: str) -> int:
        """KIP-392 on the leader: the replica a consumer (in ``client_rack``) fetching at
        ``fetch_offset`` should read from instead of this leader, or -1 (read here). Only live
        followers known to hold ``fetch_offset`` are candidates."""
        selector = self.replica_selector
        if selector is None:
            return -1
        p = self._partitions.get((topic, partition))
        if p is None or p.leader_id != self.node_id:
            return -1
        now = self.clock.now_ms()
        rack = self.broker_rack
        views = [ReplicaView(self.node_id, rack(self.node_id), p.log.log_end_offset, 0, True)]
        for r, state in p.followers.items():
            if r in p.replicas and state.log_end_offset >= fetch_offset and self.broker_live(r):
                views.append(ReplicaView(r, rack(r), state.log_end_offset, max(now - state.last_caught_up_ms, 0), False))
        chosen = selector(views, client_rack)
        return -1 if chosen == self.node_id else chosen

    def fetch_offset_for_timestamp(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        *,
        isolation_level: int = READ_UNCOMMITTED,
        current_leader_epoch: int = -1,
        client_request: bool = False,
    ) -> OffsetForTimestamp:
        """ListOffsets for one partition this broker leads.

        ``client_request`` (a consumer's, not a replica's): the latest offset is refused with
        OFFSET_NOT_AVAILABLE while the high watermark is below the start of this leader's epoch
        (KIP-207; it has not caught up since the election).

        Special timestamps: -2 earliest (the log start offset), -4 earliest local (the local log
        start offset of a tiered log, with the epoch that wrote it; else as -2), -1 latest
        (the high watermark, or the last stable offset for read_committed), -3 the first record
        with the largest timestamp, -5 latest tiered (the last offset copied to remote storage and
        its epoch; -1 when nothing is, or the log is not tiered); other negative
        values are INVALID_REQUEST. Otherwise the first record with a timestamp at or after
        ``timestamp`` that a reader of ``isolation_level`` may see, or offset -1.
        """
        p = self.partition(topic, partition)
        _check_leader_epoch(current_leader_epoch, p.leader_epoch)
        plog = p.log
        epoch = p.leader_epoch
        if timestamp == EARLIEST_TIMESTAMP or (
            timestamp == EARLIEST_LOCAL_TIMESTAMP and not plog.remote_log_enabled
        ):
            return OffsetForTimestamp(plog.log_start_offset, -1, epoch)
        if timestamp == EARLIEST_LOCAL_TIMESTAMP:
            local_start = plog.local_log_start_offset
            return OffsetForTimestamp(local_start, -1, plog.leader_epoch_cache.epoch_for_offset(local_start))
        if timestamp == LATEST_TIMESTAMP:
            if client_request and p.leader_epoch_start_offset > plog.high_watermark:
                # KIP-207: a new leader's high watermark is not known to be final until it reaches
                # the start of its epoch; an answer below what the last leader gave could make a
                # consumer's end offset go backwards
                raise OffsetNotAvailableError(
                    f"the high watermark {plog.high_watermark} of {topic}-{partition} has not reached "
                    f"the start offset {p.leader_epoch_start_offset} of leader epoch {epoch} yet"
                )
            latest = plog.last_stable_offset if isolation_level == READ_COMMITTED else plog.high_watermark
            return OffsetForTimestamp(latest, -1, epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            if not plog.remote_log_enabled:
                return OffsetForTimestamp(-1, -1, -1)
            highest = plog.highest_offset_in_remote
            tiered_epoch = plog.leader_epoch_cache.epoch_for_offset(highest) if highest >= 0 else -1
            return OffsetForTimestamp(highest, -1, tiered_epoch)
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

    def tiered_timestamp_log(self, topic: str, partition: int, timestamp: int) -> PartitionLog | None:
        """The log of ``topic-partition`` when a ListOffsets for ``timestamp`` must also search
        the remote tier (a tiered log holding records below its local start), else None."""
        if self.tiered is None or timestamp < 0:
            return None
        p = self._partitions.get((topic, partition))
        if p is None or p.leader_id != self.node_id:
            return None
        plog = p.log
        if plog.remote_log_enabled and plog.log_start_offset < plog.local_log_start_offset:
            return plog
        return None

    async def remote_offset_for_timestamp(
        self, topic: str, partition: int, plog: PartitionLog, timestamp: int, *, isolation_level: int
    ) -> OffsetForTimestamp | None:
        """The first record at or after ``timestamp`` in the remote tier a reader of
        ``isolation_level`` may see (records there are below the high watermark, and below the
        last stable offset: only segments wholly below it are copied), or None."""
        if self.tiered is None:
            return None
        found = await self.tiered.offset_for_timestamp(topic, partition, plog, timestamp)
        p = self._partitions.get((topic, partition))
        if found is None or p is None:
            return None
        limit = plog.last_stable_offset if isolation_level == READ_COMMITTED else plog.high_watermark
        if found[0] >= limit:
            return None
        return OffsetForTimestamp(found[0], found[1], p.leader_epoch)

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
