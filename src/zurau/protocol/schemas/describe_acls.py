"""DescribeAcls (key 29): the ACL bindings that match a filter.

Zurau serves v1-v3, as Kafka 4.x does (v0, without pattern types, is gone). v1 added the
resource pattern type (filters: ANY 1, MATCH 2, LITERAL 3, PREFIXED 4);
v2 is the first flexible version; v3 added the USER and DELEGATION_TOKEN resource types. A null
name, principal or host in the filter matches any value. Results are grouped per resource
pattern, each with its entries.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

# The pattern type a field carries when the version predates it (LITERAL).
LITERAL_DEFAULT = 3

ACL_ENTRY = Struct(
    F("principal", STRING),
    F("host", STRING),
    F("operation", INT8),
    F("permission_type", INT8),
)

RESOURCE = Struct(
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("pattern_type", INT8, versions="1+", default=LITERAL_DEFAULT),
    F("acls", Array(ACL_ENTRY)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_ACLS,
    name="DescribeAcls",
    valid="1-3",
    flexible="2+",
    request=(
        F("resource_type_filter", INT8),
        F("resource_name_filter", STRING, nullable="0+"),
        F("pattern_type_filter", INT8, versions="1+", default=LITERAL_DEFAULT),
        F("principal_filter", STRING, nullable="0+"),
        F("host_filter", STRING, nullable="0+"),
        F("operation", INT8),
        F("permission_type", INT8),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("resources", Array(RESOURCE)),
    ),
)
