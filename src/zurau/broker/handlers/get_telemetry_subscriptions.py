"""GetTelemetrySubscriptions (KIP-714): which metrics a client should push, how often and how.

Decided by the broker's :class:`~zurau.broker.client_metrics_manager.ClientMetricsManager`
(subscriptions from the CLIENT_METRICS config resources of the metadata image; instance ids,
throttling and errors as Kafka's ``ClientMetricsManager``). Any principal may ask, as in Kafka
(no ACL). Served on broker listeners only.
"""

from __future__ import annotations

from zurau.broker.client_metrics_manager import RequestOrigin
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.messages import GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse

API_KEY = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS


def origin(ctx: RequestContext) -> RequestOrigin:
    return RequestOrigin.of_peer(ctx.client_id, ctx.client_software, ctx.peer)


def handle(ctx: RequestContext, req: GetTelemetrySubscriptionsRequest) -> GetTelemetrySubscriptionsResponse:
    manager = getattr(ctx.services, "client_metrics", None)
    if manager is None:
        return {"throttle_time_ms": 0, "error_code": UnsupportedVersionError.code}
    return manager.get_subscriptions(req["client_instance_id"], origin(ctx))
