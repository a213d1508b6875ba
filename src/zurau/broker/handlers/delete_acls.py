"""DeleteAcls: remove the ACL bindings matching each filter, through the controller
(:mod:`zurau.metadata.acl_control`). Needs ALTER on the cluster; SECURITY_DISABLED without an
authorizer."""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers.create_acls import refusal
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey

API_KEY = ApiKey.DELETE_ACLS


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    refused = refusal(ctx)
    if refused is not None:
        code, message = refused
        results = [{"error_code": code, "error_message": message, "matching_acls": []} for _ in req["filters"]]
        return {"throttle_time_ms": 0, "filter_results": results}
    results = await ctx.controller.delete_acls(req["filters"])
    return {"throttle_time_ms": 0, "filter_results": results}
