"""Heartbeat: a classic-group member is alive; REBALANCE_IN_PROGRESS tells it to rejoin.

Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (static member replaced), ILLEGAL_GENERATION (an
older generation), REBALANCE_IN_PROGRESS (rejoin now).
"""

from __future__ import annotations

from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import HeartbeatRequest, HeartbeatResponse

API_KEY = ApiKey.HEARTBEAT


async def handle(ctx: RequestContext, req: HeartbeatRequest) -> HeartbeatResponse:
    groups = coordinator(ctx)
    err = group_error(ctx, req["group_id"])
    if err is not None:
        return {"throttle_time_ms": 0, "error_code": err.code}
    code = await groups.heartbeat(
        group_id=req["group_id"],
        generation_id=req["generation_id"],
        member_id=req["member_id"],
        group_instance_id=req["group_instance_id"] if ctx.api_version >= 3 else None,
    )
    return {"throttle_time_ms": 0, "error_code": code}
