"""DescribeConfigs (key 32): read the configs of topics, brokers and other resources.

Kafka 4.x serves v1-v4, and so does Zurau (clients ask for v1, v2 or v4).

* v1 lets the client ask for synonyms and reports each config's source instead of an is-default
  flag (the flag, v0 only, is kept below for completeness but no served version carries it).
* v2 is the same as v1; v3 adds each config's type and, on request, its documentation.
* v4 is the first flexible version.

A null ``configuration_keys`` asks for every config of the resource.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

RESOURCE = Struct(
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("configuration_keys", Array(STRING), nullable="0+", default=()),
)

# Another name under which the same setting is (or could be) defined, and where that one comes from.
SYNONYM = Struct(
    F("name", STRING, versions="1+"),
    F("value", STRING, versions="1+", nullable="0+"),
    F("source", INT8, versions="1+"),
)

CONFIG = Struct(
    F("name", STRING),
    F("value", STRING, nullable="0+"),
    F("read_only", BOOL),
    F("config_source", INT8, versions="1+", default=-1),
    F("is_default", BOOL, versions="0"),
    F("is_sensitive", BOOL),
    F("synonyms", Array(SYNONYM), versions="1+"),
    F("config_type", INT8, versions="3+"),
    F("documentation", STRING, versions="3+", nullable="0+"),
)

RESOURCE_RESULT = Struct(
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("resource_type", INT8),
    F("resource_name", STRING),
    F("configs", Array(CONFIG)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_CONFIGS,
    name="DescribeConfigs",
    valid="1-4",
    flexible="4+",
    request=(
        F("resources", Array(RESOURCE)),
        F("include_synonyms", BOOL, versions="1+"),
        F("include_documentation", BOOL, versions="3+"),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("results", Array(RESOURCE_RESULT)),
    ),
)
