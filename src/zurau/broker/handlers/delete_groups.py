"""DeleteGroups: delete empty groups together with their committed offsets.

Per group: INVALID_GROUP_ID (empty id), GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (members remain), or
success once the tombstones for the group and each of its offsets are written. A share group
(KIP-932) first has the state of every share partition it initialized deleted from the share
coordinator (DeleteShareGroupState); if that fails, the group stays and answers the error.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import Op
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

API_KEY = ApiKey.DELETE_GROUPS


async def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    names = list(req["groups_names"])
    errors: dict[str, int] = {}
    ours: list[str] = []
    for gid in names:
        err = group_error(ctx, gid, Op.DELETE) if gid else None
        if err is not None:
            errors[gid] = err.code
        else:
            ours.append(gid)
    errors.update(await coordinator(ctx).delete_groups(ours))
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": errors[g]} for g in names]}
