"""DescribeCluster (key 60): cluster id, controller and live brokers, for admin clients.

Flexible from its first version. v1 lets the caller choose whether brokers or controllers are
described (the endpoint type, echoed in the response); v2 can include fenced brokers and marks
each broker as fenced or not.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

ENDPOINT_TYPE_BROKERS = 1
AUTHORIZED_OPERATIONS_UNSET = -(2**31)

BROKER = Struct(
    F("broker_id", INT32),
    F("host", STRING),
    F("port", INT32),
    F("rack", STRING, nullable="0+"),
    F("is_fenced", BOOL, versions="2+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_CLUSTER,
    name="DescribeCluster",
    valid="0-2",
    flexible="0+",
    request=(
        F("include_cluster_authorized_operations", BOOL),
        F("endpoint_type", INT8, versions="1+", default=ENDPOINT_TYPE_BROKERS),
        F("include_fenced_brokers", BOOL, versions="2+"),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("endpoint_type", INT8, versions="1+", default=ENDPOINT_TYPE_BROKERS),
        F("cluster_id", STRING),
        F("controller_id", INT32, default=-1),
        F("brokers", Array(BROKER)),
        F("cluster_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_UNSET),
    ),
)
