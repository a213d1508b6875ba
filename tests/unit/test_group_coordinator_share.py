"""Share groups (KIP-932) inside the group coordinator shard, through the runtime: their records
replayed from ``__consumer_offsets`` (a rebuild equals the live state, session timers re-armed),
ListGroups, DeleteGroups, session expiry, and the group-id namespace shared with classic and
consumer groups (each API refuses a group of another type)."""

from __future__ import annotations

from typing import Any

from tests.unit.group_driver import Driver
from zurau.coordinator.group import records as R
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.share_group import SESSION_TIMER, ShareGroup
from zurau.protocol import errors as E

G = "sg"


def sg(d: Driver, member: str, epoch: int, topics: list[str] | None = None, group: str = G) -> Any:
    t = d.call(
        "share_group_heartbeat",
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        subscribed_topic_names=topics,
        client_id="rdkafka",
        client_host="/127.0.0.1",
    )
    return d.reply(t)


def share_group(core: Any) -> ShareGroup:
    g = core.groups[G]
    assert isinstance(g, ShareGroup)
    return g


def test_records_replay_to_the_live_state_and_timers_are_rearmed() -> None:
    d = Driver()
    assert (sg(d, "m1", 0, ["t"]).member_epoch, sg(d, "m2", 0, ["t", "u"]).member_epoch) == (1, 2)
    keys = {e.key_version for e in d.log if isinstance(e, CoordinatorRecord)}
    assert keys >= {10, 11, 12, 13, 14, 15} and keys <= {10, 11, 12, 13, 14, 15}
    listed = d.core.list_groups()
    assert [(x.group_id, x.protocol_type, x.state, x.group_type) for x in listed] == [(G, "share", "Stable", "share")]
    assert d.core.list_groups(types_filter=["consumer"]) == []
    assert [x.group_id for x in d.core.list_groups(states_filter=["stable"], types_filter=["share"])] == [G]
    rebuilt = d.rebuild()
    assert share_group(rebuilt) == share_group(d.core)
    for m in ("m1", "m2"):  # armed with the configured session timeout from the load
        assert rebuilt.timers.deadline((SESSION_TIMER, G, m)) == d.now + 45_000


def test_session_expiry_fences_a_quiet_member() -> None:
    d = Driver()
    sg(d, "quiet", 0, ["t"])
    epoch = sg(d, "alive", 0, ["t"]).member_epoch
    for _ in range(5):
        d.advance(10_000)
        epoch = sg(d, "alive", epoch).member_epoch
    assert list(share_group(d.core).members) == ["alive"]
    assert sg(d, "quiet", 1).error_code == E.UnknownMemberIdError.code


def test_delete_groups_deletes_an_empty_share_group() -> None:
    d = Driver()
    sg(d, "m1", 0, ["t"])
    assert d.reply(d.call("delete_groups", group_ids=[G])) == {G: E.NonEmptyGroupError.code}
    assert sg(d, "m1", -1).error_code == 0
    assert d.reply(d.call("delete_groups", group_ids=[G])) == {G: 0}
    assert G not in d.core.groups and G not in d.rebuild().groups
    tail = [e for e in d.log if isinstance(e, CoordinatorRecord)][-2:]
    assert [(r.key_version, r.value) for r in tail] == [(15, None), (11, None)]


def test_other_group_apis_refuse_a_share_group_and_vice_versa() -> None:
    d = Driver()
    sg(d, "m1", 0, ["t"])
    assert d.cg_join(G, "c1", ["t"]).error_code == E.GroupIdNotFoundError.code
    assert d.reply(d.join(G)).error_code == E.InconsistentGroupProtocolError.code
    assert set(d.commit(G, {("t", 0): 5}).values()) == {E.GroupIdNotFoundError.code}
    assert d.reply(d.call("delete_offsets", group_id=G, partitions=[("t", 0)]))[0] == E.GroupIdNotFoundError.code
    assert d.core.describe_groups([G])[0].error_code == E.GroupIdNotFoundError.code
    assert d.core.consumer_group_describe([G])[0]["error_code"] == E.GroupIdNotFoundError.code
    assert d.cg_join("cg", "c1", ["t"]).error_code == 0
    assert sg(d, "m2", 0, ["t"], group="cg").error_code == E.GroupIdNotFoundError.code
    assert d.core.share_group_describe(["cg"])[0]["error_code"] == E.GroupIdNotFoundError.code
    assert R.SHARE_GROUP_RECORDS == frozenset(range(10, 16))
