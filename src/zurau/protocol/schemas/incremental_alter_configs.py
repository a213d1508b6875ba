"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from individual configs.

Kafka 4.x serves v0-v1; so does Zurau. v1 is the first flexible version. ``config_operation`` is
0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (the last two for list-valued configs).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

CONFIG_CHANGE = Struct(
    F("name", STRING),
    F("config_operation", INT8),
    F("value", STRING, nullable="0+"),
)

RESOURCE = Struct(
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("configs", Array(CONFIG_CHANGE)),
)

RESOURCE_RESULT = Struct(
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("resource_type", INT8),
    F("resource_name", STRING),
)

SCHEMA = ApiSchema(
    key=ApiKey.INCREMENTAL_ALTER_CONFIGS,
    name="IncrementalAlterConfigs",
    valid="0-1",
    flexible="1+",
    request=(
        F("resources", Array(RESOURCE)),
        F("validate_only", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("responses", Array(RESOURCE_RESULT)),
    ),
)
