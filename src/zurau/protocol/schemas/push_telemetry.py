"""PushTelemetry (key 72, KIP-714): a client sends its metrics as an OpenTelemetry
``MetricsData`` protobuf (:mod:`zurau.protocol.otlp_metrics`), compressed with
``compression_type`` (Kafka's record compression ids: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).

Kafka 4.2 serves v0 only, flexible; served on broker listeners only (``broker_only``).
``terminating`` marks the client's last push (it is closing): accepted whatever the interval,
and nothing is accepted from that client instance after it.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, BYTES, INT8, INT16, INT32, UUID, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.PUSH_TELEMETRY,
    name="PushTelemetry",
    valid="0",
    flexible="0+",
    request=(
        F("client_instance_id", UUID),
        F("subscription_id", INT32),
        F("terminating", BOOL),
        F("compression_type", INT8),
        F("metrics", BYTES),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ),
    broker_only=True,
)
