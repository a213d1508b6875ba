"""AlterClientQuotas: set or remove client quotas through the controller, which writes them to
the metadata log (:mod:`zurau.metadata.controller.quota_control` has the rules). With an authorizer, the
principal needs ALTER_CONFIGS on the cluster, else every entry gets CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS


async def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.ALTER_CONFIGS):
        return {"throttle_time_ms": 0, "entries": [
            {"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed.",
             "entity": e["entity"]} for e in req["entries"]]}
    results = await ctx.controller.alter_client_quotas(req["entries"], req["validate_only"])
    return {"throttle_time_ms": 0, "entries": results}
