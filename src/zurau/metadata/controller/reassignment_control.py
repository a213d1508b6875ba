"""Partition reassignments (KIP-455; Kafka's ``ReplicationControlManager`` reassignment part):
AlterPartitionReassignments and ListPartitionReassignments.

``PartitionRegistration.adding_replicas`` / ``removing_replicas`` hold an ongoing reassignment,
with ``replicas`` the target followed by the replicas being removed; it completes in the
AlterPartition that brings the last added replica into the ISR
(:meth:`~zurau.metadata.controller.partition_change.PartitionChanges.completed_reassignment`).

Invariants: at most one reassignment per partition (a new target replaces the ongoing one); the
original replicas are always ``replicas`` minus ``adding_replicas``; a cancellation restores them.
"""

from __future__ import annotations

import dataclasses
import logging

from zurau.metadata.controller.partition_change import PartitionChanges
from zurau.metadata.controller.placement import ReplicaPlacer
from zurau.metadata.controller.result import ControllerResult, PendingRecords, error_of
from zurau.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from zurau.metadata.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord
from zurau.protocol.errors import (
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    AlterPartitionReassignmentsRequestTopics,
    AlterPartitionReassignmentsResponseResponses,
    AlterPartitionReassignmentsResponseResponsesPartitions,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponseTopics,
    ListPartitionReassignmentsResponseTopicsPartitions,
)

log = logging.getLogger("zurau.controller")


class ReassignmentControlManager:
    def __init__(self, placer: ReplicaPlacer, changes: PartitionChanges) -> None:
        self.placer = placer
        self.changes = changes

    def alter_partition_reassignments(
        self,
        image: MetadataImage,
        topics: list[AlterPartitionReassignmentsRequestTopics],
        allow_replication_factor_change: bool = True,
    ) -> ControllerResult[list[AlterPartitionReassignmentsResponseResponses]]:
        """AlterPartitionReassignments (KIP-455), per partition as Kafka's controller decides:

        * unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
        * null ``replicas`` cancels the ongoing reassignment (NO_REASSIGNMENT_IN_PROGRESS if there
          is none): the replicas being added go, the original replicas stay, and a leader that
          was one of the added replicas hands over to an original ISR member (leader epoch + 1);
          if no original replica is in the ISR the revert needs an unclean election
          (INVALID_REPLICA_ASSIGNMENT unless ``unclean.leader.election.enable``);
        * a target list that is empty, names a broker twice or an unregistered broker:
          INVALID_REPLICA_ASSIGNMENT; a different length when ``allow_replication_factor_change``
          is false (v1, KIP-860): INVALID_REPLICATION_FACTOR;
        * otherwise the partition's replicas become the target followed by the replicas to
          remove, ``adding_replicas`` the target replicas that were not replicas originally and
          ``removing_replicas`` the current ones outside the target. The added replicas become
          followers; when the last of them joins the ISR (AlterPartition from the leader; at once
          if none is added) the reassignment completes in the same record: replicas = target,
          the removed replicas leave the ISR, and the leader changes (to the first live target
          replica in the ISR) if it was removed, else its epoch goes up by one so that removed
          replicas are fenced. A new target replaces an ongoing reassignment.

        Response: one ``responses`` entry per topic.
        """
        pending = PendingRecords(image)
        out: list[AlterPartitionReassignmentsResponseResponses] = []
        for t in topics:
            parts: list[AlterPartitionReassignmentsResponseResponsesPartitions] = []
            for pr in t["partitions"]:
                index = pr["partition_index"]
                try:
                    self._reassign(pending, t["name"], index, pr.get("replicas"), allow_replication_factor_change)
                    parts.append({"partition_index": index, "error_code": 0, "error_message": None})
                except Exception as e:
                    code, message = error_of(e)
                    parts.append({"partition_index": index, "error_code": code, "error_message": message})
            out.append({"name": t["name"], "partitions": parts})
        return ControllerResult(pending.records, out)

    def _reassign(
        self, pending: PendingRecords, name: str, index: int, target: list[int] | None, allow_rf_change: bool
    ) -> None:
        image = pending.image
        t = image.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"Unable to find topic {name}.")
        p = t.partitions.get(index)
        if p is None:
            raise UnknownTopicOrPartitionError(f"Unable to find partition {name}:{index}.")
        if target is None:
            pending.add([self._cancel_reassignment(image, t, index, p)])
            return
        self.placer.check_replica_list(image, target, None)
        if not allow_rf_change and len(target) != len(p.original_replicas):
            raise InvalidReplicationFactorError(
                f"The replication factor is changed from {len(p.original_replicas)} to {len(target)}"
            )
        wanted = tuple(target)
        if wanted == p.replicas and not p.reassigning:
            return  # nothing to move
        removing = tuple(r for r in p.replicas if r not in wanted)
        adding = tuple(r for r in wanted if r not in p.original_replicas)
        ongoing = dataclasses.replace(p, replicas=wanted + removing, removing_replicas=removing, adding_replicas=adding)
        change = self.changes.completed_reassignment(image, t, index, ongoing, p.isr)
        if change is None:
            change = PartitionChangeRecord(
                index, t.topic_id, replicas=ongoing.replicas, removing_replicas=removing, adding_replicas=adding
            )
            log.info("%s-%d: reassigning %s -> %s", name, index, list(p.replicas), list(wanted))
        else:
            # The partition as it is now, not the intermediate state: replicas and lists set.
            change = dataclasses.replace(change, replicas=wanted, removing_replicas=(), adding_replicas=())
            log.info("%s-%d: reassigned %s -> %s at once", name, index, list(p.replicas), list(wanted))
        pending.add([change])

    def _cancel_reassignment(
        self, image: MetadataImage, t: TopicImage, index: int, p: PartitionRegistration
    ) -> PartitionChangeRecord:
        if not p.reassigning:
            raise NoReassignmentInProgressError("No partition reassignment is in progress.")
        is_live = self.changes.is_live
        replicas = p.original_replicas
        isr = tuple(r for r in p.isr if r not in p.adding_replicas)
        leader = p.leader
        if not isr:
            if not self.changes.unclean_allowed(image, t):
                raise InvalidReplicaAssignmentError(
                    f"Unable to revert partition assignment for {t.name}:{index} because it would require an "
                    "unclean leader election."
                )
            live = [r for r in replicas if is_live(image, r)]
            if not live:
                raise InvalidReplicaAssignmentError(
                    f"Unable to revert partition assignment for {t.name}:{index}: no original replica is live."
                )
            isr, leader = (live[0],), live[0]
        elif leader not in isr or not is_live(image, leader):
            candidates = [r for r in replicas if r in isr and is_live(image, r)]
            leader = candidates[0] if candidates else NO_LEADER
        elif not p.adding_replicas:
            leader = NO_LEADER_CHANGE
        log.info("%s-%d: reassignment cancelled: replicas back to %s", t.name, index, list(replicas))
        return PartitionChangeRecord(
            index,
            t.topic_id,
            isr=None if isr == p.isr else isr,
            leader=leader,
            replicas=replicas,
            removing_replicas=(),
            adding_replicas=(),
        )


def list_partition_reassignments(
    image: MetadataImage, topics: list[ListPartitionReassignmentsRequestTopics] | None
) -> list[ListPartitionReassignmentsResponseTopics]:
    """ListPartitionReassignments: the partitions being reassigned, with their replicas (the
    target ones, then those being removed) and the adding and removing lists; of every topic
    when ``topics`` is None, else of the named partitions (others are left out silently)."""
    wanted: list[tuple[TopicImage, list[int]]] = []
    if topics is None:
        wanted = [(t, sorted(t.partitions)) for t in image.all()]
    else:
        for entry in topics:
            t = image.get(entry["name"])
            if t is not None:
                wanted.append((t, list(entry["partition_indexes"])))
    out: list[ListPartitionReassignmentsResponseTopics] = []
    for t, indexes in wanted:
        parts: list[ListPartitionReassignmentsResponseTopicsPartitions] = []
        for i in indexes:
            p = t.partitions.get(i)
            if p is not None and p.reassigning:
                parts.append(
                    {
                        "partition_index": i,
                        "replicas": list(p.replicas),
                        "adding_replicas": list(p.adding_replicas),
                        "removing_replicas": list(p.removing_replicas),
                    }
                )
        if parts:
            out.append({"name": t.name, "partitions": parts})
    return out
