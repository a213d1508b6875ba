"""PushTelemetry (KIP-714): a client's metrics, an OTLP ``MetricsData`` payload.

Checked, decompressed and decoded by the broker's
:class:`~zurau.broker.client_metrics_manager.ClientMetricsManager` (Kafka's errors:
INVALID_REQUEST, THROTTLING_QUOTA_EXCEEDED, UNKNOWN_SUBSCRIPTION_ID,
UNSUPPORTED_COMPRESSION_TYPE, TELEMETRY_TOO_LARGE, INVALID_RECORD); what it accepts is exposed on
the broker's ``/metrics``. Any principal may push, as in Kafka (no ACL). Served on broker
listeners only.
"""

from __future__ import annotations

from zurau.broker.handlers.get_telemetry_subscriptions import origin
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.messages import PushTelemetryRequest, PushTelemetryResponse

API_KEY = ApiKey.PUSH_TELEMETRY


def handle(ctx: RequestContext, req: PushTelemetryRequest) -> PushTelemetryResponse:
    manager = getattr(ctx.services, "client_metrics", None)
    if manager is None:
        return {"throttle_time_ms": 0, "error_code": UnsupportedVersionError.code}
    code = manager.push(
        req["client_instance_id"],
        req["subscription_id"],
        bool(req["terminating"]),
        req["compression_type"],
        req["metrics"],
        origin(ctx),
    )
    return {"throttle_time_ms": 0, "error_code": code}
