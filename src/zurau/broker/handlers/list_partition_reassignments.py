"""ListPartitionReassignments: the ongoing reassignments, as the active controller sees them (a
broker forwards the request there); see
:func:`zurau.metadata.controller.reassignment_control.list_partition_reassignments`.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS


async def handle(ctx: RequestContext, req: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "topics": []}
    result = await ctx.controller.list_partition_reassignments(req.get("topics"))
    return {"throttle_time_ms": 0, **result}
