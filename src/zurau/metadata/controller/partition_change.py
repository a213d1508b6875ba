"""ISR and leadership decisions shared by the control managers (Kafka's ``PartitionChangeBuilder``).

When a broker stops being live (fenced, controlled shutdown, re-registered, unregistered) it
leaves every ISR and each partition it led gets the first live ISR member, in replica order, as
its new leader (leader epoch + 1). When no ISR member is live the partition has no leader (-1) and
keeps its last ISR member, so that the replica with every committed record is elected when it
comes back (unfenced); only with ``unclean.leader.election.enable`` may a live replica outside the
ISR lead instead (it becomes the whole ISR, and committed records it lacks are lost).

**Eligible leader replicas** (KIP-966; on while the finalized feature
``eligible.leader.replicas.version`` is at least 1, see :func:`elr_enabled`). With a topic's
effective ``min.insync.replicas`` *m* (its config, else the cluster default, at most the
replication factor), every change of a partition follows Kafka's rules, in this order:

1. *ELR.* If the new ISR has at least *m* members the ELR and last known ELR are cleared. Else the
   ELR becomes (old ELR + old ISR) minus the new ISR minus the replicas that just restarted after
   an unclean shutdown: a replica leaving an ISR that is (or becomes) smaller than *m* keeps its
   claim, since the leader does not advance the high watermark below *m* in-sync replicas, so it
   holds every committed record. The ISR may then become empty (it never does without ELR).
2. *Election* (Kafka's ``Election``: ONLINE keeps a valid leader, else the first valid replica;
   PREFERRED tries the first replica first; UNCLEAN may fall back to any acceptable replica). A
   replica is *valid* when it is acceptable (live, not the broker being removed, not one that shut
   down uncleanly) and in the new ISR, or, the new ISR being empty, in the ELR. A leader elected
   from the ELR becomes the whole ISR and leaves the ELR: a clean election, nothing committed is
   lost. With ISR and ELR both empty and the last known ELR naming one acceptable broker (the
   last leader), it is elected as an unclean election does (Kafka's "last known leader" recovery).
   An unclean election (that, or UNCLEAN falling back) makes the leader the whole ISR and clears
   the ELR.
3. *Last known ELR* (Kafka's production mode, which keeps the last *leader* there): set to the
   old leader when the ISR becomes empty; cleared once the partition has a leader again.

A replica restarting after an unclean shutdown (its registration's ``previous_broker_epoch`` is
not the epoch of its last registration: no clean-shutdown marker) leaves every ISR and ELR.

Invariants of every record produced here: the leader, when there is one, is in the ISR; the ISR
is a subset of the replicas, never empty without ELR; ISR and ELR never overlap; a record that
changes nothing is not produced. Nothing here has state: each call reads the image it is given
and returns records.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Sequence

from zurau.config import BrokerConfig, resolve_topic_config
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from zurau.metadata.records import NO_LEADER, NO_LEADER_CHANGE, MetadataRecord, PartitionChangeRecord

log = logging.getLogger("zurau.controller")

#: The finalized feature that turns eligible leader replicas on (level >= 1).
ELR_FEATURE = "eligible.leader.replicas.version"

# Election kinds (Kafka's PartitionChangeBuilder.Election).
PREFERRED, ONLINE, UNCLEAN = "preferred", "online", "unclean"


def elr_enabled(image: MetadataImage) -> bool:
    """Are eligible leader replicas on (finalized ``eligible.leader.replicas.version`` >= 1)?"""
    return image.features.get(ELR_FEATURE, 0) >= 1


def build_change(
    p: PartitionRegistration,
    topic_id: uuid.UUID,
    index: int,
    acceptable: Callable[[int], bool],
    *,
    target_isr: Sequence[int] | None = None,
    min_isr: int = 1,
    elr: bool = False,
    election: str = ONLINE,
    unclean_shutdown: Collection[int] = (),
    target_replicas: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
) -> PartitionChangeRecord | None:
    """The record changing ``p`` toward the targets (None: unchanged) by the rules of the module
    docstring. ``acceptable(b)``: may broker ``b`` lead (live, not leaving, not unclean)?
    ``target_isr``/``target_replicas``/...: None keeps the current value; ``min_isr``: the
    topic's effective ``min.insync.replicas``; ``elr``: ELR on; ``unclean_shutdown``: brokers
    that restarted after an unclean shutdown (they leave ISR and ELR)."""
    isr = list(p.isr if target_isr is None else target_isr)
    replicas = list(p.replicas if target_replicas is None else target_replicas)
    removing = list(p.removing_replicas if target_removing is None else target_removing)
    adding = list(p.adding_replicas if target_adding is None else target_adding)
    new_elr = list(p.elr)

    # 1. The ELR.
    if elr:
        if len(isr) >= min_isr:
            new_elr = []
        else:
            claim = set(new_elr) | set(p.isr)
            new_elr = sorted(r for r in claim if r not in isr and r not in unclean_shutdown)

    # 2. The election.
    def valid(r: int) -> bool:
        return (r in isr or (not isr and r in new_elr)) and acceptable(r)

    def last_known_leader() -> int | None:
        if not elr or new_elr or isr or len(p.last_known_elr) != 1:
            return None
        return p.last_known_elr[0] if acceptable(p.last_known_elr[0]) else None

    leader, unclean = NO_LEADER, False
    first_valid = next((r for r in replicas if valid(r)), None)
    if election == PREFERRED and replicas and valid(replicas[0]):
        leader = replicas[0]
    elif p.leader != NO_LEADER and valid(p.leader):
        leader = p.leader
    elif first_valid is not None:
        leader = first_valid
    elif (known := last_known_leader()) is not None:
        leader, unclean = known, True
    elif election == UNCLEAN:
        fallback = next((r for r in replicas if acceptable(r)), None)
        if fallback is not None:
            leader, unclean = fallback, True

    record_leader = NO_LEADER_CHANGE
    record_isr: tuple[int, ...] | None = None
    if leader != p.leader:
        if leader in new_elr:
            isr = [leader]
            new_elr = [r for r in new_elr if r != leader]
        record_leader = leader
        if unclean:
            record_isr = (leader,)
    # Reassignment: a leader losing a replica gets a new leader epoch even if it stays leader.
    if record_leader == NO_LEADER_CHANGE and not set(p.replicas) <= set(replicas):
        record_leader = p.leader

    # The ELR fields of the record (an unclean election, or ELR off, clears the ELR).
    if record_isr is not None or not elr:
        new_elr = []
    record_elr = None if tuple(new_elr) == p.elr else tuple(new_elr)

    if record_isr is None and (isr or elr) and tuple(isr) != p.isr:
        record_isr = tuple(isr)

    # 3. The last known ELR: the last leader, once the ISR is empty; cleared under a leader.
    record_lke: tuple[int, ...] | None = None
    if elr:
        if record_isr == () and p.leader != NO_LEADER and p.last_known_elr != (p.leader,):
            record_lke = (p.leader,)
        elif (record_leader >= 0 or (p.leader != NO_LEADER and record_leader != NO_LEADER)) and p.last_known_elr:
            record_lke = ()

    change = PartitionChangeRecord(
        index,
        topic_id,
        isr=record_isr,
        leader=record_leader,
        replicas=None if tuple(replicas) == p.replicas else tuple(replicas),
        removing_replicas=None if tuple(removing) == p.removing_replicas else tuple(removing),
        adding_replicas=None if tuple(adding) == p.adding_replicas else tuple(adding),
        eligible_leader_replicas=record_elr,
        last_known_elr=record_lke,
    )
    if change == PartitionChangeRecord(index, topic_id):
        return None
    if unclean:
        log.warning("partition %s-%d: unclean election of broker %d", topic_id, index, leader)
    elif record_isr == (leader,) and leader in p.elr:
        log.info("partition %s-%d: broker %d elected leader from the ELR %s", topic_id, index, leader, list(p.elr))
    return change


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

    def min_isr(self, image: MetadataImage, t: TopicImage) -> int:
        """The topic's effective ``min.insync.replicas`` (Kafka's ``getTopicEffectiveMinIsr``):
        its override, else this controller node's broker config with the dynamic overrides of
        ``image``; at most the replication factor."""
        broker = self.effective.of(image)
        configured = int(resolve_topic_config(broker, t.configs)["min_insync_replicas"])
        return max(1, min(configured, t.replication_factor or configured))

    def change(
        self,
        image: MetadataImage,
        t: TopicImage,
        index: int,
        p: PartitionRegistration,
        acceptable: Callable[[int], bool],
        *,
        election: str | None = None,
        **targets: object,
    ) -> PartitionChangeRecord | None:
        """:func:`build_change` for ``t``'s partition ``index`` with the topic's min ISR, ELR as
        the image's feature level says, and ONLINE election (UNCLEAN when the topic allows it)
        unless ``election`` is given."""
        if election is None:
            election = UNCLEAN if self.unclean_allowed(image, t) else ONLINE
        return build_change(
            p, t.topic_id, index, acceptable, min_isr=self.min_isr(image, t), elr=elr_enabled(image),
            election=election, **targets,  # type: ignore[arg-type]
        )

    def leave_partitions(self, image: MetadataImage, broker_id: int, unclean_shutdown: bool = False) -> list[MetadataRecord]:
        """Records that take ``broker_id`` (no longer live) out of every ISR and move each
        leadership it held to the first live ISR member in replica order (leader epoch + 1); with
        no such member the partition has no leader and keeps its last ISR member (with ELR: its
        ISR may become empty, the leaving members joining the ELR), unless unclean election
        allows a live replica outside the ISR. ``unclean_shutdown``: the broker restarted after
        an unclean shutdown, so it also leaves every ELR (with ELR on)."""
        brokers = image.brokers
        unclean = unclean_shutdown and elr_enabled(image)

        def live(b: int) -> bool:
            reg = brokers.get(b)
            return b != broker_id and reg is not None and reg.live

        records: list[MetadataRecord] = []
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if broker_id not in p.isr and p.leader != broker_id and not (unclean and broker_id in p.elr):
                    continue
                change = self.change(
                    image, t, index, p, live,
                    target_isr=tuple(r for r in p.isr if r != broker_id),
                    unclean_shutdown=(broker_id,) if unclean else (),
                )
                if change is not None:
                    records.append(change)
                    if change.leader == NO_LEADER:
                        log.info("%s-%d: no leader (ISR %s, ELR %s)", t.name, index, list(p.isr), list(p.elr))
        return records

    def elect_leaderless(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Records electing ``broker_id`` (now live) leader of each partition without a leader
        whose ISR holds it (with ELR: whose ISR is empty and ELR holds it; or whose last known
        leader it is, ISR and ELR being empty), or, with unclean election, of which it is a
        replica."""

        def acceptable(b: int) -> bool:  # a live replica that could lead would lead already
            return b == broker_id

        records: list[MetadataRecord] = []
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if p.leader != NO_LEADER or broker_id not in p.replicas:
                    continue
                change = self.change(image, t, index, p, acceptable)
                if change is not None:
                    records.append(change)
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
        elr, last_known = p.elr, p.last_known_elr
        if elr_enabled(image):
            if len(new_isr) >= self.min_isr(image, t):
                elr, last_known = (), ()
            else:  # the ELR keeps only replicas that stay
                elr = tuple(r for r in p.elr if r in replicas and r not in new_isr)
        return PartitionChangeRecord(
            index, t.topic_id, isr=new_isr, leader=leader, replicas=replicas, removing_replicas=(), adding_replicas=(),
            eligible_leader_replicas=None if elr == p.elr else elr,
            last_known_elr=None if last_known == p.last_known_elr else last_known,
        )

    def isr_change(
        self, image: MetadataImage, t: TopicImage, index: int, p: PartitionRegistration, isr: tuple[int, ...]
    ) -> PartitionChangeRecord | None:
        """The record giving ``p`` (whose leader asked, AlterPartition) the ISR ``isr``: its
        leader stays; with ELR the ELR follows the new ISR (module docstring, step 1)."""
        leader = p.leader

        def acceptable(b: int) -> bool:
            return b == leader or self.is_live(image, b)

        return self.change(image, t, index, p, acceptable, election=ONLINE, target_isr=isr)
