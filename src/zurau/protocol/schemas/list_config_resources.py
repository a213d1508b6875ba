"""ListConfigResources (key 74): the names of config resources. v0 was
ListClientMetricsResources (KIP-1000) and lists only CLIENT_METRICS resources (type 16); v1
(KIP-1142) takes ``resource_types`` (empty: every type the broker lists) and answers each
resource with its type.

Kafka 4.2 serves v0-1, both flexible; served on broker listeners only (``broker_only``).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

CLIENT_METRICS_RESOURCE_TYPE = 16

CONFIG_RESOURCE = Struct(
    F("resource_name", STRING),
    F("resource_type", INT8, versions="1+", default=CLIENT_METRICS_RESOURCE_TYPE),
)

SCHEMA = ApiSchema(
    key=ApiKey.LIST_CONFIG_RESOURCES,
    name="ListConfigResources",
    valid="0-1",
    flexible="0+",
    request=(F("resource_types", Array(INT8), versions="1+"),),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("config_resources", Array(CONFIG_RESOURCE)),
    ),
    broker_only=True,
)
