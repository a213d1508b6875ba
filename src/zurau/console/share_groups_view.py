"""Share groups (KIP-932) as the console shows them: their line in the groups list (members,
total lag), one group's members, assignments and share-partition offsets, and resets of its
start offsets with a dry-run preview.

A share partition's lag is what DescribeShareGroupOffsets v1 answers (KIP-1226: the records from
the start offset to the high watermark not yet delivered for good); None where the broker does
not know it (no state written yet, or a broker before v1). A group's ``total_lag`` is the sum
over its share partitions, None unless every one of them has a known lag (a partial sum would
understate it; a group without share partitions has 0).

Resets follow ``kafka-share-groups.sh --reset-offsets`` (and the console's consumer-group
resets, :mod:`~zurau.console.groups_view`): modes ``earliest``, ``latest``, ``offset`` and
``timestamp``, each new start offset clamped to the partition's [log start, log end];
``dry_run`` only returns the plan. Applying it (AlterShareGroupOffsets) needs a group without
members; a group that does not exist yet is created, so its first consumers start where the
plan says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from zurau.client.share_groups_admin import (
    SHARE,
    ShareGroupAdmin,
    ShareGroupDescription,
    SharePartitionOffset,
)
from zurau.client.types import TopicPartition
from zurau.console.groups_view import ResetError, check_reset, plan_reset, topic_partitions
from zurau.protocol.errors import GroupIdNotFoundError, KafkaError, NonEmptyGroupError

EMPTY, DEAD = "Empty", "Dead"


def total_lag(offsets: Iterable[SharePartitionOffset | KafkaError]) -> int | None:
    """The sum of the lags, None when any is unknown (see the module docstring)."""
    total = 0
    for o in offsets:
        if isinstance(o, KafkaError) or o.lag is None:
            return None
        total += o.lag
    return total


async def describe(sa: ShareGroupAdmin, group: str) -> ShareGroupDescription:
    """The share group; raises its error (GROUP_ID_NOT_FOUND for an unknown id or one of another
    group type)."""
    d = (await sa.describe_share_groups([group]))[group]
    if isinstance(d, KafkaError):
        raise d
    return d


async def summaries(sa: ShareGroupAdmin, group_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per share group: ``members`` (count) and ``total_lag``, each None when it could not be
    read (the group went away between the listing and now, or the broker refused)."""
    if not group_ids:
        return {}
    described = await sa.describe_share_groups(group_ids)
    out: dict[str, dict[str, Any]] = {}
    for gid in group_ids:
        d = described.get(gid)
        lag: int | None = None
        try:
            lag = total_lag((await sa.list_offsets(gid)).values())
        except KafkaError:
            pass
        out[gid] = {
            "members": len(d.members) if isinstance(d, ShareGroupDescription) else None,
            "total_lag": lag,
        }
    return out


async def annotate_listing(sa: ShareGroupAdmin, listing: dict[str, Any]) -> dict[str, Any]:
    """Give the share groups of a :func:`~zurau.console.groups_view.list_groups` answer their
    ``members`` and ``total_lag`` (see :func:`summaries`); other groups are left as they are."""
    share = [g for g in listing["groups"] if g["type"] == SHARE]
    found = await summaries(sa, [g["group"] for g in share])
    for g in share:
        g.update(found[g["group"]])
    return listing


async def describe_share_group(sa: ShareGroupAdmin, group: str) -> dict[str, Any]:
    """The group, its members and, per share partition it has state for or assigns, the start
    offset, lag and the members it is assigned to (a share partition may have several)."""
    d = await describe(sa, group)
    offsets = await sa.list_offsets(group)
    owners: dict[TopicPartition, list[str]] = {}
    for m in d.members:
        for tp in m.assignment:
            owners.setdefault(tp, []).append(m.member_id)
    rows = []
    for tp in sorted(set(offsets) | set(owners)):
        o = offsets.get(tp)
        ok = isinstance(o, SharePartitionOffset)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "start_offset": o.start_offset if isinstance(o, SharePartitionOffset) else None,
                "leader_epoch": o.leader_epoch if isinstance(o, SharePartitionOffset) else None,
                "lag": o.lag if isinstance(o, SharePartitionOffset) else None,
                "members": owners.get(tp, []),
                "error": str(o) if o is not None and not ok else None,
            }
        )
    return {
        "group": d.group_id,
        "type": SHARE,
        "state": d.state,
        "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch,
        "assignor": d.assignor,
        "coordinator": {"id": d.coordinator.node_id, "host": d.coordinator.host, "port": d.coordinator.port},
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "member_epoch": m.member_epoch,
                "subscribed_topics": list(m.subscribed_topics),
                "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment],
            }
            for m in d.members
        ],
        "offsets": rows,
        "total_lag": total_lag(offsets.values()) if offsets else (0 if not owners else None),
    }


async def reset_share_offsets(
    sa: ShareGroupAdmin,
    group: str,
    topics: Sequence[str],
    mode: str,
    value: int | None,
    dry_run: bool,
) -> dict[str, Any]:
    """Plan (and unless ``dry_run`` apply) new start offsets for ``group`` on every partition of
    ``topics`` (every share partition the group has a start offset for when empty)."""
    check_reset(mode, value)
    d = (await sa.describe_share_groups([group]))[group]
    if isinstance(d, GroupIdNotFoundError):
        state, current = DEAD, {}
    elif isinstance(d, KafkaError):
        raise d
    else:
        state = d.state
        current = {
            tp: o.start_offset
            for tp, o in (await sa.list_offsets(group)).items()
            if isinstance(o, SharePartitionOffset) and o.start_offset is not None
        }
    tps: list[TopicPartition] = []
    if not topics:
        tps = sorted(current)
        if not tps:
            raise ResetError(f"share group '{group}' has no start offsets; name the topics to reset")
    tps += await topic_partitions(sa.admin, topics)
    plan, offsets = await plan_reset(sa.admin, tps, mode, value, dict(current))
    applied = False
    if not dry_run:
        if state not in (EMPTY, DEAD):
            raise NonEmptyGroupError(
                f"Share group '{group}' is not empty: its start offsets can only be reset while it has no"
                f" members (the current state is {state})."
            )
        results = await sa.alter_offsets(group, offsets)
        for err in results.values():
            if err is not None:
                raise err
        applied = True
    return {
        "group": group,
        "state": state,
        "mode": mode,
        "dry_run": dry_run,
        "applied": applied,
        "plan": plan,
    }


__all__ = ["annotate_listing", "describe_share_group", "reset_share_offsets", "summaries", "total_lag"]
