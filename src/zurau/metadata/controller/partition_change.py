"""ISR and leadership decisions shared by the control managers (Kafka's ``PartitionChangeBuilder``).

When a broker stops being live (fenced, controlled shutdown, re-registered, unregistered) it
leaves every ISR and each partition it led gets the first live ISR member, in replica order, as
its new leader (leader epoch + 1). When no ISR member is live the partition has no leader (-1) and
keeps its last ISR member, so that the replica with every committed record is elected when it
comes back (unfenced); only with ``unclean.leader.election.enable`` may a live replica outside the
ISR lead instead (it becomes the whole ISR, and committed records it lacks are lost).

Invariants of every record produced here: the leader, when there is one, is in the ISR; the ISR
is never empty and is a subset of the replicas. Nothing here has state: each call reads the image
it is given and returns records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from zurau.config import BrokerConfig, resolve_topic_config
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from zurau.metadata.records import NO_LEADER, NO_LEADER_CHANGE, MetadataRecord, PartitionChangeRecord

log = logging.getLogger("zurau.controller")


class PartitionChanges:
    def __init__(self, config: BrokerConfig, brokers: Callable[[], Sequence[int]]) -> None:
        self.config = config
        self.brokers = brokers
        self.effective = EffectiveBrokerConfig(config)

    def is_live(self, image: MetadataImage, broker_id: int) -> bool:
        """May ``broker_id`` lead (registered, unfenced, not in controlled shutdown)? Without
        registrations (a single node) the brokers of ``brokers()`` are live."""
        if image.brokers:
            reg = image.brokers.get(broker_id)
            return reg is not None and reg.live
        return broker_id in self.brokers()

    def unclean_allowed(self, image: MetadataImage, t: TopicImage) -> bool:
        """The topic's ``unclean.leader.election.enable``: its override, else this controller
        node's broker config with the dynamic overrides of ``image`` (per-node, cluster default)."""
        broker = self.effective.of(image)
        return bool(resolve_topic_config(broker, t.configs)["unclean_leader_election_enable"])

    def leave_partitions(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Records that take ``broker_id`` (no longer live) out of every ISR and move each
        leadership it held to the first live ISR member in replica order (leader epoch + 1); with
        no such member the partition has no leader and keeps its last ISR member, unless unclean
        election allows a live replica outside the ISR."""
        brokers = image.brokers

        def live(b: int) -> bool:
            reg = brokers.get(b)
            return b != broker_id and reg is not None and reg.live

        records: list[MetadataRecord] = []
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if broker_id not in p.isr and p.leader != broker_id:
                    continue
                isr = tuple(r for r in p.isr if r != broker_id)
                leader = NO_LEADER_CHANGE
                if p.leader == broker_id:
                    candidates = [r for r in p.replicas if r in isr and live(r)]
                    if candidates:
                        leader = candidates[0]
                    else:
                        outside = [r for r in p.replicas if live(r)]
                        if outside and self.unclean_allowed(image, t):
                            leader, isr = outside[0], (outside[0],)
                            log.warning("%s-%d: unclean election of broker %d", t.name, index, leader)
                        else:
                            leader = NO_LEADER
                if not isr:
                    isr = p.isr  # the last ISR member stays, to be elected when it comes back
                if leader == NO_LEADER_CHANGE and isr == p.isr:
                    continue
                records.append(
                    PartitionChangeRecord(index, t.topic_id, isr=None if isr == p.isr else isr, leader=leader)
                )
        return records

    def elect_leaderless(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Records electing ``broker_id`` (now live) leader of each partition without a leader
        whose ISR holds it, or, with unclean election, of which it is a replica."""
        records: list[MetadataRecord] = []
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if p.leader != NO_LEADER or broker_id not in p.replicas:
                    continue
                if broker_id in p.isr:
                    records.append(PartitionChangeRecord(index, t.topic_id, leader=broker_id))
                elif self.unclean_allowed(image, t):
                    records.append(PartitionChangeRecord(index, t.topic_id, isr=(broker_id,), leader=broker_id))
        return records

    def completed_reassignment(
        self, image: MetadataImage, t: TopicImage, index: int, p: PartitionRegistration, isr: tuple[int, ...]
    ) -> PartitionChangeRecord | None:
        """The record completing ``p``'s reassignment with ISR ``isr``, or None when it cannot
        complete yet (none in progress, an added replica outside ``isr``, or no ISR member left
        once the removed replicas go)."""
        if not p.reassigning or not all(r in isr for r in p.adding_replicas):
            return None
        new_isr = tuple(r for r in isr if r not in p.removing_replicas)
        if not new_isr:
            return None
        replicas = p.target_replicas
        leader = p.leader
        if leader not in new_isr or not self.is_live(image, leader):
            candidates = [r for r in replicas if r in new_isr and self.is_live(image, r)]
            leader = candidates[0] if candidates else NO_LEADER
        elif not p.removing_replicas:
            leader = NO_LEADER_CHANGE  # only added replicas: nobody to fence
        log.info("%s-%d: reassignment complete: replicas %s, ISR %s", t.name, index, list(replicas), list(new_isr))
        return PartitionChangeRecord(
            index, t.topic_id, isr=new_isr, leader=leader, replicas=replicas, removing_replicas=(), adding_replicas=()
        )
