"""The share-group admin steps on the group coordinator shard (``share_group_offsets``), through
the runtime: AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups' share step, their
state-partition records replayed from ``__consumer_offsets`` (a rebuild equals the live state),
and the errors (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION)."""

from __future__ import annotations

from typing import Any

from tests.unit.group_driver import Driver
from zurau.coordinator.group.service import _acked
from zurau.coordinator.group.share_group import ShareGroup
from zurau.protocol import errors as E


def sg(d: Driver, group: str, member: str, epoch: int, topics: list[str] | None = None) -> Any:
    return d.reply(
        d.call(
            "share_group_heartbeat",
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            subscribed_topic_names=topics,
            client_id="c",
            client_host="/127.0.0.1",
        )
    )


def group(d: Driver, gid: str) -> ShareGroup:
    g = d.core.groups[gid]
    assert isinstance(g, ShareGroup)
    return g


def initialized(d: Driver, gid: str, tps: dict[Any, list[int]]) -> None:
    """What a successful InitializeShareGroupState reports (the service's path)."""
    rt = d.rt
    done: list[Any] = []
    rt.request(
        gid,
        lambda token, now: _acked(token, rt.core.share_group_initialized(gid, tps)),
        lambda r, e: done.append(e),
    )
    d.advance(0)
    assert done == [None]


def alter(d: Driver, gid: str, topics: list[tuple[str, list[tuple[int, int]]]]) -> Any:
    return d.reply(d.call("alter_share_group_offsets", group_id=gid, topics=topics))


def test_alter_creates_the_group_bumps_its_epoch_and_marks_new_partitions_initializing() -> None:
    d = Driver()
    t = d.topics.get("t")
    assert t is not None
    r = alter(d, "sg", [("t", [(0, 5), (9, 1)]), ("nope", [(0, 0)])])
    assert (r.error_code, r.state_epoch, r.to_initialize) == (0, 1, {t.topic_id: {0: 5}})
    codes = {
        (x["topic_name"], p["partition_index"]): p["error_code"] for x in r.responses for p in x["partitions"]
    }
    assert codes == {
        ("t", 0): 0,
        ("t", 9): E.UnknownTopicOrPartitionError.code,
        ("nope", 0): E.UnknownTopicOrPartitionError.code,
    }
    g = group(d, "sg")
    assert g.group_epoch == 1 and g.initializing[t.topic_id].partitions == {0} and not g.members
    assert d.rebuild().groups["sg"] == g
    # Once initialized, altering again keeps it initialized (a failure leaves the old state) and bumps again.
    initialized(d, "sg", {t.topic_id: [0]})
    r2 = alter(d, "sg", [("t", [(0, 7)])])
    assert r2.state_epoch == 2
    g = group(d, "sg")
    assert g.initialized[t.topic_id].partitions == {0} and t.topic_id not in g.initializing


def test_alter_and_delete_need_an_empty_share_group() -> None:
    d = Driver()
    sg(d, "sg", "m", 0, ["t"])
    assert alter(d, "sg", [("t", [(0, 0)])]).error_code == E.NonEmptyGroupError.code
    r = d.reply(d.call("delete_share_group_offsets", group_id="sg", topic_names=["t"]))
    assert r.error_code == E.NonEmptyGroupError.code
    assert d.reply(d.call("prepare_share_group_deletion", group_ids=["sg", "other"])) == {
        "sg": (E.NonEmptyGroupError.code, {})
    }
    missing = d.reply(d.call("delete_share_group_offsets", group_id="none", topic_names=["t"]))
    assert missing.error_code == E.GroupIdNotFoundError.code


def test_delete_offsets_moves_initialized_topics_to_deleting_until_done() -> None:
    d = Driver()
    t, u = d.topics.get("t"), d.topics.get("u")
    assert t is not None and u is not None
    alter(d, "sg", [("t", [(0, 1), (1, 1)]), ("u", [(0, 0)])])
    initialized(d, "sg", {t.topic_id: [0, 1], u.topic_id: [0]})
    r = d.reply(d.call("delete_share_group_offsets", group_id="sg", topic_names=["t", "nope"]))
    assert r.error_code == 0 and r.to_delete == {t.topic_id: frozenset({0, 1})}
    assert [(e["topic_name"], e["error_code"]) for e in r.errors] == [
        ("nope", E.UnknownTopicOrPartitionError.code)
    ]
    g = group(d, "sg")
    assert set(g.initialized) == {u.topic_id} and g.deleting == {t.topic_id: "t"}
    assert d.rebuild().groups["sg"] == g
    d.reply(d.call("share_group_offsets_deleted", group_id="sg", topic_ids=[t.topic_id]))
    assert group(d, "sg").deleting == {}
    # DeleteGroups' share step: everything initialized moves to deleting, to be deleted.
    prepared = d.reply(d.call("prepare_share_group_deletion", group_ids=["sg"]))
    assert prepared == {"sg": (0, {u.topic_id: frozenset({0})})}
    g = group(d, "sg")
    assert not g.initialized and g.deleting == {u.topic_id: "u"}
