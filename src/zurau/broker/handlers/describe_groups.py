"""DescribeGroups: state, protocol and members of classic groups.

In Stable each member comes with its metadata for the selected protocol and its assignment; in
other states members are listed without them and the protocol is "". An unknown group (or a KIP-848
consumer group, which ConsumerGroupDescribe describes) is "Dead" before v6 and GROUP_ID_NOT_FOUND
from v6, as in Kafka.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import Op
from zurau.broker.handlers._groups import coordinator, group_error, group_operations
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import GroupIdNotFoundError
from zurau.protocol.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroups,
)

API_KEY = ApiKey.DESCRIBE_GROUPS


async def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
    version = ctx.api_version
    groups = coordinator(ctx)
    want_ops = bool(req.get("include_authorized_operations"))
    out: list[DescribeGroupsResponseGroups] = []
    for gid in req["groups"]:
        ops = group_operations(ctx, gid, want_ops)
        err = group_error(ctx, gid, Op.DESCRIBE) if gid else None
        if err is not None:
            out.append(
                {
                    "error_code": err.code,
                    "error_message": err.message,
                    "group_id": gid,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": ops,
                }
            )
            continue
        (g,) = await groups.describe_groups([gid])
        if g.error_code == GroupIdNotFoundError.code and version < 6:
            g.error_code, g.error_message = 0, None
        out.append(
            {
                "error_code": g.error_code,
                "error_message": g.error_message,
                "group_id": gid,
                "group_state": g.state,
                "protocol_type": g.protocol_type,
                "protocol_data": g.protocol_data,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in g.members
                ],
                "authorized_operations": ops,
            }
        )
    return {"throttle_time_ms": 0, "groups": out}
