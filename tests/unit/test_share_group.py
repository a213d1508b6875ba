"""KIP-932 share groups: the ShareGroupHeartbeat state machine, the simple assignor, the records.

The harness runs :class:`ShareGroupManager` on a real :class:`GroupShardContext` with an
in-memory log: every write is encoded to ``__consumer_offsets`` bytes, decoded and replayed
before its continuation runs (as the runtime does), and time is a number advanced by the test.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.group_driver import FakeTopics
from zurau.config import BrokerConfig
from zurau.coordinator.group import share_group_records as SR
from zurau.coordinator.group.assignors import MemberSubscription
from zurau.coordinator.group.consumer_group import ConsumerGroup
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import Effects
from zurau.coordinator.group.shard_context import GroupShardContext
from zurau.coordinator.group.share_assignor import simple_assign
from zurau.coordinator.group.share_group import (
    ShareGroup,
    ShareGroupConfig,
    ShareGroupHeartbeatResult,
    ShareGroupManager,
)
from zurau.protocol import errors as E

G = "sg"
GC = BrokerConfig({}).group_coordinator


class Harness:
    def __init__(self, auto_init: bool = True, **cfg: Any) -> None:
        self.topics = FakeTopics(t=4, u=2)
        self.ctx = GroupShardContext(GC, self.topics)
        self.mgr = ShareGroupManager(self.ctx, ShareGroupConfig(**cfg))
        self.log: list[tuple[bytes, bytes | None]] = []
        self.now = 1_000
        self.auto_init = auto_init
        self.pending_init: list[tuple[str, dict[uuid.UUID, frozenset[int]]]] = []

    def run(self, fx: Effects) -> list[Any]:
        replies: list[Any] = []
        queue = [fx]
        while queue:
            f = queue.pop(0)
            replies += [r for _tok, r in f.replies]
            for w in f.writes:
                assert w.partition == self.ctx.partition_for(w.group_id)
                for rec in w.records:
                    key, value = SR.encode(rec)
                    self.log.append((key, value))
                    decoded = SR.decode(key, value)
                    assert decoded == rec
                    self.mgr.replay_record(decoded)
                fx2 = Effects()
                w.then(None, self.now, fx2)
                queue.append(fx2)
        return replies

    def hb(
        self,
        mid: str,
        epoch: int,
        names: list[str] | None = None,
        group: str = G,
        rack: str | None = None,
        init: bool | None = None,
    ) -> ShareGroupHeartbeatResult:
        fx = self.mgr.share_group_heartbeat(
            "tok",
            group_id=group,
            member_id=mid,
            member_epoch=epoch,
            rack_id=rack,
            subscribed_topic_names=names,
            client_id="c-" + mid,
            client_host="/10.0.0.1",
            now_ms=self.now,
        )
        (r,) = self.run(fx)
        assert isinstance(r, ShareGroupHeartbeatResult)
        if r.to_initialize:
            assert r.initialize_epoch >= 1
            self.pending_init.append((group, r.to_initialize))
            if self.auto_init if init is None else init:
                self.initialize()
        return r

    def initialize(self) -> None:
        """The share coordinator initialized every partition asked for."""
        for gid, tps in self.pending_init:
            self.run(self.mgr.share_group_initialized(gid, tps))
        self.pending_init.clear()

    def join(self, mid: str, names: list[str], group: str = G) -> ShareGroupHeartbeatResult:
        """Join, and heartbeat once more if the join asked for share-state initialization (its
        partitions are assigned from the next epoch)."""
        r = self.hb(mid, 0, names, group)
        assert r.error_code == 0, r
        if r.to_initialize:
            r = self.hb(mid, r.member_epoch, group=group)
        return r

    def advance(self, ms: int) -> None:
        self.now += ms
        for p in range(GC.num_partitions):
            for cb in self.ctx.timers.expired(self.now, p):
                fx = Effects()
                cb(self.now, fx)
                self.run(fx)

    def group(self, gid: str = G) -> ShareGroup:
        g = self.ctx.groups[gid]
        assert isinstance(g, ShareGroup)
        return g

    def tp(self, assignment: list[Any] | None) -> set[tuple[str, int]]:
        out = set()
        for it in assignment or []:
            t = self.topics.by_id(it["topic_id"])
            assert t is not None
            out |= {(t.name, p) for p in it["partitions"]}
        return out

    def replayed(self) -> dict[str, Any]:
        """A fresh manager's groups after replaying the whole log."""
        ctx = GroupShardContext(GC, self.topics)
        mgr = ShareGroupManager(ctx, self.mgr.config)
        for key, value in self.log:
            rec = SR.decode(key, value)
            assert rec is not None
            mgr.replay_record(rec)
        return dict(ctx.groups)


def assigned(g: ShareGroup, mid: str) -> int:
    return sum(len(ps) for ps in g.members[mid].assigned.values())


# ---------------------------------------------------------------------------------- join / heartbeat


def test_first_member_joins_and_gets_every_initialized_partition() -> None:
    h = Harness()
    r = h.hb("m1", 0, ["t"])
    # The join records the partitions as initializing and asks for their initialization.
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5000)
    assert r.assignment == [] and r.initialize_epoch == 1
    t = h.topics.get("t")
    assert t is not None and r.to_initialize == {t.topic_id: frozenset(range(4))}
    g = h.group()
    assert g.initialized[t.topic_id].partitions == frozenset(range(4)) and not g.initializing
    # The next heartbeat sees initialized partitions not yet assigned: a new epoch assigns them.
    r = h.hb("m1", 1)
    assert r.member_epoch == 2 and h.tp(r.assignment) == {("t", p) for p in range(4)}
    assert (g.group_epoch, g.assignment_epoch, g.state_name()) == (2, 2, "Stable")
    # A plain heartbeat changes nothing and carries no assignment; a full one carries it again.
    r = h.hb("m1", 2)
    assert (r.error_code, r.member_epoch, r.assignment, r.to_initialize) == (0, 2, None, {})
    r = h.hb("m1", 2, ["t"])
    assert r.member_epoch == 2 and h.tp(r.assignment) == {("t", p) for p in range(4)}


def test_uninitialized_partitions_are_not_assigned_and_are_asked_again_after_the_retry_interval() -> None:
    h = Harness(auto_init=False, initialize_retry_interval_ms=30_000)
    r = h.hb("m1", 0, ["t"])
    assert r.to_initialize and r.assignment == []
    h.pending_init.clear()  # the share coordinator never answered
    assert h.hb("m1", 1).to_initialize == {}
    h.advance(30_000 - 1)
    assert h.hb("m1", 1).to_initialize == {}
    h.advance(1)
    r = h.hb("m1", 1)
    assert set(next(iter(r.to_initialize.values()))) == set(range(4))
    # A failed initialization forgets them: the next heartbeat asks again at once.
    h.run(h.mgr.share_group_uninitialized(G, r.to_initialize))
    assert not h.group().initializing
    assert h.hb("m1", 1).to_initialize


def test_members_take_new_assignments_at_once_without_revocation() -> None:
    h = Harness()
    r1 = h.join("m1", ["t"])
    assert len(h.tp(r1.assignment)) == 4
    r2 = h.join("m2", ["t"])
    g = h.group()
    assert r2.member_epoch == g.group_epoch == g.assignment_epoch
    assert len(h.tp(r2.assignment)) == 2
    # m1 learns its new (smaller) assignment and the new epoch on its next heartbeat.
    r1 = h.hb("m1", r1.member_epoch)
    assert r1.member_epoch == g.group_epoch and len(h.tp(r1.assignment)) == 2
    assert h.tp(r1.assignment).isdisjoint(h.tp(r2.assignment))


def test_more_members_than_partitions_share_partitions() -> None:
    h = Harness()
    epochs = {}
    for i in range(5):
        epochs[f"m{i}"] = h.join(f"m{i}", ["u"]).member_epoch
    for mid in epochs:  # everyone catches up
        h.hb(mid, epochs[mid])
    g = h.group()
    u = h.topics.get("u")
    assert u is not None
    holders = {p: [m for m in g.members if p in g.members[m].assigned.get(u.topic_id, ())] for p in range(2)}
    # 5 members, 2 partitions: sharing ceil(5/2) = 3 per partition, 6 assignments spread 2,1,1,1,1.
    assert sorted(len(v) for v in holders.values()) == [3, 3]
    assert sorted(assigned(g, m) for m in g.members) == [1, 1, 1, 1, 2]


def test_fewer_members_than_partitions_split_them() -> None:
    h = Harness()
    e1 = h.join("m1", ["t", "u"]).member_epoch
    e2 = h.join("m2", ["t", "u"]).member_epoch
    e3 = h.join("m3", ["t", "u"]).member_epoch
    for mid, e in (("m1", e1), ("m2", e2), ("m3", e3)):
        h.hb(mid, e)
    g = h.group()
    assert sorted(assigned(g, m) for m in g.members) == [2, 2, 2]
    every = [(t, p) for m in g.members.values() for t, ps in m.assigned.items() for p in ps]
    assert len(every) == len(set(every)) == 6


def test_subscription_change_bumps_the_epoch_and_reassigns() -> None:
    h = Harness()
    r = h.join("m1", ["t"])
    epoch = h.group().group_epoch
    r = h.hb("m1", r.member_epoch, ["u"])
    r = h.hb("m1", r.member_epoch)  # u's partitions were initialized in between
    assert h.group().group_epoch > epoch
    assert h.tp(r.assignment) == {("u", 0), ("u", 1)}


def test_new_partitions_of_a_subscribed_topic_are_initialized_and_assigned() -> None:
    h = Harness()
    r = h.join("m1", ["u"])
    h.topics.add("u", 3)  # the topic grew
    r = h.hb("m1", r.member_epoch)
    u = h.topics.get("u")
    assert u is not None and r.to_initialize == {u.topic_id: frozenset({2})}
    r = h.hb("m1", r.member_epoch)
    assert h.tp(r.assignment) == {("u", 0), ("u", 1), ("u", 2)}


# ---------------------------------------------------------------------------------- leave / expiry


def test_leave_removes_the_member_and_bumps_the_epoch() -> None:
    h = Harness()
    r1 = h.join("m1", ["t"])
    r2 = h.join("m2", ["t"])
    r1 = h.hb("m1", r1.member_epoch)
    assert len(h.tp(r1.assignment)) == 2
    epoch = h.group().group_epoch
    r = h.hb("m2", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m2", -1)
    g = h.group()
    assert set(g.members) == {"m1"} and "m2" not in g.target and g.group_epoch == epoch + 1
    assert ("sg-session", G, "m2") not in h.ctx.timers
    # m1 gets every partition back at its next heartbeat. (As in Kafka, that heartbeat bumps the
    # epoch once more: initialized partitions are missing from the target assignment.)
    r1 = h.hb("m1", g.members["m1"].member_epoch)
    assert len(h.tp(r1.assignment)) == 4 and r1.member_epoch == g.group_epoch == g.assignment_epoch
    # The last member leaves: the group is Empty.
    h.hb("m1", -1)
    assert h.group().state_name() == "Empty" and not h.group().members
    # Leaving again: UNKNOWN_MEMBER_ID.
    assert h.hb("m1", -1).error_code == E.UnknownMemberIdError.code
    assert r2.error_code == 0


def test_session_expiry_fences_a_silent_member() -> None:
    h = Harness(session_timeout_ms=10_000)
    r1 = h.join("m1", ["t"])
    r2 = h.join("m2", ["t"])
    for _ in range(3):
        h.advance(6_000)
        r1 = h.hb("m1", r1.member_epoch)
        assert r1.error_code == 0
    # m2 was silent for 18 s: fenced, its partitions go back to m1.
    g = h.group()
    assert set(g.members) == {"m1"}
    assert assigned(g, "m1") == 4 and h.hb("m1", r1.member_epoch).error_code == 0
    # The fenced member's heartbeat: UNKNOWN_MEMBER_ID; it must rejoin with epoch 0.
    assert h.hb("m2", r2.member_epoch).error_code == E.UnknownMemberIdError.code
    assert h.join("m2", ["t"]).error_code == 0


# ---------------------------------------------------------------------------------- errors


def test_request_validation() -> None:
    h = Harness()
    bad = E.InvalidRequestError.code
    assert h.hb("", 0, ["t"]).error_code == bad
    assert h.hb("m1", 0, ["t"], group="").error_code == bad
    assert h.hb("m1", 0, ["t"], rack="").error_code == bad
    assert h.hb("m1", 0, None).error_code == bad
    assert h.hb("m1", 0, []).error_code == bad
    assert h.hb("m1", -2).error_code == bad
    assert G not in h.ctx.groups


def test_unknown_group_member_and_fenced_epochs() -> None:
    h = Harness()
    assert h.hb("m1", 3).error_code == E.GroupIdNotFoundError.code
    assert h.hb("m1", -1).error_code == E.GroupIdNotFoundError.code
    r = h.join("m1", ["t"])
    assert h.hb("zz", 1).error_code == E.UnknownMemberIdError.code
    assert h.hb("m1", r.member_epoch + 1).error_code == E.FencedMemberEpochError.code
    # The previous epoch is accepted (the response with the new one may have been lost) ...
    prev = h.group().members["m1"].previous_member_epoch
    assert h.hb("m1", prev).error_code == 0
    # ... an older one is not.
    h.join("m2", ["t"])
    e = h.hb("m1", r.member_epoch).member_epoch
    assert h.group().members["m1"].previous_member_epoch == r.member_epoch
    assert h.hb("m1", 0, ["t"]).error_code == E.FencedMemberEpochError.code
    assert h.hb("m1", e).error_code == 0


def test_group_id_of_a_consumer_group_is_refused() -> None:
    h = Harness()
    h.ctx.groups["cg"] = ConsumerGroup("cg")
    r = h.hb("m1", 0, ["t"], group="cg")
    assert r.error_code == E.GroupIdNotFoundError.code and r.error_message == "Group cg is not a share group."
    (d,) = h.mgr.share_group_describe(["cg"])
    assert d["error_code"] == E.GroupIdNotFoundError.code
    # Share records for a consumer group's id are ignored on replay.
    h.mgr.replay_record(
        CoordinatorRecord(SR.SHARE_GROUP_METADATA, {"group_id": "cg"}, 0, {"epoch": 1, "metadata_hash": 0})
    )
    assert isinstance(h.ctx.groups["cg"], ConsumerGroup)


def test_max_size() -> None:
    h = Harness(max_size=2)
    r1 = h.join("m1", ["t"])
    h.join("m2", ["t"])
    r = h.hb("m3", 0, ["t"])
    assert r.error_code == E.GroupMaxSizeReachedError.code
    assert set(h.group().members) == {"m1", "m2"}
    # Members already in the group keep heartbeating.
    assert h.hb("m1", h.group().members["m1"].member_epoch).error_code == 0
    h.hb("m1", -1)
    assert h.join("m3", ["t"]).error_code == 0
    assert r1.error_code == 0


# ---------------------------------------------------------------------------------- describe, tombstones


def test_describe() -> None:
    h = Harness()
    (d,) = h.mgr.share_group_describe(["nope"])
    assert d["error_code"] == E.GroupIdNotFoundError.code
    h.join("m1", ["t"])
    h.hb("m2", 0, ["t"], rack="r1")
    (d,) = h.mgr.share_group_describe([G])
    g = h.group()
    assert (d["error_code"], d["group_state"], d["assignor_name"]) == (0, "Stable", "simple")
    assert (d["group_epoch"], d["assignment_epoch"]) == (g.group_epoch, g.assignment_epoch)
    m2 = next(m for m in d["members"] if m["member_id"] == "m2")
    assert (m2["rack_id"], m2["client_id"], m2["client_host"]) == ("r1", "c-m2", "/10.0.0.1")
    assert m2["subscribed_topic_names"] == ["t"] and m2["member_epoch"] == g.group_epoch
    tps = m2["assignment"]["topic_partitions"]
    assert {it["topic_name"] for it in tps} == {"t"} and sum(len(it["partitions"]) for it in tps) == 2
    h.hb("m1", -1)
    h.hb("m2", -1)
    (d,) = h.mgr.share_group_describe([G])
    assert (d["group_state"], d["members"]) == ("Empty", [])


def test_tombstones_delete_the_group() -> None:
    h = Harness()
    h.join("m1", ["t"])
    fx = Effects()
    h.ctx.write(fx, G, ShareGroupManager.tombstones(h.group()), lambda err, now, fx2: None)
    h.run(fx)
    assert G not in h.ctx.groups and ("sg-session", G, "m1") not in h.ctx.timers
    assert h.replayed() == {}


# ---------------------------------------------------------------------------------- assignor


T1, T2 = uuid.uuid5(uuid.NAMESPACE_DNS, "a"), uuid.uuid5(uuid.NAMESPACE_DNS, "b")


def _subs(n: int, topics: frozenset[uuid.UUID]) -> dict[str, MemberSubscription]:
    return {f"m{i}": MemberSubscription(topics, {}) for i in range(n)}


@given(m=st.integers(1, 12), p=st.integers(0, 12))
def test_simple_assignor_balance_and_sharing(m: int, p: int) -> None:
    out = simple_assign(_subs(m, frozenset({T1})), {T1: range(p)})
    assert set(out) == {f"m{i}" for i in range(m)}
    counts = [len(a.get(T1, ())) for a in out.values()]
    holders = [sum(1 for a in out.values() if q in a.get(T1, ())) for q in range(p)]
    if p == 0:
        assert counts == [0] * m
        return
    sharing = -(-m // p)
    assert max(counts) - min(counts) <= 1
    assert all(1 <= h <= sharing for h in holders)
    if m <= p:
        assert holders == [1] * p  # each partition to exactly one member
    else:
        assert min(counts) >= 1  # every member gets something


def test_simple_assignor_is_sticky() -> None:
    first = simple_assign(_subs(3, frozenset({T1})), {T1: range(6)})
    subs = {mid: MemberSubscription(frozenset({T1}), first[mid]) for mid in first}
    subs["m3"] = MemberSubscription(frozenset({T1}), {})
    second = simple_assign(subs, {T1: range(6)})
    moved = sum(len(first[m][T1] - second[m].get(T1, frozenset())) for m in first)
    assert moved == 1  # 6 partitions over 4 members: 2,2,1,1 from 2,2,2: one move
    assert sorted(len(a.get(T1, ())) for a in second.values()) == [1, 1, 2, 2]


def test_simple_assignor_heterogeneous_subscriptions() -> None:
    subs = {
        "a": MemberSubscription(frozenset({T1}), {}),
        "b": MemberSubscription(frozenset({T1, T2}), {}),
    }
    out = simple_assign(subs, {T1: range(2), T2: range(3), uuid.uuid4(): range(5)})
    assert T2 not in out["a"]
    assert out["b"][T2] == frozenset(range(3))
    assert out["a"][T1] | out["b"][T1] == frozenset(range(2)) and not out["a"][T1] & out["b"][T1]


# ---------------------------------------------------------------------------------- replay


def test_records_round_trip_and_replay_reproduces_the_state() -> None:
    h = Harness()
    r = h.join("m1", ["t", "u"])
    h.join("m2", ["u"])
    h.hb("m1", r.member_epoch)
    h.hb("m3", 0, ["t"], rack="r")
    h.hb("m2", -1)
    replayed = h.replayed()
    assert replayed == {G: h.group()}
    kinds = {k[:2] for k, _v in h.log}
    assert {int.from_bytes(k, "big") for k in kinds} == {10, 11, 12, 13, 14, 15}


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["join", "hb", "full", "sub", "leave", "tick", "init", "grow"]),
        st.integers(0, 3),
        st.sampled_from([["t"], ["u"], ["t", "u"]]),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops=_OPS)
def test_property_replay_of_the_log_equals_the_live_state(ops: list[tuple[str, int, list[str]]]) -> None:
    h = Harness(auto_init=False, session_timeout_ms=20_000, max_size=3)
    epochs: dict[str, int] = {}
    for op, i, names in ops:
        mid = f"m{i}"
        epoch = epochs.get(mid, 0)
        if op == "join":
            r = h.hb(mid, 0, names)
        elif op == "hb":
            r = h.hb(mid, epoch)
        elif op == "full":
            r = h.hb(mid, epoch, names)
        elif op == "sub":
            r = h.hb(mid, epoch, names)
        elif op == "leave":
            r = h.hb(mid, -1)
        elif op == "tick":
            h.advance(7_000 * (i + 1))
            continue
        elif op == "init":
            h.initialize()
            continue
        else:
            h.topics.add("u", h.topics.get("u").partitions + 1)  # type: ignore[union-attr]
            continue
        if r.error_code == 0:
            epochs[mid] = r.member_epoch
        # Invariants of the live state.
        if G in h.ctx.groups:
            g = h.group()
            assert g.assignment_epoch <= g.group_epoch
            for m in g.members.values():
                assert 0 <= m.member_epoch <= g.group_epoch
            for t, ti in g.initialized.items():
                assert not ti.partitions & (
                    g.initializing[t].partitions if t in g.initializing else frozenset()
                )
            for m in g.members.values():
                for t, ps in m.assigned.items():
                    assert t in g.initialized and ps <= g.initialized[t].partitions
    assert h.replayed() == {gid: g for gid, g in h.ctx.groups.items()}


@pytest.mark.parametrize("key_version", sorted(SR.KEYS))
def test_unknown_value_version_is_rejected(key_version: int) -> None:
    key = (
        key_version.to_bytes(2, "big")
        + b"\x00\x01g"
        + (b"\x00\x01m" if len(SR.KEYS[key_version][0]) == 2 else b"")
    )
    from zurau.protocol.primitives import DecodeError

    with pytest.raises(DecodeError):
        SR.decode(key, b"\x00\x07")
    assert SR.decode(b"\x00\x03\x00\x01g", None) is None  # another record type
