"""GetTelemetrySubscriptions (key 71, KIP-714): a client asks which of its metrics the broker
wants, how often, and in which compression.

Kafka 4.2 serves v0 only, flexible; served on broker listeners only (``broker_only``).

* Request: ``client_instance_id``, the zero uuid on a client's first request (the broker then
  assigns one and returns it), else the id the broker gave it.
* Response: the assigned ``client_instance_id`` (the request's when it was not zero),
  ``subscription_id`` (changes whenever the matching subscriptions change),
  ``accepted_compression_types`` (compression type ids in the broker's order of preference),
  ``push_interval_ms``, ``telemetry_max_bytes``, ``delta_temporality`` and
  ``requested_metrics`` (metric name prefixes; empty: none, a single ``"*"``: every metric).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, ApiSchema, Array, F

SCHEMA = ApiSchema(
    key=ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
    name="GetTelemetrySubscriptions",
    valid="0",
    flexible="0+",
    request=(F("client_instance_id", UUID),),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("client_instance_id", UUID),
        F("subscription_id", INT32),
        F("accepted_compression_types", Array(INT8)),
        F("push_interval_ms", INT32),
        F("telemetry_max_bytes", INT32),
        F("delta_temporality", BOOL),
        F("requested_metrics", Array(STRING)),
    ),
    broker_only=True,
)
