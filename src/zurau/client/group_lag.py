"""Consumer group lag computed on the client side: per partition a group committed to or owns,
the committed offset, the partition's end, the lag and the owning member.

:func:`lag_rows` reads the group through :class:`~zurau.client.groups_admin.GroupAdmin` (its
description and committed offsets) and the ends through its :class:`~zurau.client.admin.AdminClient`
(``ListOffsets``). The console's group views and the REST proxy's v3 lags both use it, so both
edges compute lag the same way: the end minus the committed offset, never below 0, None without a
commit or an end.
"""

from __future__ import annotations

from typing import Any

from zurau.client.admin import LATEST, OffsetInfo
from zurau.client.groups_admin import DEAD, GroupAdmin, GroupDescription
from zurau.protocol.errors import KafkaError


async def _describe(ga: GroupAdmin, group: str) -> GroupDescription:
    d = (await ga.describe_groups([group]))[group]
    if isinstance(d, KafkaError):
        raise d
    return d


async def lag_rows(
    ga: GroupAdmin, group: str, d: GroupDescription | None = None, *, isolation_level: int = 0
) -> tuple[GroupDescription, list[dict[str, Any]]]:
    """The group and, per partition it committed to or owns: committed, end, lag, owner.

    The end is the log end offset (``isolation_level`` 0, as kafka-consumer-groups.sh reads it)
    or the last stable offset (1, READ_COMMITTED, as Confluent's REST proxy reads it)."""
    if d is None:
        d = await _describe(ga, group)
    committed = await ga.committed_offsets(group) if d.state != DEAD else {}
    owners = {tp: m for m in d.members for tp in m.assignment}
    every = sorted(set(committed) | set(owners))
    ends = (
        await ga.admin.list_offsets(dict.fromkeys(every, LATEST), isolation_level=isolation_level) if every else {}
    )
    rows = []
    for tp in every:
        end_r = ends.get(tp)
        end = end_r.offset if isinstance(end_r, OffsetInfo) and end_r.offset >= 0 else None
        current = committed.get(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "committed": current,
                "log_end": end,
                "lag": None if current is None or end is None else max(0, end - current),
                "member": owner.member_id if owner else None,
                "client_id": owner.client_id if owner else None,
                "host": owner.host if owner else None,
                "error": str(end_r) if isinstance(end_r, KafkaError) else None,
            }
        )
    return d, rows
