"""FindCoordinator (key 10): which broker coordinates a consumer group, transaction or share group.

Kafka 4.x serves v0-v6; so does Zurau (clients ask for v1, v2 or v6).

* v1 adds the key type (0 group, 1 transaction) and, in the response, throttle time and an error
  message; v2 is the same as v1.
* v3 is the first flexible version.
* v4 batches: the request carries a list of keys and the response one coordinator per key, in place
  of the single key and the single node of v0-v3.
* v5 may answer TRANSACTION_ABORTABLE; v6 adds share groups (key type 2, key
  "group:topic-id:partition").
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

# v4+: the coordinator found (or the error met) for one requested key.
COORDINATOR = Struct(
    F("key", STRING, versions="4+"),
    F("node_id", INT32, versions="4+"),
    F("host", STRING, versions="4+"),
    F("port", INT32, versions="4+"),
    F("error_code", INT16, versions="4+"),
    F("error_message", STRING, versions="4+", nullable="4+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.FIND_COORDINATOR,
    name="FindCoordinator",
    valid="0-6",
    flexible="3+",
    request=(
        F("key", STRING, versions="0-3"),
        F("key_type", INT8, versions="1+"),
        F("coordinator_keys", Array(STRING), versions="4+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("error_code", INT16, versions="0-3"),
        F("error_message", STRING, versions="1-3", nullable="1-3"),
        F("node_id", INT32, versions="0-3"),
        F("host", STRING, versions="0-3"),
        F("port", INT32, versions="0-3"),
        F("coordinators", Array(COORDINATOR), versions="4+"),
    ),
)
