"""ListConfigResources (v0: ListClientMetricsResources, KIP-1000; v1: KIP-1142): the names of
config resources, so a tool can describe them all.

* v0 lists the CLIENT_METRICS (16) resources: the subscriptions of the current metadata image.
* v1 lists the types in ``resource_types`` (empty: all of them): TOPIC (2, every topic),
  BROKER (4) and BROKER_LOGGER (8) (the registered brokers' ids; this node's on a single node
  that has not registered), CLIENT_METRICS (16) and GROUP (32: the groups this broker
  coordinates and those with group configs). Any other type is UNSUPPORTED_VERSION for the
  whole request, as in Kafka; each resource is answered with its type.

Needs DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED), as in Kafka. Served on
broker listeners only.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import Op, cluster_allowed
from zurau.broker.handlers._groups import coordinator
from zurau.broker.request_context import RequestContext
from zurau.config.client_metrics_configs import CLIENT_METRICS_RESOURCE
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import ClusterAuthorizationFailedError, UnsupportedVersionError
from zurau.protocol.messages import (
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    ListConfigResourcesResponseConfigResources,
)

API_KEY = ApiKey.LIST_CONFIG_RESOURCES

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
LISTED_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS_RESOURCE, GROUP)


async def _names(ctx: RequestContext, rtype: int) -> list[str]:
    image = ctx.image
    if rtype == TOPIC:
        return image.names()
    if rtype in (BROKER, BROKER_LOGGER):
        ids = sorted(image.brokers) or [ctx.node_id]
        return [str(i) for i in ids]
    if rtype == CLIENT_METRICS_RESOURCE:
        return sorted(image.client_metrics)
    code, groups = await coordinator(ctx).list_groups()
    names = {g.group_id for g in groups} if code == 0 else set()
    return sorted(names | set(image.group_configs))


async def handle(ctx: RequestContext, req: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
    def error(code: int) -> ListConfigResourcesResponse:
        return {"throttle_time_ms": 0, "error_code": code, "config_resources": []}

    wanted = (
        [CLIENT_METRICS_RESOURCE] if ctx.api_version == 0 else list(req.get("resource_types") or LISTED_TYPES)
    )
    if any(t not in LISTED_TYPES for t in wanted):
        return error(UnsupportedVersionError.code)
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        return error(ClusterAuthorizationFailedError.code)
    out: list[ListConfigResourcesResponseConfigResources] = []
    for rtype in dict.fromkeys(wanted):
        out += [{"resource_name": n, "resource_type": rtype} for n in await _names(ctx, rtype)]
    return {"throttle_time_ms": 0, "error_code": 0, "config_resources": out}
