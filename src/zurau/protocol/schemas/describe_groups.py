"""DescribeGroups (key 15): state, protocol and members of classic groups.

Kafka 4.x serves v0-v6; so does Zurau.

* v1 adds throttle time to the response; v2 is the same as v1.
* v3 can ask for, and report, the caller's authorized operations on each group (the sentinel
  -2^31 means "not asked for").
* v4 reports each member's static membership id; v5 is the first flexible version.
* v6 adds a per-group error message and answers GROUP_ID_NOT_FOUND for unknown groups.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, ApiSchema, Array, F, Struct

# Kafka's "authorized operations were not requested" marker (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

MEMBER = Struct(
    F("member_id", STRING),
    F("group_instance_id", STRING, versions="4+", nullable="4+"),  # Kafka's default: null
    F("client_id", STRING),
    F("client_host", STRING),
    F("member_metadata", BYTES),
    F("member_assignment", BYTES),
)

GROUP = Struct(
    F("error_code", INT16),
    F("error_message", STRING, versions="6+", nullable="6+"),  # Kafka's default: null
    F("group_id", STRING),
    F("group_state", STRING),
    F("protocol_type", STRING),
    F("protocol_data", STRING),
    F("members", Array(MEMBER)),
    F("authorized_operations", INT32, versions="3+", default=AUTHORIZED_OPERATIONS_OMITTED),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_GROUPS,
    name="DescribeGroups",
    valid="0-6",
    flexible="5+",
    request=(
        F("groups", Array(STRING)),
        F("include_authorized_operations", BOOL, versions="3+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("groups", Array(GROUP)),
    ),
)
