"""DeleteGroups: delete empty groups together with their committed offsets.

Per group: INVALID_GROUP_ID (empty id), GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (members remain), or
success once the tombstones for the group and each of its offsets are written.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._groups import coordinator
from zurau.broker.request_context import RequestContext

API_KEY = 42


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    rt = coordinator(ctx)
    names = list(req["groups_names"])
    errors: dict[str, int] = {}
    ours = []
    for gid in names:
        err = rt.coordinator_error(gid) if gid else None
        if err is not None:
            errors[gid] = err.code
        else:
            ours.append(gid)
    if ours:
        done = await rt.submit(lambda token, now: rt.core.delete_groups(token, ours, now))
        errors.update(done)
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": errors[g]} for g in names]}
