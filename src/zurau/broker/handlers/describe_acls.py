"""DescribeAcls: the bindings matching a filter, from this broker's metadata image
(:func:`zurau.metadata.controller.acl_control.describe_acls`). Needs DESCRIBE on the cluster (ALTER implies
it); SECURITY_DISABLED without an authorizer."""

from __future__ import annotations

from zurau.broker.handlers.create_acls import refusal
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.acl_control import describe_acls
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import DescribeAclsRequest, DescribeAclsResponse

API_KEY = ApiKey.DESCRIBE_ACLS


def handle(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    refused = refusal(ctx)
    if refused is not None:
        code, message = refused
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}
    return {"throttle_time_ms": 0, **describe_acls(ctx.image, req)}
