"""AlterPartitionReassignments: handed to the controller (forwarded to the active one in a
cluster), which starts, replaces or cancels each partition's reassignment; see
:meth:`zurau.metadata.controller.reassignment_control.ReassignmentControlManager.alter_partition_reassignments`. The answer
comes once the records are committed; the reassignment itself completes later, when the added
replicas have caught up and joined the ISR (ListPartitionReassignments shows it until then).
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS


async def handle(ctx: RequestContext, req: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
    allow = bool(req.get("allow_replication_factor_change", True)) if ctx.api_version >= 1 else True
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.ALTER):
        return {"throttle_time_ms": 0, "allow_replication_factor_change": allow,
                "error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed.", "responses": []}
    result = await ctx.controller.alter_partition_reassignments(req["topics"], allow)
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow, **result}
