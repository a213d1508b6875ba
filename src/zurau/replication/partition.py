"""A partition replica hosted on this broker (Kafka's ``Partition``).

The leader keeps, for each follower replica, a :class:`FollowerState`: the log end offset its
last fetch proved (a fetch at offset ``o`` proves the follower holds everything below ``o``) and
when it was last *caught up* (Kafka's ``lastCaughtUpTimeMs``: a fetch at or beyond the leader's
log end offset at that time, or at or beyond the leader's log end offset at its previous fetch).

The ISR has two forms while an AlterPartition is in flight (Kafka's ``PendingExpandIsr`` /
``PendingShrinkIsr``): ``isr`` is the committed one (from the metadata image or the controller's
answer) and ``pending_isr`` the one asked for. The *maximal* ISR, their union, holds the high
watermark back: the high watermark is the smallest log end offset over the maximal ISR, the
leader's own included, so a replica being added must have the data before the HW passes it and
a replica being removed still counts until the controller has agreed. ``min.insync.replicas``
is checked against the committed ISR, and, with eligible leader replicas on (``elr_enabled``,
KIP-966), while the committed ISR is smaller than it (at most the replication factor) the high
watermark does not move at all (Kafka's ``maybeIncrementLeaderHW``): a replica that left the ISR
then holds every committed record, which is what makes it an eligible leader replica. :meth:`Partition.maybe_advance_high_watermark` is the single place the
high watermark moves.

Invariants: high_watermark is monotonic while this replica leads and lies within
[log_start_offset, log_end_offset]; last_stable_offset <= high_watermark; a follower without a
fetch since this replica became leader counts as having fetched nothing (it holds the high
watermark back until its first fetch, as in Kafka); ``partition_epoch`` never goes down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from zurau.protocol.errors import NotEnoughReplicasError
from zurau.storage.partition_log import PartitionLog


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower replica (Kafka's ``ReplicaState``)."""

    log_end_offset: int = -1  # -1: no fetch since this leader's epoch began
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_end_offset: int = -1  # the leader's log end offset at that fetch
    broker_epoch: int = -1  # from the fetch's ReplicaState (v15+), else -1


@dataclass(eq=False)
class Partition:
    topic: str
    index: int
    log: PartitionLog
    leader_id: int
    leader_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    partition_epoch: int = 0
    # Called after every append (records appended: True) and high watermark advance (False):
    # a hint for waiting fetches (followers read up to the LEO, so only appends concern them).
    on_new_data: Callable[[Partition, bool], None] | None = None
    # Called with the new high watermark each time it advances.
    on_high_watermark: Callable[[Partition, int], None] | None = None
    # follower replica id -> what its fetches told the leader (leader only)
    followers: dict[int, FollowerState] = field(default_factory=dict)
    # The ISR asked for in an AlterPartition still in flight (leader only), else None.
    pending_isr: list[int] | None = None
    # Offset where this replica's leadership (epoch) began: a follower must reach it to join the ISR.
    leader_epoch_start_offset: int = 0
    # After a refused ISR change, no new proposal before this time (ms).
    isr_retry_after_ms: int = 0
    # Eligible leader replicas are on (KIP-966): the high watermark holds below min ISR.
    elr_enabled: bool = False

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def maximal_isr(self) -> list[int]:
        """The committed ISR together with the one asked for (see the module docstring)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + [r for r in self.pending_isr if r not in self.isr]

    @property
    def under_min_isr(self) -> bool:
        """Is the committed ISR smaller than ``min.insync.replicas`` (at most the replication
        factor, Kafka's ``effectiveMinIsr``)?"""
        return len(self.isr) < min(self.log.config.min_insync_replicas, len(self.replicas) or 1)

    def check_min_isr(self, acks: int, min_insync_replicas: int) -> None:
        """acks=all needs at least min.insync.replicas in the ISR, checked before appending."""
        if acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index}: ISR size {len(self.isr)} is below min.insync.replicas {min_insync_replicas}"
            )

    def reset_followers(self, now_ms: int) -> None:
        """A new leader epoch: nothing is known of any follower; ISR members count as caught up
        now (so they get a full ``replica.lag.time.max.ms`` to fetch), as in Kafka."""
        self.followers = {
            r: FollowerState(last_caught_up_ms=now_ms if r in self.isr else 0)
            for r in self.replicas
            if r != self.leader_id
        }

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, now_ms: int = 0, broker_epoch: int = -1
    ) -> bool:
        """Record that follower ``replica_id`` fetched at ``fetch_offset`` (so it holds every
        offset below it) at ``now_ms``, and advance the high watermark if that lets it move.
        False if ``replica_id`` is not a replica of this partition."""
        if replica_id not in self.replicas or replica_id == self.leader_id:
            return False
        state = self.followers.get(replica_id)
        if state is None:
            state = self.followers[replica_id] = FollowerState()
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif fetch_offset >= state.last_fetch_leader_end_offset >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.last_fetch_leader_end_offset = leo
        state.last_fetch_ms = now_ms
        state.broker_epoch = broker_epoch
        state.log_end_offset = min(fetch_offset, leo)
        self.maybe_advance_high_watermark(notify_data=False)
        return True

    def follower_end_offset(self, replica_id: int) -> int:
        state = self.followers.get(replica_id)
        return -1 if state is None else state.log_end_offset

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> list[int]:
        """ISR followers not caught up within ``max_lag_ms`` (Kafka's ``getOutOfSyncReplicas``)."""
        out = []
        for r in self.isr:
            if r == self.leader_id:
                continue
            state = self.followers.get(r)
            if state is None or now_ms - state.last_caught_up_ms > max_lag_ms:
                out.append(r)
        return out

    def in_sync_candidates(self, eligible: Callable[[int], bool]) -> list[int]:
        """Followers outside the maximal ISR that may join it: their log end offset has reached
        the high watermark and the start of this leader's epoch (Kafka's ``isFollowerInSync``),
        and ``eligible`` (a live broker) holds for them."""
        hw = self.log.high_watermark
        maximal = self.maximal_isr
        out = []
        for r in self.replicas:
            if r == self.leader_id or r in maximal:
                continue
            leo = self.follower_end_offset(r)
            if leo >= hw and leo >= self.leader_epoch_start_offset and eligible(r):
                out.append(r)
        return out

    def maybe_advance_high_watermark(self, *, notify_data: bool = True) -> bool:
        """Move the high watermark up to the smallest log end offset in the maximal ISR; True
        if it moved.

        Listeners (``on_high_watermark``) hear of every advance; ``on_new_data`` is called
        after an append (``notify_data``, its flag True) or an advance (False), so that waiting
        fetches re-read (a follower's only after an append).
        """
        log = self.log
        if self.elr_enabled and self.under_min_isr:
            # KIP-966 (Kafka's maybeIncrementLeaderHW): below min.insync.replicas the high
            # watermark stays, so every replica that left the ISR meanwhile (the eligible
            # leader replicas) still holds every committed record.
            if notify_data and self.on_new_data is not None:
                self.on_new_data(self, notify_data)
            return False
        target = log.log_end_offset
        isr = self.maximal_isr
        if len(isr) > 1:
            leader = self.leader_id
            followers = self.followers
            for r in isr:
                if r != leader:
                    state = followers.get(r)
                    o = -1 if state is None else state.log_end_offset
                    if o < target:
                        target = o
        advanced = False
        old = log.high_watermark
        if target > old:
            new = log.update_high_watermark(target)
            if new > old:
                advanced = True
                if self.on_high_watermark is not None:
                    self.on_high_watermark(self, new)
        if (notify_data or advanced) and self.on_new_data is not None:
            self.on_new_data(self, notify_data)
        return advanced
