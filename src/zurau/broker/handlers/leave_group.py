"""LeaveGroup: members leave a classic group (v3+: a batch, each answered on its own).

A member may be named by member id or, for static members, by ``group_instance_id`` alone (an
empty member id). v0-v2 name one member and report its error at the top level.
"""

from __future__ import annotations

from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import LeaveGroupResult
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import LeaveGroupRequest, LeaveGroupResponse, LeaveGroupResponseMembers

API_KEY = ApiKey.LEAVE_GROUP


async def handle(ctx: RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse:
    version = ctx.api_version
    if version >= 3:
        leaving = [(m["member_id"], m.get("group_instance_id")) for m in req["members"]]
    else:
        leaving = [(req["member_id"], None)]
    groups = coordinator(ctx)
    err = group_error(ctx, req["group_id"])
    if err is not None:
        result = LeaveGroupResult(err.code)
    else:
        result = await groups.leave_group(group_id=req["group_id"], members=leaving)
    members: list[LeaveGroupResponseMembers] = [
        {"member_id": m, "group_instance_id": i, "error_code": c} for m, i, c in result.members
    ]
    top = result.error_code
    if version < 3 and top == 0 and members:
        top = members[0]["error_code"]
    return {"throttle_time_ms": 0, "error_code": top, "members": members}
