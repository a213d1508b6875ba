"""Replica placement for new partitions (Kafka's ``StripedReplicaPlacer``) and the checks of a
manual assignment.

When the image has broker registrations, replicas go to *live* brokers only (unfenced, not in
controlled shutdown), striped over racks: the replicas of one partition come from as many
different racks as possible, leaders rotate over racks and over the brokers of each rack, and the
starting points are random. A partition's ISR is its live replicas and its leader the first of
them. When the image has no registrations (a single node that does not register), the brokers
come from ``brokers()`` (this node) and placement is round-robin from a random offset.

Invariants: the placer's only state is its random source, drawn from in a fixed order per call
(so a seeded placer places the same way every run); it never reads anything but the image and
``brokers()``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence

from zurau.metadata.image import MetadataImage
from zurau.metadata.records import MetadataRecord, PartitionRecord
from zurau.protocol.errors import InvalidReplicaAssignmentError, InvalidReplicationFactorError
from zurau.protocol.messages import CreateTopicsRequestTopicsAssignments


class ReplicaPlacer:
    def __init__(self, brokers: Callable[[], Sequence[int]], rng: random.Random) -> None:
        self.brokers = brokers
        self.rng = rng

    def place(
        self, image: MetadataImage, partitions: int, replication_factor: int, first: int = 0
    ) -> list[tuple[int, ...]]:
        """Replica lists for ``partitions`` new partitions (numbered from ``first``), the leader
        first; raises InvalidReplicationFactorError when the brokers cannot hold them."""
        if image.brokers:
            return self._stripe(image, partitions, replication_factor)
        brokers = sorted(self.brokers())
        if replication_factor > len(brokers):
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                f"factor of {replication_factor} cannot be reached because only {len(brokers)} broker(s) "
                "are registered."
            )
        start = self.rng.randrange(len(brokers))
        out = []
        for p in range(first, first + partitions):
            out.append(tuple(brokers[(start + p + r) % len(brokers)] for r in range(replication_factor)))
        return out

    def _stripe(self, image: MetadataImage, partitions: int, replication_factor: int) -> list[tuple[int, ...]]:
        """Rack-striped placement over the image's live brokers.

        Racks (brokers without a rack form one rack of their own) are put in a random order, and
        each rack's brokers are rotated by a random amount. Partition ``k`` takes its leader from
        rack ``(start + k) mod R`` and each further replica from the next rack that still has a
        broker unused by this partition, so a partition spans ``min(RF, R)`` racks. A rack moves
        its rotation on by one each time it supplies a leader, so leaders also rotate over the
        brokers within each rack.
        """
        usable = [b for b in image.brokers.values() if not b.in_controlled_shutdown]
        live = [b for b in usable if not b.fenced]
        prefix = f"Unable to replicate the partition {replication_factor} time(s): "
        if replication_factor > len(usable):
            raise InvalidReplicationFactorError(
                f"{prefix}The target replication factor of {replication_factor} cannot be reached because "
                f"only {len(usable)} broker(s) are registered."
            )
        if not live:
            raise InvalidReplicationFactorError(f"{prefix}All brokers are currently fenced.")
        if replication_factor > len(live):
            # Kafka would put followers on fenced brokers; without replication they could
            # never join the ISR, so refuse instead.
            raise InvalidReplicationFactorError(
                f"{prefix}The target replication factor of {replication_factor} cannot be reached because "
                f"only {len(live)} broker(s) are unfenced."
            )
        by_rack: dict[str | None, list[int]] = {}
        for b in sorted(live, key=lambda b: b.id):
            by_rack.setdefault(b.rack, []).append(b.id)
        racks = [by_rack[r] for r in sorted(by_rack, key=lambda r: (r is not None, r or ""))]
        self.rng.shuffle(racks)
        rotation = [self.rng.randrange(len(members)) for members in racks]
        start = self.rng.randrange(len(racks))
        out: list[tuple[int, ...]] = []
        for k in range(partitions):
            lead = (start + k) % len(racks)
            used = [0] * len(racks)
            replicas: list[int] = []
            i = lead
            while len(replicas) < replication_factor:  # ends: RF <= live brokers
                members = racks[i]
                if used[i] < len(members):
                    replicas.append(members[(rotation[i] + used[i]) % len(members)])
                    used[i] += 1
                i = (i + 1) % len(racks)
            rotation[lead] += 1
            out.append(tuple(replicas))
        return out

    def check_replica_list(
        self, image: MetadataImage, broker_ids: Sequence[int], replication_factor: int | None
    ) -> None:
        """A manual replica list: not empty, no broker twice, registered brokers only, and (when
        given) ``replication_factor`` long; else INVALID_REPLICA_ASSIGNMENT."""
        if not broker_ids:
            raise InvalidReplicaAssignmentError("The manual partition assignment includes an empty replica list.")
        registered = set(image.brokers) if image.brokers else set(self.brokers())
        seen: set[int] = set()
        for b in broker_ids:
            if b in seen:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes the broker {b} more than once."
                )
            seen.add(b)
            if b not in registered:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes broker {b}, but no such broker is registered."
                )
        if replication_factor is not None and len(broker_ids) != replication_factor:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but "
                f"this is not consistent with previous partitions, which have {replication_factor} replica(s)."
            )

    @staticmethod
    def check_some_live(image: MetadataImage, broker_ids: Sequence[int], partition: int) -> None:
        """A manual assignment needs a live broker among each partition's replicas (its leader)."""
        if image.brokers and not any(b in image.brokers and image.brokers[b].live for b in broker_ids):
            raise InvalidReplicaAssignmentError(
                f"All brokers specified in the manual partition assignment for partition {partition} are fenced "
                "or in controlled shutdown."
            )

    def manual_assignment(
        self, image: MetadataImage, assignments: list[CreateTopicsRequestTopicsAssignments]
    ) -> list[tuple[int, ...]]:
        """CreateTopics' ``assignments`` as replica lists by partition index, checked."""
        by_index: dict[int, tuple[int, ...]] = {}
        replication_factor: int | None = None
        for a in assignments:
            index = a["partition_index"]
            if index in by_index:
                raise InvalidReplicaAssignmentError(f"Found multiple manual partition assignments for partition {index}")
            self.check_replica_list(image, a["broker_ids"], replication_factor)
            self.check_some_live(image, a["broker_ids"], index)
            replication_factor = len(a["broker_ids"])
            by_index[index] = tuple(a["broker_ids"])
        if set(by_index) != set(range(len(by_index))):
            raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
        return [by_index[i] for i in range(len(by_index))]


def partition_records(
    image: MetadataImage, topic_id: uuid.UUID, placement: list[tuple[int, ...]], first: int
) -> list[MetadataRecord]:
    """One PartitionRecord per replica list: the ISR is the live replicas (all of them without
    registrations), the leader the first of the ISR."""
    records: list[MetadataRecord] = []
    for i, replicas in enumerate(placement):
        isr = replicas
        if image.brokers:
            isr = tuple(b for b in replicas if b in image.brokers and image.brokers[b].live)
        records.append(PartitionRecord(first + i, topic_id, replicas, isr, isr[0], 0, 0))
    return records
