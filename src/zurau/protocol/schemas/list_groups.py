"""ListGroups (key 16): the groups a broker coordinates.

Kafka 4.x serves v0-v5; so does Zurau. v1 adds throttle time to the response; v2 is the same as
v1; v3 is the first flexible version; v4 can filter by group state and reports each group's state;
v5 can filter by group type (classic, consumer, share, streams) and reports each group's type.
Empty filters match everything.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, Array, F, Struct

LISTED_GROUP = Struct(
    F("group_id", STRING),
    F("protocol_type", STRING),
    F("group_state", STRING, versions="4+"),
    F("group_type", STRING, versions="5+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.LIST_GROUPS,
    name="ListGroups",
    valid="0-5",
    flexible="3+",
    request=(
        F("states_filter", Array(STRING), versions="4+"),
        F("types_filter", Array(STRING), versions="5+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("error_code", INT16),
        F("groups", Array(LISTED_GROUP)),
    ),
)
