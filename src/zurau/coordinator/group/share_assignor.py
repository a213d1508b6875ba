"""The ``simple`` assignor of share groups (KIP-932; Kafka's ``SimpleAssignor``).

Unlike a consumer group's, a share group's partition may go to several members at once: records
are handed out per delivery, so members sharing a partition consume it cooperatively. Inputs:
each member's subscribed topic ids and previous target assignment, and the *assignable*
partitions of each topic (those whose share state is initialized). Rules, per *pool* of
partitions and the members that may take them (all subscribed partitions and all members when
every member subscribes to the same topics; otherwise one pool per topic with its subscribers):

* sharing ``s = ceil(M / P)`` for ``M`` members and ``P`` partitions: with at least as many
  partitions as members (``s == 1``) every partition goes to exactly one member; with more
  members than partitions every partition goes to ``s`` members;
* balance: the ``s * P`` assignments are spread evenly, every member of the pool getting
  ``floor(s*P/M)`` or ``ceil(s*P/M)`` of them (a member never holds a partition twice; in the rare
  case where only members already holding a partition have room, the partition stays under-shared,
  as Kafka tolerates);
* stickiness (below balance): previous assignments are kept up to the member's quota and the
  partition's sharing; the members with the most previous partitions get the larger quotas;
* a member gets only partitions of topics it subscribes to, only assignable ones.

The result is a pure function of the inputs (members and partitions are sorted), and names every
member (an empty assignment for a member with nothing).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from zurau.coordinator.group.assignors import Assignment, MemberSubscription

NAME = "simple"

TopicPartition = tuple[uuid.UUID, int]


def _assign_pool(
    member_ids: list[str],
    pool: list[TopicPartition],
    previous: Mapping[str, set[TopicPartition]],
    out: dict[str, set[TopicPartition]],
) -> None:
    """Spread ``pool`` over ``member_ids`` (see the module's rules); adds to ``out``."""
    if not member_ids or not pool:
        return
    m, p = len(member_ids), len(pool)
    sharing = -(-m // p)
    base, extra = divmod(sharing * p, m)
    in_pool = set(pool)
    kept_before = {mid: sorted(previous.get(mid, set()) & in_pool, key=_tp_order) for mid in member_ids}
    by_previous = sorted(member_ids, key=lambda x: (-len(kept_before[x]), x))
    quota = {mid: base + (1 if i < extra else 0) for i, mid in enumerate(by_previous)}
    holders: dict[TopicPartition, set[str]] = {tp: set() for tp in pool}
    load = dict.fromkeys(member_ids, 0)
    # 1. Stickiness: keep what fits the member's quota and the partition's sharing.
    for mid in by_previous:
        for tp in kept_before[mid]:
            if load[mid] < quota[mid] and len(holders[tp]) < sharing:
                holders[tp].add(mid)
                load[mid] += 1
    # 2. Balance: give every under-shared partition to the least-loaded members with room.
    for tp in sorted(pool, key=lambda x: (len(holders[x]), _tp_order(x))):
        while len(holders[tp]) < sharing:
            room = [mid for mid in member_ids if load[mid] < quota[mid] and mid not in holders[tp]]
            if not room:
                break
            mid = min(room, key=lambda x: (load[x], x))
            holders[tp].add(mid)
            load[mid] += 1
    for tp, mids in holders.items():
        for mid in mids:
            out[mid].add(tp)


def _tp_order(tp: TopicPartition) -> tuple[str, int]:
    return (str(tp[0]), tp[1])


def simple_assign(
    members: Mapping[str, MemberSubscription], assignable: Mapping[uuid.UUID, Iterable[int]]
) -> dict[str, Assignment]:
    """The target assignment of every member (see the module's rules).

    ``assignable`` maps topic ids to the partitions that may be assigned (a topic missing from it
    has none).
    """
    ids = sorted(members)
    out: dict[str, set[TopicPartition]] = {mid: set() for mid in ids}
    previous = {mid: {(t, p) for t, ps in members[mid].previous.items() for p in ps} for mid in ids}
    partitions = {t: sorted(set(ps)) for t, ps in assignable.items()}
    subscribed = {mid: members[mid].subscribed_topic_ids for mid in ids}
    if len(set(subscribed.values())) <= 1:
        topics = sorted(subscribed[ids[0]] if ids else (), key=str)
        pool = [(t, p) for t in topics for p in partitions.get(t, ())]
        _assign_pool(ids, pool, previous, out)
    else:
        for t in sorted(set().union(*subscribed.values()), key=str):
            subs = [mid for mid in ids if t in subscribed[mid]]
            _assign_pool(subs, [(t, p) for p in partitions.get(t, ())], previous, out)
    result: dict[str, Assignment] = {}
    for mid, tps in out.items():
        by_topic: dict[uuid.UUID, set[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, set()).add(p)
        result[mid] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return result
