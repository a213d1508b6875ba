"""SyncGroup: the leader hands out assignments; every member receives its own.

In CompletingRebalance a member's SyncGroup waits until the leader's assignment is stored in
``__consumer_offsets``; in Stable it is answered at once with the member's assignment. v5 carries
the protocol type and name both ways (a mismatch is INCONSISTENT_GROUP_PROTOCOL).
"""

from __future__ import annotations

from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import SyncGroupResult
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import SyncGroupRequest, SyncGroupResponse

API_KEY = ApiKey.SYNC_GROUP


def _response(r: SyncGroupResult) -> SyncGroupResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": r.error_code,
        "protocol_type": r.protocol_type,
        "protocol_name": r.protocol_name,
        "assignment": r.assignment,
    }


async def handle(ctx: RequestContext, req: SyncGroupRequest) -> SyncGroupResponse:
    version = ctx.api_version
    groups = coordinator(ctx)
    err = group_error(ctx, req["group_id"])
    if err is not None:
        return _response(SyncGroupResult(err.code))
    assignments = {a["member_id"]: bytes(a["assignment"]) for a in req["assignments"]}
    result = await groups.sync_group(
        group_id=req["group_id"],
        generation_id=req["generation_id"],
        member_id=req["member_id"],
        group_instance_id=req["group_instance_id"] if version >= 3 else None,
        protocol_type=req["protocol_type"] if version >= 5 else None,
        protocol_name=req["protocol_name"] if version >= 5 else None,
        assignments=assignments,
    )
    return _response(result)
