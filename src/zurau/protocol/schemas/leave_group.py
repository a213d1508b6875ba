"""LeaveGroup (key 13): members leave a classic consumer group.

Kafka 4.x serves v0-v5; so does Zurau (clients ask for v1 or v5).

* v1 adds throttle time to the response; v2 is the same as v1.
* v3 turns the request into a batch: a list of members (member id and static membership id)
  replaces the single member id, and the response reports an error per member.
* v4 is the first flexible version; v5 lets each member give a reason.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, Array, F, Struct

LEAVING_MEMBER = Struct(
    F("member_id", STRING, versions="3+"),
    F("group_instance_id", STRING, versions="3+", nullable="3+"),  # Kafka's default: null
    F("reason", STRING, versions="5+", nullable="5+"),  # Kafka's default: null
)

MEMBER_RESULT = Struct(
    F("member_id", STRING, versions="3+"),
    F("group_instance_id", STRING, versions="3+", nullable="3+"),
    F("error_code", INT16, versions="3+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.LEAVE_GROUP,
    name="LeaveGroup",
    valid="0-5",
    flexible="4+",
    request=(
        F("group_id", STRING),
        F("member_id", STRING, versions="0-2"),
        F("members", Array(LEAVING_MEMBER), versions="3+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("error_code", INT16),
        F("members", Array(MEMBER_RESULT), versions="3+"),
    ),
)
