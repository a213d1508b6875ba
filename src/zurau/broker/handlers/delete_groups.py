"""DeleteGroups: delete empty groups together with their committed offsets.

Per group: INVALID_GROUP_ID (empty id), GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (members remain), or
success once the tombstones for the group and each of its offsets are written.
"""

from __future__ import annotations

import asyncio
from typing import Any

from zurau.broker.handlers._authz import Op
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.runtime import GroupCoordinatorRuntime
from zurau.protocol.api_keys import ApiKey

API_KEY = ApiKey.DELETE_GROUPS


def _delete(rt: GroupCoordinatorRuntime, gids: list[str]) -> asyncio.Future[dict[str, int]]:
    return rt.submit(
        gids[0],
        lambda token, now: rt.core.delete_groups(token, gids, now),
        lambda e: dict.fromkeys(gids, e.code),
    )


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    rt = coordinator(ctx)
    names = list(req["groups_names"])
    errors: dict[str, int] = {}
    ours = []
    for gid in names:
        err = group_error(ctx, gid, Op.DELETE) if gid else None
        if err is not None:
            errors[gid] = err.code
        else:
            ours.append(gid)
    by_partition: dict[int, list[str]] = {}
    for gid in ours:
        by_partition.setdefault(rt.partition_for(gid), []).append(gid)
    # One request per __consumer_offsets partition, each in that partition's turn.
    for done in await asyncio.gather(*(_delete(rt, gids) for gids in by_partition.values())):
        errors.update(done)
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": errors[g]} for g in names]}
