"""CreateAcls: add ACL bindings through the controller, which writes them to the metadata log
(:mod:`zurau.metadata.controller.acl_control` has the validation rules).

Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every creation); a broker
without an authorizer answers SECURITY_DISABLED, as Kafka does.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import Op, cluster_allowed, controller_listener_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import ClusterAuthorizationFailedError, SecurityDisabledError
from zurau.protocol.messages import CreateAclsRequest, CreateAclsResponse

API_KEY = ApiKey.CREATE_ACLS


def refusal(ctx: RequestContext) -> tuple[int, str] | None:
    """Why this ACL request may not proceed (error code and message), or None."""
    if ctx.services.authorizer is None:
        return SecurityDisabledError.code, "No Authorizer is configured."
    ok = controller_listener_allowed(ctx) if ctx.on_controller_listener else cluster_allowed(
        ctx, Op.DESCRIBE if ctx.header.api_key == ApiKey.DESCRIBE_ACLS else Op.ALTER
    )
    return None if ok else (ClusterAuthorizationFailedError.code, "Cluster authorization failed.")


async def handle(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    refused = refusal(ctx)
    if refused is not None:
        code, message = refused
        return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": message} for _ in req["creations"]]}
    return {"throttle_time_ms": 0, "results": await ctx.controller.create_acls(req["creations"])}
