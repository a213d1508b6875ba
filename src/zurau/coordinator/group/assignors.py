"""Server-side partition assignors for KIP-848 consumer groups: ``uniform`` and ``range``.

An assignor maps a group to a *target assignment*: for each member, the partitions (by topic id)
it should own. Inputs are each member's subscribed topic ids and the partition counts; the
previous target assignment makes ``uniform`` sticky.

Guarantees of both: every partition of a subscribed topic goes to exactly one member subscribed
to that topic (none if nobody subscribes); a member only gets partitions of topics it subscribes
to; the result is a pure function of the inputs (member ids sorted, so independent of dict order).

* ``uniform`` (Kafka's default): balanced over all partitions: with homogeneous subscriptions
  every member owns ⌊P/M⌋ or ⌈P/M⌉ partitions; partitions stay with their previous owner
  whenever balance allows (few moves on membership changes).
* ``range``: per topic, the members subscribed to it, sorted by member id, get consecutive ranges
  of partitions, the first ``P % M`` members one more (co-partitioned topics line up).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

Assignment = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True)
class MemberSubscription:
    subscribed_topic_ids: frozenset[uuid.UUID]
    previous: Mapping[uuid.UUID, frozenset[int]]  # the member's previous target assignment


def _result(assigned: dict[str, dict[uuid.UUID, set[int]]]) -> dict[str, Assignment]:
    return {m: {t: frozenset(ps) for t, ps in topics.items() if ps} for m, topics in assigned.items()}


def range_assign(
    members: Mapping[str, MemberSubscription], partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for topic_id in sorted(partitions, key=str):
        count = partitions[topic_id]
        subs = sorted(m for m, s in members.items() if topic_id in s.subscribed_topic_ids)
        if not subs or count <= 0:
            continue
        per, extra = divmod(count, len(subs))
        start = 0
        for i, m in enumerate(subs):
            n = per + (1 if i < extra else 0)
            if n:
                out[m][topic_id] = set(range(start, start + n))
            start += n
    return _result(out)


def uniform_assign(
    members: Mapping[str, MemberSubscription], partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """Sticky, balanced assignment (homogeneous or heterogeneous subscriptions)."""
    ids = sorted(members)
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in ids}
    load = dict.fromkeys(ids, 0)
    # Every assignable partition, and who may own it.
    eligible: dict[tuple[uuid.UUID, int], list[str]] = {}
    for topic_id in sorted(partitions, key=str):
        subs = [m for m in ids if topic_id in members[m].subscribed_topic_ids]
        if subs:
            for p in range(partitions[topic_id]):
                eligible[(topic_id, p)] = subs
    total = len(eligible)
    homogeneous = len({members[m].subscribed_topic_ids for m in ids}) <= 1
    if homogeneous and ids:
        base, extra = divmod(total, len(ids))
    # 1. Keep previous owners, up to a fair quota (homogeneous) or without limit (heterogeneous,
    #    balanced in step 3).
    owner: dict[tuple[uuid.UUID, int], str] = {}
    # Members with the most previous partitions keep the extra slots first (fewest moves).
    by_previous = sorted(ids, key=lambda m: (-sum(len(v) for v in members[m].previous.values()), m))
    extras_left = extra if homogeneous and ids else 0
    for m in by_previous:
        kept = sorted(
            (t, p)
            for t, ps in members[m].previous.items()
            for p in ps
            if (t, p) in eligible and m in eligible[(t, p)]
        )
        if homogeneous:
            quota = base + (1 if extras_left > 0 and len(kept) > base else 0)
            if len(kept) > base and extras_left > 0:
                extras_left -= 1
            kept = kept[:quota]
        for tp in kept:
            if tp not in owner:
                owner[tp] = m
                load[m] += 1
    # 2. Hand out the rest, each to the least-loaded eligible member.
    for tp, subs in eligible.items():
        if tp not in owner:
            m = min(subs, key=lambda x: (load[x], x))
            owner[tp] = m
            load[m] += 1
    # 3. Balance: move partitions from the most to the least loaded eligible member while that
    #    narrows the gap (needed for heterogeneous subscriptions and sticky leftovers).
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner, key=lambda x: (str(x[0]), x[1])):
            m = owner[tp]
            best = min(eligible[tp], key=lambda x: (load[x], x))
            if load[m] - load[best] > 1:
                owner[tp] = best
                load[m] -= 1
                load[best] += 1
                moved = True
    for (t, p), m in owner.items():
        out[m].setdefault(t, set()).add(p)
    return _result(out)


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}
