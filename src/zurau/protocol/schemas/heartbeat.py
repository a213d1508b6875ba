"""Heartbeat (key 12): a classic-group member tells the coordinator it is alive.

Kafka 4.x serves v0-v4; so does Zurau (clients ask for v1, v3 or v4). v1 adds throttle time to the
response; v2 is the same as v1; v3 adds the static membership id; v4 is the first flexible version.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.HEARTBEAT,
    name="Heartbeat",
    valid="0-4",
    flexible="4+",
    request=(
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, versions="3+", nullable="3+"),  # Kafka's default: null
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("error_code", INT16),
    ),
)
