"""UnregisterBroker (key 64): remove a broker's registration from the cluster metadata (KIP-500
era admin API, ``kafka-cluster.sh unregister``).

Kafka 4.x serves v0 only, flexible. Sent to a broker (forwarded to the active controller) or to a
controller; the controller writes an ``UnregisterBrokerRecord`` for the broker's current
registration, or answers BROKER_ID_NOT_REGISTERED.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.UNREGISTER_BROKER,
    name="UnregisterBroker",
    valid="0",
    flexible="0+",
    request=(F("broker_id", INT32),),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
    ),
)
