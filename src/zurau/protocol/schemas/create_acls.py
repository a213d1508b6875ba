"""CreateAcls (key 30): add ACL bindings, one result per creation in request order.

Zurau serves v1-v3, as Kafka 4.x does (v1 added the resource pattern type, LITERAL 3 or
PREFIXED 4; v2 is the first flexible version; v3 added the USER and DELEGATION_TOKEN resource types).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

CREATION = Struct(
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("resource_pattern_type", INT8, versions="1+", default=3),
    F("principal", STRING),
    F("host", STRING),
    F("operation", INT8),
    F("permission_type", INT8),
)

SCHEMA = ApiSchema(
    key=ApiKey.CREATE_ACLS,
    name="CreateAcls",
    valid="1-3",
    flexible="2+",
    request=(F("creations", Array(CREATION)),),
    response=(
        F("throttle_time_ms", INT32),
        F("results", Array(Struct(F("error_code", INT16), F("error_message", STRING, nullable="0+")))),
    ),
)
