"""JoinGroup (key 11): a member joins a classic consumer group and takes part in a rebalance.

Kafka 4.x serves v0-v9; so does Zurau (clients ask for v5 or v7).

* v1 adds the rebalance timeout (-1 means "use the session timeout"); v2 adds throttle time to the
  response; v3 is the same as v2.
* v4: a member that joins without an id is told MEMBER_ID_REQUIRED and must join again with the id
  it was handed.
* v5 adds the static membership id (group.instance.id) to the request and to each member listed.
* v6 is the first flexible version.
* v7 returns the group's protocol type; v8 lets the client give a reason for joining; v9 adds
  ``skip_assignment`` (the leader need not compute an assignment).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, ApiSchema, Array, F, Struct

# A partition-assignment protocol the member supports, with its subscription metadata.
PROTOCOL = Struct(
    F("name", STRING),
    F("metadata", BYTES),
)

# A member of the group, as told to the leader.
MEMBER = Struct(
    F("member_id", STRING),
    F("group_instance_id", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
    F("metadata", BYTES),
)

SCHEMA = ApiSchema(
    key=ApiKey.JOIN_GROUP,
    name="JoinGroup",
    valid="0-9",
    flexible="6+",
    request=(
        F("group_id", STRING),
        F("session_timeout_ms", INT32),
        F("rebalance_timeout_ms", INT32, versions="1+", default=-1),
        F("member_id", STRING),
        F("group_instance_id", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
        F("protocol_type", STRING),
        F("protocols", Array(PROTOCOL)),
        F("reason", STRING, versions="8+", nullable="8+"),  # Kafka's default: null
    ),
    response=(
        F("throttle_time_ms", INT32, versions="2+"),
        F("error_code", INT16),
        F("generation_id", INT32, default=-1),
        F("protocol_type", STRING, versions="7+", nullable="7+"),  # Kafka's default: null
        F("protocol_name", STRING, nullable="7+"),
        F("leader", STRING),
        F("skip_assignment", BOOL, versions="9+"),
        F("member_id", STRING),
        F("members", Array(MEMBER)),
    ),
)
