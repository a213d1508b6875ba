"""ListGroups: the groups this broker coordinates, optionally filtered by state (v4+) and type (v5+).

States are Kafka's (classic: Empty, PreparingRebalance, CompletingRebalance, Stable; consumer:
Empty, Assigning, Reconciling, Stable; share: Empty, Stable), matched case-insensitively; types
are "classic", "consumer" and "share" (KIP-932 share groups, protocol type "share"). Groups that exist only through committed offsets are listed as Empty classic groups
with an empty protocol type.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import GROUP, Op, allowed_names, cluster_allowed
from zurau.broker.handlers._groups import coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ListGroupsRequest, ListGroupsResponse

API_KEY = ApiKey.LIST_GROUPS


async def handle(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    code, groups = await coordinator(ctx).list_groups(req.get("states_filter") or (), req.get("types_filter") or ())
    if code:
        return {"throttle_time_ms": 0, "error_code": code, "groups": []}
    if ctx.services.authorizer is not None and not cluster_allowed(ctx, Op.DESCRIBE, log=False):
        visible = allowed_names(ctx, Op.DESCRIBE, GROUP, (g.group_id for g in groups), log=False)
        groups = [g for g in groups if g.group_id in visible]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "group_state": g.state,
                "group_type": g.group_type,
            }
            for g in groups
        ],
    }
