"""AlterConfigs (key 33): replace the whole set of dynamic configs of resources.

Kafka 4.x serves v0-v2; so does Zurau. v1 is the same as v0 (the broker answers before it throttles
a quota violation); v2 is the first flexible version. Configs left out of a request fall back to
their defaults, which is why clients prefer IncrementalAlterConfigs (key 44).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

CONFIG = Struct(
    F("name", STRING),
    F("value", STRING, nullable="0+"),
)

RESOURCE = Struct(
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("configs", Array(CONFIG)),
)

RESOURCE_RESULT = Struct(
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("resource_type", INT8),
    F("resource_name", STRING),
)

SCHEMA = ApiSchema(
    key=ApiKey.ALTER_CONFIGS,
    name="AlterConfigs",
    valid="0-2",
    flexible="2+",
    request=(
        F("resources", Array(RESOURCE)),
        F("validate_only", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("responses", Array(RESOURCE_RESULT)),
    ),
)
