"""ElectLeaders: handed to the controller (forwarded to the active one in a cluster), which
elects the preferred replica (PREFERRED) or, for a partition without a leader, any live replica
(UNCLEAN) and answers per partition; see
:meth:`zurau.metadata.controller.election_control.ElectionControlManager.elect_leaders`. v0 has no election type: it is
PREFERRED.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ElectLeadersRequest, ElectLeadersResponse

API_KEY = ApiKey.ELECT_LEADERS


async def handle(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    election_type = req.get("election_type", 0) if ctx.api_version >= 1 else 0
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.ALTER):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "replica_election_results": []}
    result = await ctx.controller.elect_leaders(election_type, req.get("topic_partitions"))
    return {"throttle_time_ms": 0, **result}
