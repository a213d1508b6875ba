"""DeleteAcls (key 31): remove every ACL binding matching each filter.

Zurau serves v1-v3 (versions as DescribeAcls: v1 added the pattern type filter, v2 is flexible,
v3 added the USER and DELEGATION_TOKEN resource types). One result per filter, in request order,
listing the bindings it removed.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

FILTER = Struct(
    F("resource_type_filter", INT8),
    F("resource_name_filter", STRING, nullable="0+"),
    F("pattern_type_filter", INT8, versions="1+", default=3),
    F("principal_filter", STRING, nullable="0+"),
    F("host_filter", STRING, nullable="0+"),
    F("operation", INT8),
    F("permission_type", INT8),
)

MATCHING_ACL = Struct(
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("pattern_type", INT8, versions="1+", default=3),
    F("principal", STRING),
    F("host", STRING),
    F("operation", INT8),
    F("permission_type", INT8),
)

FILTER_RESULT = Struct(
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("matching_acls", Array(MATCHING_ACL)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DELETE_ACLS,
    name="DeleteAcls",
    valid="1-3",
    flexible="2+",
    request=(F("filters", Array(FILTER)),),
    response=(
        F("throttle_time_ms", INT32),
        F("filter_results", Array(FILTER_RESULT)),
    ),
)
