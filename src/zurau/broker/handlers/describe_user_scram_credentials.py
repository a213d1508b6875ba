"""DescribeUserScramCredentials: users' SCRAM mechanisms and iterations, from the metadata image
(:func:`zurau.metadata.controller.scram_control.describe_user_scram_credentials`)."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.scram_control import describe_user_scram_credentials
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS


def handle(ctx: RequestContext, req: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "results": []}
    return describe_user_scram_credentials(ctx.image, req["users"])
