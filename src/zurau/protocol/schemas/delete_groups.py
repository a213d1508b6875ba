"""DeleteGroups (key 42): delete empty groups and their committed offsets.

Kafka 4.x serves v0-v2; so does Zurau. v1 is the same as v0 (the broker answers before it throttles
a quota violation); v2 is the first flexible version. (The request field really is
``groups_names``, as Kafka spells it.)
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, Array, F, Struct

GROUP_RESULT = Struct(
    F("group_id", STRING),
    F("error_code", INT16),
)

SCHEMA = ApiSchema(
    key=ApiKey.DELETE_GROUPS,
    name="DeleteGroups",
    valid="0-2",
    flexible="2+",
    request=(F("groups_names", Array(STRING)),),
    response=(
        F("throttle_time_ms", INT32),
        F("results", Array(GROUP_RESULT)),
    ),
)
