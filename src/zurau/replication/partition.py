"""A partition replica hosted on this broker (Kafka's ``Partition``).

The leader keeps, for each follower replica, the log end offset it last fetched from (a fetch at
offset ``o`` proves the follower holds everything below ``o``). The high watermark is the smallest
log end offset over the ISR, the leader's own included; :meth:`Partition.maybe_advance_high_watermark`
is the single place it moves. On a single node the ISR is ``[leader]``, so the high watermark
follows the log end offset right after each append.

Invariants: high_watermark is monotonic while this replica leads and lies within
[log_start_offset, log_end_offset]; last_stable_offset <= high_watermark; a follower missing from
``follower_end_offsets`` counts as having fetched nothing (it holds the high watermark back until
its first fetch, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from zurau.protocol.errors import NotEnoughReplicasError
from zurau.storage.partition_log import PartitionLog


@dataclass(eq=False)
class Partition:
    topic: str
    index: int
    log: PartitionLog
    leader_id: int
    leader_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    # Called after every append (a hint for waiting fetches; followers read up to the LEO).
    on_new_data: Callable[[Partition], None] | None = None
    # Called with the new high watermark each time it advances.
    on_high_watermark: Callable[[Partition, int], None] | None = None
    # follower replica id -> log end offset proven by its last fetch
    follower_end_offsets: dict[int, int] = field(default_factory=dict)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def check_min_isr(self, acks: int, min_insync_replicas: int) -> None:
        """acks=all needs at least min.insync.replicas in the ISR, checked before appending."""
        if acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index}: ISR size {len(self.isr)} is below min.insync.replicas {min_insync_replicas}"
            )

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> bool:
        """Record that follower ``replica_id`` fetched at ``fetch_offset`` (so it holds every
        offset below it) and advance the high watermark if that lets it move. False if
        ``replica_id`` is not a replica of this partition."""
        if replica_id not in self.replicas or replica_id == self.leader_id:
            return False
        known = self.follower_end_offsets.get(replica_id, -1)
        if fetch_offset > known:
            self.follower_end_offsets[replica_id] = min(fetch_offset, self.log.log_end_offset)
            self.maybe_advance_high_watermark(notify_data=False)
        return True

    def maybe_advance_high_watermark(self, *, notify_data: bool = True) -> bool:
        """Move the high watermark up to the smallest log end offset in the ISR; True if it moved.

        Listeners (``on_high_watermark``) hear of every advance; ``on_new_data`` is called too
        (after an append) so that waiting fetches re-read.
        """
        log = self.log
        target = log.log_end_offset
        if len(self.isr) > 1:
            leader = self.leader_id
            for r in self.isr:
                if r != leader:
                    o = self.follower_end_offsets.get(r, -1)
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
            self.on_new_data(self)
        return advanced
