"""Static membership (KIP-345) in the classic group protocol, driven through the coordinator runtime.

A static member (``group.instance.id``) that restarts joins again with an empty member id; the
coordinator hands its slot to a new member id without a rebalance for anyone else, fences the old
id, and a static member that stays silent past its session timeout is removed with a rebalance.
librdkafka sends JoinGroup v5 at most, so the v0-v8 answer to a rejoining leader matters.
"""

from __future__ import annotations

from tests.unit.group_driver import Driver
from zurau.coordinator.group.group_metadata import ClassicGroup, GroupState
from zurau.protocol import errors as E

G = "static-group"


def group(d: Driver) -> ClassicGroup:
    g = d.core.groups[G]
    assert isinstance(g, ClassicGroup)
    return g


def static_pair(d: Driver, protocols: list[tuple[str, bytes]] | None = None) -> tuple[str, str, int]:
    """Static members i-1 (the leader) and i-2, Stable; returns (id of i-1, id of i-2, generation)."""
    ta = d.join(G, instance="i-1", client_id="s", protocols=protocols)
    tb = d.join(G, instance="i-2", client_id="t", protocols=protocols)
    d.advance(6000)
    ra, rb = d.reply(ta), d.reply(tb)
    a, b, gen = ra.member_id, rb.member_id, ra.generation_id
    assert ra.leader == a
    tsb = d.sync(G, b, gen, instance="i-2")
    assert d.reply(d.sync(G, a, gen, {a: b"A", b: b"B"}, instance="i-1")).error_code == 0
    assert d.reply(tsb).assignment == b"B"
    assert group(d).state == GroupState.STABLE
    return a, b, gen


def test_the_leader_restarting_with_join_v5_keeps_the_generation() -> None:
    d = Driver()
    a, b, gen = static_pair(d)
    # i-1, the leader, restarts (librdkafka: no LeaveGroup on close, JoinGroup v5 with no id).
    r = d.reply(d.join(G, instance="i-1", client_id="s", version=5))
    assert r.error_code == 0 and r.member_id not in (a, b)
    assert r.generation_id == gen, "no new generation"
    assert r.leader == a, "a v5 join is told the previous leader id, so it runs no assignment"
    assert r.members == [] and not r.skip_assignment
    g = group(d)
    assert g.state == GroupState.STABLE and g.generation_id == gen and g.leader_id == r.member_id
    assert d.heartbeat(G, b, gen, instance="i-2") == 0, "the other member sees no rebalance"
    assert d.reply(d.sync(G, r.member_id, gen, instance="i-1")).assignment == b"A"
    assert d.heartbeat(G, a, gen, instance="i-1") == E.FencedInstanceIdError.code
    assert d.reply(d.sync(G, a, gen, instance="i-1")).error_code == E.FencedInstanceIdError.code
    # The new id is checkpointed: a restarted coordinator knows it.
    d.core = d.rebuild()
    assert r.member_id in group(d).members and a not in group(d).members


def test_the_leader_restarting_with_join_v9_is_told_to_skip_the_assignment() -> None:
    d = Driver()
    a, b, gen = static_pair(d)
    r = d.reply(d.join(G, instance="i-1", client_id="s", version=9))
    assert r.error_code == 0 and r.generation_id == gen
    assert r.leader == r.member_id and r.skip_assignment
    assert sorted(m for m, _, _ in r.members) == sorted([r.member_id, b])
    assert group(d).state == GroupState.STABLE


def test_a_restart_with_new_metadata_for_the_same_protocol_does_not_rebalance() -> None:
    """cooperative-sticky metadata carries the owned partitions, which a restart has lost."""
    d = Driver()
    a, b, gen = static_pair(d, protocols=[("cooperative-sticky", b"owned:2,3")])
    r = d.reply(d.join(G, instance="i-2", client_id="t", protocols=[("cooperative-sticky", b"owned:")]))
    assert r.error_code == 0 and r.generation_id == gen
    assert group(d).state == GroupState.STABLE
    assert d.heartbeat(G, a, gen, instance="i-1") == 0
    assert d.reply(d.sync(G, r.member_id, gen, instance="i-2")).assignment == b"B"
    assert group(d).members[r.member_id].protocols == [("cooperative-sticky", b"owned:")]


def test_a_restart_that_changes_the_selected_protocol_rebalances() -> None:
    d = Driver()
    a, b, gen = static_pair(d, protocols=[("range", b"x"), ("roundrobin", b"y")])
    t = d.join(G, instance="i-2", client_id="t", protocols=[("roundrobin", b"y")])
    assert d.pending(t)
    assert group(d).state == GroupState.PREPARING_REBALANCE
    assert d.heartbeat(G, a, gen, instance="i-1") == E.RebalanceInProgressError.code
    ta = d.join(G, a, instance="i-1", protocols=[("range", b"x"), ("roundrobin", b"y")])
    assert d.reply(ta).protocol_name == "roundrobin" and d.reply(t).generation_id == gen + 1


def test_a_failed_checkpoint_gives_the_slot_back_to_the_old_member_id() -> None:
    d = Driver()
    a, b, gen = static_pair(d)
    d.fail_writes = E.NotEnoughReplicasError("no")
    r = d.reply(d.join(G, instance="i-2", client_id="t"))
    assert r.error_code == E.CoordinatorNotAvailableError.code
    d.fail_writes = None
    assert b in group(d).members and group(d).static_members["i-2"] == b
    assert group(d).state == GroupState.STABLE
    # The old id's session timer runs again: if the restarted member gives up, silence removes it.
    for _ in range(3):
        d.advance(3_000)
        assert d.heartbeat(G, a, gen, instance="i-1") == 0
    d.advance(1_000)
    assert b not in group(d).members and group(d).state == GroupState.PREPARING_REBALANCE


def test_a_static_member_silent_past_its_session_timeout_is_removed() -> None:
    d = Driver()
    a, b, gen = static_pair(d)
    for _ in range(3):
        d.advance(3000)
        assert d.heartbeat(G, a, gen, instance="i-1") == 0
    d.advance(1000)
    g = group(d)
    assert b not in g.members and "i-2" not in g.static_members
    assert g.state == GroupState.PREPARING_REBALANCE
    assert d.heartbeat(G, a, gen, instance="i-1") == E.RebalanceInProgressError.code
    r = d.reply(d.join(G, a, instance="i-1"))
    assert r.generation_id == gen + 1 and [m for m, _, _ in r.members] == [a]
    # i-2 comes back later: a new member of the group, another rebalance.
    t = d.join(G, instance="i-2", client_id="t")
    assert d.pending(t) and group(d).state == GroupState.PREPARING_REBALANCE


def test_leave_group_by_instance_id_fences_a_stale_member_id() -> None:
    d = Driver()
    a, b, gen = static_pair(d)
    r = d.reply(d.join(G, instance="i-2", client_id="t"))
    lr = d.reply(d.call("leave_group", group_id=G, members=[(b, "i-2")]))
    assert lr.members == [(b, "i-2", E.FencedInstanceIdError.code)]
    assert r.member_id in group(d).members and group(d).state == GroupState.STABLE
    lr = d.reply(d.call("leave_group", group_id=G, members=[("", "i-2"), ("", "i-9")]))
    assert lr.members == [("", "i-2", 0), ("", "i-9", E.UnknownMemberIdError.code)]
    assert r.member_id not in group(d).members and group(d).state == GroupState.PREPARING_REBALANCE
