"""ConsumerGroupDescribe (KIP-848): epochs, assignor and members of consumer groups.

Each member is reported with its subscription, its current assignment and its target assignment
(topic ids with names). Unknown groups and classic groups: GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import Op
from zurau.broker.handlers._groups import coordinator, group_error, group_operations
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseGroups,
)

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE


async def handle(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    groups = coordinator(ctx)
    want_ops = bool(req.get("include_authorized_operations"))
    out: list[ConsumerGroupDescribeResponseGroups] = []
    for gid in req["group_ids"]:
        ops = group_operations(ctx, gid, want_ops)
        err = group_error(ctx, gid, Op.DESCRIBE) if gid else None
        if err is not None:
            out.append(
                {
                    "error_code": err.code,
                    "error_message": err.message,
                    "group_id": gid,
                    "group_state": "",
                    "group_epoch": -1,
                    "assignment_epoch": -1,
                    "assignor_name": "",
                    "members": [],
                    "authorized_operations": ops,
                }
            )
            continue
        (g,) = await groups.consumer_group_describe([gid])
        g["authorized_operations"] = ops
        out.append(g)
    return {"throttle_time_ms": 0, "groups": out}
