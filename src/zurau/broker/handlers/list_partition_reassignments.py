"""ListPartitionReassignments: the ongoing reassignments, as the active controller sees them (a
broker forwards the request there); see
:meth:`zurau.metadata.controller.QuorumController.list_partition_reassignments`.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "topics": []}
    result = await ctx.controller.list_partition_reassignments(req.get("topics"))
    return {"throttle_time_ms": 0, **result}
