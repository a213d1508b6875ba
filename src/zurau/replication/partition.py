"""A partition replica hosted on this broker.

On a single node this broker is the leader of every partition and the ISR is ``{node_id}``, so the
high watermark follows the log end offset after each append. The ISR / follower machinery of
DESIGN.md plugs in here: ``maybe_advance_high_watermark`` is the single place the HW moves.

Invariants: high_watermark is monotonic and within [log_start_offset, log_end_offset];
last_stable_offset <= high_watermark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from zurau.protocol.errors import NotEnoughReplicasError
from zurau.storage.partition_log import PartitionLog


@dataclass
class Partition:
    topic: str
    index: int
    log: PartitionLog
    leader_id: int
    leader_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    on_new_data: Callable[[Partition], None] | None = None

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    def check_min_isr(self, acks: int, min_insync_replicas: int) -> None:
        """acks=all needs at least min.insync.replicas in the ISR, checked before appending."""
        if acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index}: ISR size {len(self.isr)} is below min.insync.replicas {min_insync_replicas}"
            )

    def maybe_advance_high_watermark(self) -> None:
        """With every ISR replica caught up (only the leader here), the HW reaches the LEO."""
        if self.isr == [self.leader_id]:
            self.log.update_high_watermark(self.log.log_end_offset)
        if self.on_new_data is not None:
            self.on_new_data(self)
