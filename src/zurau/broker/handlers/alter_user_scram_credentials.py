"""AlterUserScramCredentials: set or delete SCRAM credentials through the controller, which
writes them to the metadata log (:mod:`zurau.metadata.controller.scram_control` has the rules)."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS


async def handle(ctx: RequestContext, req: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.ALTER):
        users = dict.fromkeys(op["name"] for op in [*req["deletions"], *req["upsertions"]])
        return {"throttle_time_ms": 0, "results": [
            {"user": u, "error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed."}
            for u in users]}
    results = await ctx.controller.alter_user_scram_credentials(req["deletions"], req["upsertions"])
    return {"throttle_time_ms": 0, "results": results}
