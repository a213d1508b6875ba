"""KIP-848 consumer groups (ConsumerGroupHeartbeat) through the coordinator runtime, and assignors."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.group_driver import Driver, FakeTopics
from zurau.coordinator.group.assignors import MemberSubscription, range_assign, uniform_assign
from zurau.coordinator.group.consumer_group import ConsumerGroup, MemberState
from zurau.protocol import errors as E

G = "cg"
T6 = {("t", p) for p in range(6)}


def cgroup(d: Driver) -> ConsumerGroup:
    g = d.core.groups[G]
    assert isinstance(g, ConsumerGroup)
    return g


def converge(
    d: Driver, members: dict[str, int], owned: dict[str, set[tuple[str, int]]], rounds: int = 4
) -> None:
    """Heartbeat every member (reporting what it owns) until nothing changes."""
    for _ in range(rounds):
        for mid in members:
            r = d.cg(G, mid, members[mid], owned=d.owned(owned[mid]))
            assert r.error_code == 0, (mid, r)
            members[mid] = r.member_epoch
            if r.assignment is not None:
                owned[mid] = d.tp(r.assignment)


def test_first_member_gets_every_partition() -> None:
    d = Driver()
    r = d.cg_join(G, "m1", ["t"])
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5000)
    assert d.tp(r.assignment) == T6
    g = cgroup(d)
    assert (g.group_epoch, g.assignment_epoch, g.state_name()) == (1, 1, "Stable")
    # A plain heartbeat changes nothing and carries no assignment.
    r = d.cg(G, "m1", 1)
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 1, None)


def test_second_member_waits_for_revocation_then_both_converge() -> None:
    d = Driver()
    d.cg_join(G, "m1", ["t"])
    r2 = d.cg_join(G, "m2", ["t"])
    assert r2.member_epoch == 2 and d.tp(r2.assignment) == set(), "m1 still owns every partition"
    assert cgroup(d).members["m2"].state == MemberState.UNRELEASED_PARTITIONS
    # m1 is asked to give up three partitions and keeps its epoch until it has.
    r1 = d.cg(G, "m1", 1)
    kept = d.tp(r1.assignment)
    assert r1.member_epoch == 1 and len(kept) == 3
    assert cgroup(d).members["m1"].state == MemberState.UNREVOKED_PARTITIONS
    r1 = d.cg(G, "m1", 1, owned=d.owned(T6))  # still owns them all: no progress
    assert r1.member_epoch == 1
    r1 = d.cg(G, "m1", 1, owned=d.owned(kept))  # revoked
    assert r1.member_epoch == 2
    r2 = d.cg(G, "m2", 2, owned=[])
    assert d.tp(r2.assignment) == T6 - kept
    assert cgroup(d).state_name() == "Stable"


def test_session_timeout_fences_a_silent_member() -> None:
    d = Driver(consumer_session_timeout_ms=10_000)
    members = {"m1": 0, "m2": 0, "m3": 0}
    owned: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    for m in members:
        r = d.cg_join(G, m, ["t"])
        members[m] = r.member_epoch
        owned[m] = d.tp(r.assignment)
    converge(d, members, owned)
    assert sorted(len(v) for v in owned.values()) == [2, 2, 2]
    assert set().union(*owned.values()) == T6
    # m3 stops heartbeating.
    del members["m3"]
    for _ in range(3):
        d.advance(4000)
        converge(d, members, owned, rounds=1)
    assert "m3" not in cgroup(d).members
    converge(d, members, owned)
    assert len(owned["m1"]) == len(owned["m2"]) == 3 and owned["m1"] | owned["m2"] == T6
    assert d.cg(G, "m3", 3).error_code == E.UnknownMemberIdError.code


def test_leave_and_epoch_fencing() -> None:
    d = Driver()
    d.cg_join(G, "m1", ["t"])
    assert d.cg(G, "m1", 7).error_code == E.FencedMemberEpochError.code
    assert d.cg(G, "m1", 0, topics=["t"], owned=[], rebalance=1000).member_epoch == 1, (
        "rejoin keeps the member"
    )
    r = d.cg(G, "m1", -1)
    assert (r.error_code, r.member_epoch) == (0, -1)
    g = cgroup(d)
    assert not g.members and g.state_name() == "Empty" and g.group_epoch == 2
    assert d.cg(G, "m1", 1).error_code == E.UnknownMemberIdError.code
    assert d.cg("nope", "x", 3).error_code == E.UnknownMemberIdError.code


def test_previous_epoch_is_accepted_with_a_subset_of_the_assignment() -> None:
    d = Driver()
    d.cg_join(G, "m1", ["t"])
    d.cg_join(G, "m2", ["t"])
    kept = d.tp(d.cg(G, "m1", 1).assignment)
    assert d.cg(G, "m1", 1, owned=d.owned(kept)).member_epoch == 2
    # The response with epoch 2 was lost: m1 retries with epoch 1 and what it owns.
    assert d.cg(G, "m1", 1, owned=d.owned(kept)).error_code == 0
    assert d.cg(G, "m1", 1, owned=d.owned(T6)).error_code == E.FencedMemberEpochError.code


@pytest.mark.parametrize(
    "kwargs, code",
    [
        (dict(topics=None, owned=[], rebalance=1000), E.InvalidRequestError.code),
        (dict(topics=["t"], owned=None, rebalance=1000), E.InvalidRequestError.code),
        (dict(topics=["t"], owned=[], rebalance=-1), E.InvalidRequestError.code),
        (dict(topics=["t"], owned=[], rebalance=1000, assignor="nope"), E.UnsupportedAssignorError.code),
        (dict(topics=["t"], owned=[], rebalance=1000, regex="(unclosed"), E.InvalidRequestError.code),
    ],
)
def test_invalid_joins(kwargs: dict, code: int) -> None:
    d = Driver()
    r = d.cg(G, "m1", 0, **kwargs)
    assert r.error_code == code and r.error_message


def test_range_assignor_regex_and_subscription_change() -> None:
    d = Driver(topics=FakeTopics(t=4, u=2, other=3))
    r1 = d.cg_join(G, "a", [], regex="t|u", assignor="range")
    r2 = d.cg_join(G, "b", ["t", "u"], assignor="range")
    members = {"a": r1.member_epoch, "b": r2.member_epoch}
    owned = {"a": d.tp(r1.assignment), "b": d.tp(r2.assignment)}
    converge(d, members, owned)
    assert owned == {"a": {("t", 0), ("t", 1), ("u", 0)}, "b": {("t", 2), ("t", 3), ("u", 1)}}
    (desc,) = d.core.consumer_group_describe([G])
    assert desc["assignor_name"] == "range" and desc["group_state"] == "Stable"
    # b drops "u": a new group epoch and target.
    r = d.cg(G, "b", members["b"], topics=["t"])
    assert r.error_code == 0 and cgroup(d).group_epoch > members["a"]
    assert d.tp(r.assignment) == {("t", 2), ("t", 3)}, "b is told to give up u-1 at once"
    members["b"], owned["b"] = r.member_epoch, d.tp(r.assignment)
    converge(d, members, owned)
    assert owned["b"] == {("t", 2), ("t", 3)} and owned["a"] == {("t", 0), ("t", 1), ("u", 0), ("u", 1)}


def test_new_partitions_are_assigned_at_the_next_heartbeat() -> None:
    d = Driver(topics=FakeTopics(t=2))
    r = d.cg_join(G, "a", ["t"])
    assert len(d.tp(r.assignment)) == 2
    d.topics.add("t", 4)
    r = d.cg(G, "a", r.member_epoch)
    assert d.tp(r.assignment) == {("t", p) for p in range(4)}


def test_static_member_replacement_and_unreleased_instance() -> None:
    d = Driver()
    r = d.cg_join(G, "m1", ["t"], instance="inst")
    mine = d.tp(r.assignment)
    assert d.cg_join(G, "m2", ["t"], instance="inst").error_code == E.UnreleasedInstanceIdError.code
    r = d.cg(G, "m1", -2, instance="inst")
    assert (r.error_code, r.member_epoch) == (0, -2)
    r = d.cg_join(G, "m2", ["t"], instance="inst")
    assert r.error_code == 0 and d.tp(r.assignment) == mine
    assert set(cgroup(d).members) == {"m2"} and cgroup(d).group_epoch == 1


def test_unrevoked_partitions_time_out() -> None:
    d = Driver(consumer_session_timeout_ms=60_000)
    d.cg_join(G, "m1", ["t"], rebalance=5000)
    d.cg_join(G, "m2", ["t"])
    d.cg(G, "m1", 1)  # told to revoke; never acknowledges
    d.advance(4000)
    d.cg(G, "m1", 1, owned=d.owned(T6))
    d.advance(1000)
    assert "m1" not in cgroup(d).members
    r = d.cg(G, "m2", 2, owned=[])
    assert d.tp(r.assignment) == T6


def test_offset_commit_checks_the_member_epoch() -> None:
    d = Driver()
    d.cg_join(G, "m1", ["t"])
    assert d.commit(G, {("t", 0): 4}, member_id="m1", generation=1, api_version=9) == {("t", 0): 0}
    assert d.commit(G, {("t", 0): 5}, member_id="m1", generation=0, api_version=9) == {
        ("t", 0): E.StaleMemberEpochError.code
    }
    assert d.commit(G, {("t", 0): 5}, member_id="zz", generation=1) == {("t", 0): E.UnknownMemberIdError.code}
    r = d.core.fetch_offsets(G, [("t", [0])], member_id="m1", member_epoch=0)
    assert r.error_code == E.StaleMemberEpochError.code
    r = d.core.fetch_offsets(G, [("t", [0])], member_id="m1", member_epoch=1)
    assert r.topics[0][1][0].offset == 4


def test_restart_rebuilds_consumer_groups() -> None:
    d = Driver()
    members = {"m1": 0, "m2": 0}
    owned: dict[str, set[tuple[str, int]]] = {"m1": set(), "m2": set()}
    for m in members:
        r = d.cg_join(G, m, ["t"])
        members[m] = r.member_epoch
        owned[m] = d.tp(r.assignment)
    converge(d, members, owned)
    d.commit(G, {("t", 1): 9}, member_id="m1", generation=members["m1"], api_version=9)
    before = cgroup(d)
    core = d.rebuild()
    after = core.groups[G]
    assert isinstance(after, ConsumerGroup)
    for f in ("group_epoch", "assignment_epoch", "metadata_hash", "members", "target", "owners"):
        assert getattr(after, f) == getattr(before, f), f
    assert core.offsets == d.core.offsets
    d.core = core
    r = d.cg(G, "m1", members["m1"])
    assert r.error_code == 0 and r.member_epoch == members["m1"]


def test_classic_and_consumer_groups_do_not_mix() -> None:
    d = Driver()
    d.cg_join(G, "m1", ["t"])
    r = d.reply(d.join(G))
    assert r.error_code == E.InconsistentGroupProtocolError.code
    d.join_with_id("classic")
    assert d.cg_join("classic", "x", ["t"]).error_code == E.GroupIdNotFoundError.code
    # An empty classic group (offsets only) is taken over by the consumer protocol.
    d.commit("simple", {("t", 0): 3})
    assert d.cg_join("simple", "x", ["t"]).error_code == 0
    assert isinstance(d.core.groups["simple"], ConsumerGroup) and d.committed("simple")[0] == 3
    assert d.rebuild().offsets["simple"] == d.core.offsets["simple"]


# ------------------------------------------------------------------------------ assignors


def _subs(
    ids: list[str], topics: set[uuid.UUID], previous: dict[str, dict] | None = None
) -> dict[str, MemberSubscription]:
    return {m: MemberSubscription(frozenset(topics), (previous or {}).get(m, {})) for m in ids}


T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def _count(a: dict) -> dict[str, int]:
    return {m: sum(len(p) for p in x.values()) for m, x in a.items()}


def test_uniform_is_balanced_complete_and_sticky() -> None:
    parts = {T1: 7, T2: 5}
    a = uniform_assign(_subs(["a", "b", "c"], {T1, T2}), parts)
    assert sorted(_count(a).values()) == [4, 4, 4]
    every = [(t, p) for m in a.values() for t, ps in m.items() for p in ps]
    assert sorted(every) == sorted([(T1, p) for p in range(7)] + [(T2, p) for p in range(5)])
    b = uniform_assign(_subs(["a", "b", "c", "d"], {T1, T2}, a), parts)
    assert sorted(_count(b).values()) == [3, 3, 3, 3]
    moved = sum(len(ps - b[m].get(t, frozenset())) for m in a for t, ps in a[m].items())
    assert moved == 3, "only the new member's share moves"


def test_uniform_heterogeneous_subscriptions() -> None:
    subs = {
        "a": MemberSubscription(frozenset({T1}), {}),
        "b": MemberSubscription(frozenset({T1, T2}), {}),
    }
    a = uniform_assign(subs, {T1: 4, T2: 4})
    assert set(a["a"]) <= {T1} and sum(_count(a).values()) == 8
    assert _count(a) == {"a": 4, "b": 4}


def test_range_assignor_per_topic() -> None:
    a = range_assign(_subs(["b", "a"], {T1}), {T1: 5})
    assert a == {"a": {T1: frozenset({0, 1, 2})}, "b": {T1: frozenset({3, 4})}}
