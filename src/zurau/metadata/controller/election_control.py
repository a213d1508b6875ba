"""Leader elections on request and the automatic leader rebalance (Kafka's
``ReplicationControlManager.electLeaders`` and ``maybeBalancePartitionLeaders``).

Invariants: an election writes one ``PartitionChangeRecord`` per partition whose leader changes
(leader epoch + 1) and nothing for the others; a clean election only picks a live ISR member (with
ELR, when the ISR is empty, a live ELR member, which becomes the whole ISR); an
unclean one (requested, or allowed by the topic) makes the chosen live replica the whole ISR.
"""

from __future__ import annotations

import logging

from zurau.config import BrokerConfig
from zurau.metadata.controller.partition_change import PREFERRED, UNCLEAN, PartitionChanges
from zurau.metadata.controller.result import ControllerResult, PendingRecords
from zurau.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from zurau.metadata.records import NO_LEADER, MetadataRecord, PartitionChangeRecord
from zurau.protocol.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidRequestError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponseReplicaElectionResults,
    ElectLeadersResponseReplicaElectionResultsPartitionResult,
)

log = logging.getLogger("zurau.controller")

# Kafka's ElectionType ids.
ELECTION_PREFERRED, ELECTION_UNCLEAN = 0, 1


class ElectionControlManager:
    def __init__(self, config: BrokerConfig, changes: PartitionChanges) -> None:
        self.config = config
        self.changes = changes

    def elect_leaders(
        self,
        image: MetadataImage,
        election_type: int,
        topic_partitions: list[ElectLeadersRequestTopicPartitions] | None,
    ) -> ControllerResult[list[ElectLeadersResponseReplicaElectionResults]]:
        """ElectLeaders (Kafka's ``ReplicationControlManager.electLeaders``): per partition,

        * PREFERRED (0): the first replica (the preferred leader) becomes leader when it is live
          and in the ISR; ELECTION_NOT_NEEDED if it leads already, PREFERRED_LEADER_NOT_AVAILABLE
          if it cannot (a leaderless partition still gets the first live ISR member, as Kafka's
          election does);
        * UNCLEAN (1): only for a partition without a leader (else ELECTION_NOT_NEEDED): the first
          live ISR member, else the first live replica, which becomes the whole ISR (committed
          records it lacks are lost); ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live;
        * an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.

        ``topic_partitions`` None means every partition of every topic; the answer then leaves out
        the partitions whose election was not needed. Response: ``replica_election_results``.
        """
        pending = PendingRecords(image)
        results: list[ElectLeadersResponseReplicaElectionResults] = []
        if topic_partitions is None:
            for t in image.all():
                parts: list[ElectLeadersResponseReplicaElectionResultsPartitionResult] = []
                for index in sorted(t.partitions):
                    code, message = self._elect_one(pending, t.name, index, election_type)
                    if code != ElectionNotNeededError.code:
                        parts.append(_election_result(index, code, message))
                results.append({"topic": t.name, "partition_result": parts})
        else:
            for tp in topic_partitions:
                parts = [
                    _election_result(index, *self._elect_one(pending, tp["topic"], index, election_type))
                    for index in tp["partitions"]
                ]
                results.append({"topic": tp["topic"], "partition_result": parts})
        return ControllerResult(pending.records, results)

    def _elect_one(
        self, pending: PendingRecords, name: str, index: int, election_type: int
    ) -> tuple[int, str | None]:
        if election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
            return InvalidRequestError.code, f"Unknown election type {election_type}."
        t = pending.image.get(name)
        if t is None:
            return UnknownTopicOrPartitionError.code, f"No such topic as {name}"
        p = t.partitions.get(index)
        if p is None:
            return UnknownTopicOrPartitionError.code, f"No such partition as {name}-{index}"
        image = pending.image

        def acceptable(b: int) -> bool:
            return self.changes.is_live(image, b)

        if election_type == ELECTION_PREFERRED:
            if p.replicas and p.leader == p.replicas[0]:
                return ElectionNotNeededError.code, "Leader election not needed for topic partition."
            change = self.changes.change(image, t, index, p, acceptable, election=PREFERRED)
            if change is None or change.leader < 0 or change.leader == p.leader:
                return PreferredLeaderNotAvailableError.code, "The preferred leader was not available."
            pending.add([change])
            log.info("%s-%d: preferred leader election: %d -> %d", name, index, p.leader, change.leader)
            return 0, None
        if p.leader != NO_LEADER:
            return ElectionNotNeededError.code, "Leader election not needed for topic partition."
        # The first live ISR member (with ELR, an ELR member if the ISR is empty), else the first
        # live replica, which becomes the whole ISR.
        change = self.changes.change(image, t, index, p, acceptable, election=UNCLEAN)
        if change is None or change.leader < 0:
            return EligibleLeadersNotAvailableError.code, "Eligible topic partition leaders are not available."
        pending.add([change])
        if change.isr == (change.leader,) and change.leader not in p.isr and change.leader not in p.elr:
            log.warning("%s-%d: unclean election of broker %d (requested)", name, index, change.leader)
        return 0, None

    def balance_leaders(self, image: MetadataImage) -> ControllerResult[None]:
        """``auto.leader.rebalance.enable``: move leadership back to preferred replicas.

        For each broker, the partitions whose preferred replica (first in the replica list) it
        is: when more than ``leader.imbalance.per.broker.percentage`` of them are led by another
        broker, each of those whose preferred replica is live and in the ISR (and that is not
        being reassigned) gets it as leader again (leader epoch + 1), as Kafka's controller does
        every ``leader.imbalance.check.interval.seconds``."""
        if not self.config.get("auto.leader.rebalance.enable"):
            return ControllerResult([], None)
        percentage = int(self.config.get("leader.imbalance.per.broker.percentage"))
        preferred: dict[int, list[tuple[TopicImage, int, PartitionRegistration]]] = {}
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if p.replicas:
                    preferred.setdefault(p.replicas[0], []).append((t, index, p))
        records: list[MetadataRecord] = []
        for broker in sorted(preferred):
            owned = preferred[broker]
            elsewhere = [(t, i, p) for t, i, p in owned if p.leader != broker]
            if not elsewhere or len(elsewhere) * 100 <= percentage * len(owned):
                continue
            if not self.changes.is_live(image, broker):
                continue
            for t, i, p in elsewhere:
                if broker in p.isr and not p.reassigning:
                    records.append(PartitionChangeRecord(i, t.topic_id, leader=broker))
                    log.info("%s-%d: leader %d -> preferred replica %d (auto rebalance)", t.name, i, p.leader, broker)
        return ControllerResult(records, None)


def _election_result(
    index: int, code: int, message: str | None
) -> ElectLeadersResponseReplicaElectionResultsPartitionResult:
    return {"partition_id": index, "error_code": code, "error_message": message}
