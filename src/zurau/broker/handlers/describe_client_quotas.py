"""DescribeClientQuotas: the quotas of the entities matching a filter, from the metadata image
(:func:`zurau.metadata.controller.quota_control.describe_client_quotas`). With an authorizer, the principal
needs DESCRIBE_CONFIGS on the cluster, else the response carries CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.quota_control import describe_client_quotas
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS


def handle(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "entries": None}
    return describe_client_quotas(ctx.image, req["components"], req["strict"])
