"""The classic group protocol and offsets, driven through the coordinator runtime (see group_driver.py)."""

from __future__ import annotations

import pytest

from tests.unit.group_driver import Driver
from zurau.coordinator.group.group_metadata import ClassicGroup, GroupState, IllegalStateTransition
from zurau.coordinator.group.results import JoinGroupResult, SyncGroupResult
from zurau.protocol import errors as E

G = "group-1"


def group(d: Driver, gid: str = G) -> ClassicGroup:
    g = d.core.groups[gid]
    assert isinstance(g, ClassicGroup)
    return g


def stable_group(d: Driver, n: int, gid: str = G, **kw: object) -> tuple[list[str], int]:
    """n members joined and synced (the first is the leader); returns (member ids, generation)."""
    ids, tokens = [], []
    for i in range(n):
        mid, t = d.join_with_id(gid, client_id=f"c{i}", **kw)  # type: ignore[arg-type]
        ids.append(mid)
        tokens.append(t)
    # InitialDelayedJoin: the delay restarts while new members keep arriving (bounded by the
    # rebalance timeout), so several members joining at once wait two delays.
    d.advance(2 * d.config.initial_rebalance_delay_ms)
    results: list[JoinGroupResult] = [d.reply(t) for t in tokens]
    gen = results[0].generation_id
    assert all(r.error_code == 0 and r.generation_id == gen for r in results)
    leader = results[0].leader
    syncs = [d.sync(gid, m, gen) for m in ids if m != leader]
    syncs.append(d.sync(gid, leader, gen, {m: f"assign-{m}".encode() for m in ids}))
    for t in syncs:
        assert d.reply(t).error_code == 0
    assert group(d, gid).state == GroupState.STABLE
    return ids, gen


# ------------------------------------------------------------------------------ join


def test_member_id_required_round_trip_then_initial_delay() -> None:
    d = Driver()
    t = d.join(G)
    r = d.reply(t)
    assert r.error_code == E.MemberIdRequiredError.code
    assert r.member_id.startswith("c-")
    t2 = d.join(G, r.member_id)
    assert d.pending(t2), "the first join waits for group.initial.rebalance.delay.ms"
    d.advance(2999)
    assert d.pending(t2)
    d.advance(1)
    r2: JoinGroupResult = d.reply(t2)
    assert (r2.error_code, r2.generation_id, r2.protocol_name, r2.leader) == (0, 1, "range", r.member_id)
    assert r2.members == [(r.member_id, None, b"meta-c")]
    assert group(d).state == GroupState.COMPLETING_REBALANCE


def test_join_v3_needs_no_member_id_round_trip() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    t = d.join(G, version=3)
    r = d.reply(t)
    assert r.error_code == 0 and r.member_id and r.generation_id == 1


def test_unknown_member_id_and_pending_member_expiry() -> None:
    d = Driver()
    assert d.reply(d.join(G, "nobody")).error_code == E.UnknownMemberIdError.code
    assert G not in d.core.groups, "a failed first join leaves no group behind"
    r = d.reply(d.join(G, session=6000))
    assert G in d.core.groups and r.member_id in group(d).pending_members
    d.advance(6000)
    assert not group(d).pending_members
    assert d.reply(d.join(G, r.member_id)).error_code == E.UnknownMemberIdError.code, (
        "the handed-out id expired"
    )


def test_protocol_selection_across_members() -> None:
    d = Driver()
    a, ta = d.join_with_id(G, protocols=[("range", b"a1"), ("roundrobin", b"a2")], client_id="a")
    b, tb = d.join_with_id(G, protocols=[("roundrobin", b"b2"), ("range", b"b1")], client_id="b")
    c, tc = d.join_with_id(G, protocols=[("range", b"c1"), ("roundrobin", b"c2")], client_id="c")
    d.advance(6000)
    leader = d.reply(ta)
    assert leader.protocol_name == "range"  # two of three prefer it
    assert leader.members == [(a, None, b"a1"), (b, None, b"b1"), (c, None, b"c1")]
    assert d.reply(tb).members == [] and d.reply(tb).leader == a
    # A member supporting only roundrobin narrows the candidates: the next generation uses it.
    x, tx = d.join_with_id(G, protocols=[("roundrobin", b"x2")], client_id="x")
    for mid, protos in (
        (a, [("range", b"a1"), ("roundrobin", b"a2")]),
        (b, [("roundrobin", b"b2"), ("range", b"b1")]),
        (c, [("range", b"c1"), ("roundrobin", b"c2")]),
    ):
        d.join(G, mid, protocols=protos)
    r = d.reply(tx)
    assert r.error_code == 0 and r.protocol_name == "roundrobin" and r.generation_id == 2
    bad = d.reply(d.join(G, protocols=[("sticky", b"")]))
    assert bad.error_code == E.InconsistentGroupProtocolError.code


def test_invalid_session_timeout_and_group_id() -> None:
    d = Driver()
    assert d.reply(d.join(G, session=5999)).error_code == E.InvalidSessionTimeoutError.code
    assert d.reply(d.join("", session=10_000)).error_code == E.InvalidGroupIdError.code


def test_group_max_size() -> None:
    d = Driver(group_max_size=2)
    d.join_with_id(G, client_id="a")
    d.join_with_id(G, client_id="b")
    assert d.reply(d.join(G, client_id="c")).error_code == E.GroupMaxSizeReachedError.code


# ------------------------------------------------------------------------------ sync and heartbeat


def test_sync_waits_for_the_leader_and_assignments_reach_every_member() -> None:
    d = Driver()
    a, ta = d.join_with_id(G, client_id="a")
    b, tb = d.join_with_id(G, client_id="b")
    d.advance(6000)
    gen = d.reply(ta).generation_id
    assert d.heartbeat(G, b, gen) == 0, "heartbeats are fine while completing the rebalance"
    tsb = d.sync(G, b, gen)
    assert d.pending(tsb)
    tsa = d.sync(G, a, gen, {a: b"A", b: b"B"})
    ra: SyncGroupResult = d.reply(tsa)
    rb: SyncGroupResult = d.reply(tsb)
    assert (ra.error_code, ra.assignment, rb.assignment) == (0, b"A", b"B")
    assert ra.protocol_name == "range" and ra.protocol_type == "consumer"
    assert group(d).state == GroupState.STABLE
    # In Stable a repeated sync answers at once with the stored assignment.
    assert d.reply(d.sync(G, b, gen)).assignment == b"B"
    assert d.log[-1].key_version == 2 and d.log[-1].value["generation"] == gen  # type: ignore[index]


def test_generation_fencing() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    # b rejoins with new metadata: a rebalance; the old generation is fenced afterwards.
    tb = d.join(G, b, protocols=[("range", b"new")])
    assert d.heartbeat(G, a, gen) == E.RebalanceInProgressError.code
    ta = d.join(G, a, protocols=[("range", b"meta-c0")])
    assert d.reply(ta).generation_id == gen + 1 and d.reply(tb).generation_id == gen + 1
    assert d.heartbeat(G, a, gen) == E.IllegalGenerationError.code
    assert d.reply(d.sync(G, a, gen)).error_code == E.IllegalGenerationError.code
    res = d.commit(G, {("t", 0): 5}, member_id=a, generation=gen)
    assert res == {("t", 0): E.IllegalGenerationError.code}
    # A commit while the new generation's assignment is being decided: REBALANCE_IN_PROGRESS.
    res = d.commit(G, {("t", 0): 5}, member_id=a, generation=gen + 1)
    assert res == {("t", 0): E.RebalanceInProgressError.code}
    assert d.heartbeat(G, "nobody", gen + 1) == E.UnknownMemberIdError.code


def test_session_timeout_removes_a_silent_member_and_the_others_rebalance() -> None:
    d = Driver()
    (a, b, c), gen = stable_group(d, 3, session=10_000)
    for _ in range(3):
        d.advance(3000)
        assert d.heartbeat(G, a, gen) == 0
        assert d.heartbeat(G, b, gen) == 0
    assert c in group(d).members, "9 s of silence is within the 10 s session"
    d.advance(1000)
    # c has been silent for 10 s: gone; the others are told to rejoin.
    assert c not in group(d).members
    assert group(d).state == GroupState.PREPARING_REBALANCE
    assert d.heartbeat(G, a, gen) == E.RebalanceInProgressError.code
    ta = d.join(G, a, protocols=[("range", b"meta-c0")])
    assert d.pending(ta)
    tb = d.join(G, b, protocols=[("range", b"meta-c1")])
    # Every remaining member rejoined: the join completes at once (no waiting for the timeout).
    ra, rb = d.reply(ta), d.reply(tb)
    assert ra.generation_id == rb.generation_id == gen + 1
    assert sorted(m for m, _, _ in ra.members) == sorted([a, b])


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2, rebalance=20_000, session=30_000)
    x, tx = d.join_with_id(G, client_id="x", rebalance=20_000, session=30_000)
    ta = d.join(G, a, protocols=[("range", b"meta-c0")], rebalance=20_000, session=30_000)
    d.advance(19_999)
    assert d.pending(tx) and d.pending(ta)
    d.advance(1)
    assert d.reply(ta).generation_id == gen + 1
    assert b not in group(d).members, "b never rejoined within the rebalance timeout"


def test_members_that_never_sync_are_removed() -> None:
    d = Driver()
    a, ta = d.join_with_id(G, client_id="a", rebalance=10_000, session=30_000)
    b, tb = d.join_with_id(G, client_id="b", rebalance=10_000, session=30_000)
    d.advance(6000)
    gen = d.reply(ta).generation_id
    assert d.reply(d.sync(G, a, gen, {a: b"A", b: b"B"})).error_code == 0
    d.advance(10_000)
    assert b not in group(d).members
    assert group(d).state == GroupState.PREPARING_REBALANCE


def test_leader_sync_write_failure_fails_the_generation() -> None:
    d = Driver()
    a, ta = d.join_with_id(G, client_id="a")
    b, tb = d.join_with_id(G, client_id="b")
    d.advance(6000)
    gen = d.reply(ta).generation_id
    tsb = d.sync(G, b, gen)
    d.fail_writes = E.NotEnoughReplicasError("no")
    tsa = d.sync(G, a, gen, {a: b"A", b: b"B"})
    assert d.reply(tsa).error_code == E.CoordinatorNotAvailableError.code
    assert d.reply(tsb).error_code == E.CoordinatorNotAvailableError.code
    assert group(d).state == GroupState.PREPARING_REBALANCE


# ------------------------------------------------------------------------------ leave


def test_leave_group_batched_and_the_last_one_out_empties_the_group() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    t = d.call("leave_group", group_id=G, members=[(a, None), ("ghost", None)])
    r = d.reply(t)
    assert r.error_code == 0 and r.members == [(a, None, 0), ("ghost", None, E.UnknownMemberIdError.code)]
    assert group(d).state == GroupState.PREPARING_REBALANCE
    assert d.reply(d.call("leave_group", group_id=G, members=[(b, None)])).members == [(b, None, 0)]
    g = group(d)
    assert g.state == GroupState.EMPTY and g.generation_id == gen + 1 and g.leader_id is None
    assert d.log[-1].key_version == 2 and d.log[-1].value["members"] == []  # type: ignore[index]


def test_leaving_releases_a_parked_join() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    ta = d.join(G, a, protocols=[("range", b"meta-c0")])
    assert d.pending(ta)
    d.call("leave_group", group_id=G, members=[(b, None)])
    assert d.reply(ta).generation_id == gen + 1


# ------------------------------------------------------------------------------ static membership


def test_static_member_rejoins_without_rebalance_and_fences_the_old_id() -> None:
    d = Driver()
    ta = d.join(G, instance="i-1", client_id="s")
    tb = d.join(G, instance="i-2", client_id="t")
    d.advance(6000)
    a, b = d.reply(ta).member_id, d.reply(tb).member_id
    gen = d.reply(ta).generation_id
    assert d.reply(d.sync(G, a, gen, {a: b"A", b: b"B"}, instance="i-1")).error_code == 0
    assert d.reply(d.sync(G, b, gen, instance="i-2")).assignment == b"B"
    # i-2 restarts: a new member id, same protocols -> no rebalance, same generation.
    t = d.join(G, instance="i-2", client_id="t")
    r = d.reply(t)
    assert r.error_code == 0 and r.generation_id == gen and r.member_id != b
    assert group(d).state == GroupState.STABLE
    assert d.reply(d.sync(G, r.member_id, gen, instance="i-2")).assignment == b"B"
    assert d.heartbeat(G, b, gen, instance="i-2") == E.FencedInstanceIdError.code
    # Leaving by instance id alone.
    lr = d.reply(d.call("leave_group", group_id=G, members=[("", "i-2")]))
    assert lr.members == [("", "i-2", 0)]


def test_static_members_keep_their_slot_when_they_do_not_rejoin() -> None:
    d = Driver()
    ta = d.join(G, instance="i-1", client_id="s", session=30_000)
    tb = d.join(G, instance="i-2", client_id="t", session=30_000)
    d.advance(6000)
    a, b = d.reply(ta).member_id, d.reply(tb).member_id
    gen = d.reply(ta).generation_id
    d.sync(G, a, gen, {a: b"A", b: b"B"}, instance="i-1")
    ta2 = d.join(G, a, protocols=[("range", b"changed")], instance="i-1", session=30_000)
    for _ in range(2):
        d.advance(10_000)
        assert (
            d.heartbeat(G, b, gen, instance="i-2") == E.RebalanceInProgressError.code
        )  # alive, not rejoining
    d.advance(9_999)
    assert d.pending(ta2), "the join waits for the rebalance timeout (b never rejoins)"
    d.advance(1)
    r = d.reply(ta2)
    assert r.generation_id == gen + 1 and b in group(d).members
    assert sorted(m for m, _, _ in r.members) == sorted([a, b])


# ------------------------------------------------------------------------------ offsets


def test_commit_fetch_and_metadata_round_trip() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    res = d.commit(G, {("t", 0): 10, ("t", 1): 20}, member_id=a, generation=gen, metadata="ünï")
    assert res == {("t", 0): 0, ("t", 1): 0}
    r = d.core.fetch_offsets(G, [("t", [0, 1, 2])])
    assert [(f.partition, f.offset, f.leader_epoch, f.metadata) for f in r.topics[0][1]] == [
        (0, 10, 3, "ünï"),
        (1, 20, 3, "ünï"),
        (2, -1, -1, ""),
    ]
    everything = d.core.fetch_offsets(G, None)
    assert [(t, [f.partition for f in fs]) for t, fs in everything.topics] == [("t", [0, 1])]
    # Not a member, generation -1, group not empty: refused.
    assert d.commit(G, {("t", 0): 1}) == {("t", 0): E.UnknownMemberIdError.code}
    assert d.commit(G, {("t", 0): 1}, member_id="x", generation=gen) == {
        ("t", 0): E.UnknownMemberIdError.code
    }
    big = d.commit(G, {("t", 0): 1}, member_id=a, generation=gen, metadata="x" * 5000)
    assert big == {("t", 0): E.OffsetMetadataTooLargeError.code}
    assert d.committed(G)[0] == 10


def test_standalone_commits_create_a_simple_group() -> None:
    d = Driver()
    assert d.commit("simple", {("t", 0): 7}) == {("t", 0): 0}
    listed = d.core.list_groups()
    assert [(g.group_id, g.protocol_type, g.state, g.group_type) for g in listed] == [
        ("simple", "", "Empty", "classic")
    ]
    assert d.commit("nothere", {("t", 0): 7}, member_id="m", generation=3) == {
        ("t", 0): E.IllegalGenerationError.code
    }
    assert d.commit("nothere", {("t", 0): 7}, member_id="m", generation=3, api_version=9) == {
        ("t", 0): E.GroupIdNotFoundError.code
    }


def test_offset_commit_write_failure_maps_errors() -> None:
    d = Driver()
    d.fail_writes = E.NotLeaderOrFollowerError("moved")
    assert d.commit("g", {("t", 0): 1}) == {("t", 0): E.NotCoordinatorError.code}
    d.fail_writes = E.MessageTooLargeError("big")
    assert d.commit("g", {("t", 0): 1}) == {("t", 0): E.InvalidCommitOffsetSizeError.code}
    assert "g" not in d.core.offsets


def test_offset_delete_refuses_subscribed_topics() -> None:
    d = Driver()
    sub = b"\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"  # topics ["t"]
    a, ta = d.join_with_id(G, protocols=[("range", sub)])
    d.advance(3000)
    gen = d.reply(ta).generation_id
    d.sync(G, a, gen, {a: b""})
    d.commit(G, {("t", 0): 1, ("u", 0): 2}, member_id=a, generation=gen)
    t = d.call("delete_offsets", group_id=G, partitions=[("t", 0), ("u", 0)])
    assert d.reply(t) == (0, {("t", 0): E.GroupSubscribedToTopicError.code, ("u", 0): 0})
    assert d.committed(G)[0] == 1 and d.committed(G, "u", range(1)) == {0: -1}
    assert (
        d.reply(d.call("delete_offsets", group_id="nope", partitions=[("t", 0)]))[0]
        == E.GroupIdNotFoundError.code
    )


def test_delete_groups() -> None:
    d = Driver()
    (a,), gen = stable_group(d, 1)
    d.commit(G, {("t", 0): 1}, member_id=a, generation=gen)
    r = d.reply(d.call("delete_groups", group_ids=[G, "missing", ""]))
    assert r == {
        G: E.NonEmptyGroupError.code,
        "missing": E.GroupIdNotFoundError.code,
        "": E.InvalidGroupIdError.code,
    }
    d.call("leave_group", group_id=G, members=[(a, None)])
    assert d.reply(d.call("delete_groups", group_ids=[G])) == {G: 0}
    assert G not in d.core.groups and G not in d.core.offsets
    assert d.committed(G)[0] == -1


def test_offsets_of_empty_groups_expire_after_retention() -> None:
    d = Driver(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000)
    (a,), gen = stable_group(d, 1)
    d.commit(G, {("t", 0): 1}, member_id=a, generation=gen)
    d.commit("simple", {("t", 0): 5})
    for _ in range(20):
        d.advance(5000)
        assert d.heartbeat(G, a, gen) == 0
    assert d.committed(G)[0] == 1, "a live group keeps its offsets"
    assert d.committed("simple")[0] == -1 and "simple" not in d.core.groups
    d.call("leave_group", group_id=G, members=[(a, None)])
    d.advance(50_000)
    assert d.committed(G)[0] == 1, "retention counts from when the group became empty"
    d.advance(20_000)
    assert d.committed(G)[0] == -1 and G not in d.core.groups


# ------------------------------------------------------------------------------ admin and restart


def test_list_and_describe() -> None:
    d = Driver()
    stable_group(d, 2, gid="g-stable")
    d.join_with_id("g-preparing")
    d.commit("g-simple", {("t", 0): 1})
    states = {g.group_id: g.state for g in d.core.list_groups()}
    assert states == {"g-stable": "Stable", "g-preparing": "PreparingRebalance", "g-simple": "Empty"}
    assert [g.group_id for g in d.core.list_groups(["stable"])] == ["g-stable"]
    assert [g.group_id for g in d.core.list_groups(types_filter=["consumer"])] == []
    (desc, missing) = d.core.describe_groups(["g-stable", "nope"])
    assert desc.state == "Stable" and desc.protocol_data == "range" and len(desc.members) == 2
    assert desc.members[0].assignment.startswith(b"assign-") and desc.members[0].metadata == b"meta-c0"
    assert missing.error_code == E.GroupIdNotFoundError.code and missing.state == "Dead"


def test_restart_rebuilds_groups_and_offsets_from_the_log() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    d.commit(G, {("t", 0): 11, ("t", 5): 55}, member_id=a, generation=gen, metadata="m")
    d.commit(G, {("t", 0): 12}, member_id=a, generation=gen)
    d.commit("simple", {("u", 1): 3})
    core = d.rebuild()
    g = core.groups[G]
    assert isinstance(g, ClassicGroup)
    assert (g.state, g.generation_id, g.protocol_name, g.leader_id) == (GroupState.STABLE, gen, "range", a)
    assert {m: x.assignment for m, x in g.members.items()} == {
        a: f"assign-{a}".encode(),
        b: f"assign-{b}".encode(),
    }
    assert core.offsets == d.core.offsets
    # The members keep heartbeating with their generation; a silent one expires.
    d.core = core
    assert d.heartbeat(G, a, gen) == 0
    d.advance(6000)
    assert d.heartbeat(G, a, gen) == 0
    d.advance(6000)
    assert b not in g.members and g.state == GroupState.PREPARING_REBALANCE


def test_illegal_transitions_are_refused() -> None:
    g = ClassicGroup("x")
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.STABLE, 0)
    g.transition_to(GroupState.PREPARING_REBALANCE, 0)
    with pytest.raises(IllegalStateTransition):
        g.transition_to(GroupState.STABLE, 0)


def test_empty_group_checkpoint_keeps_pending_members() -> None:
    d = Driver()
    (a,), gen = stable_group(d, 1)  # rebalance timeout 30 s
    pending = d.reply(d.join(G, client_id="late", session=60_000)).member_id
    d.call("leave_group", group_id=G, members=[(a, None)])
    g = group(d)
    d.advance(30_000)  # the join phase ends with no member: Empty, checkpointed
    assert g.state == GroupState.EMPTY and d.log[-1].value["members"] == []  # type: ignore[index]
    assert group(d) is g and pending in g.pending_members, "replaying our own checkpoint changes nothing"
    t = d.join(G, pending, session=60_000)
    d.advance(3000)
    assert d.reply(t).error_code == 0 and d.reply(t).generation_id == gen + 2


def test_deleted_topics_lose_their_offsets() -> None:
    d = Driver()
    d.commit("a", {("t", 0): 1, ("u", 0): 2})
    d.commit("b", {("t", 1): 3})
    d.rt.on_topic_deleted("t")
    assert d.core.offsets == {"a": {("u", 0): d.core.offsets["a"][("u", 0)]}}
    assert d.rebuild().offsets == d.core.offsets
