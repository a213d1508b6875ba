"""SyncGroup (key 14): the leader hands out assignments; every member receives its own.

Kafka 4.x serves v0-v5; so does Zurau (clients ask for v3 or v5).

* v1 adds throttle time to the response; v2 is the same as v1.
* v3 adds the static membership id; v4 is the first flexible version.
* v5 has the client send, and the broker return, the protocol type and name, so that either side
  can notice a mismatch.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT16, INT32, STRING, ApiSchema, Array, F, Struct

# The leader's assignment for one member.
ASSIGNMENT = Struct(
    F("member_id", STRING),
    F("assignment", BYTES),
)

SCHEMA = ApiSchema(
    key=ApiKey.SYNC_GROUP,
    name="SyncGroup",
    valid="0-5",
    flexible="4+",
    request=(
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, versions="3+", nullable="3+"),  # Kafka's default: null
        F("protocol_type", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
        F("protocol_name", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
        F("assignments", Array(ASSIGNMENT)),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("error_code", INT16),
        F("protocol_type", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
        F("protocol_name", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
        F("assignment", BYTES),
    ),
)
