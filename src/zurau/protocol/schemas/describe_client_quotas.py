"""DescribeClientQuotas (key 48): the client quotas whose entities match a filter.

v0-v1 (v1 is the first flexible version). A filter is a list of components, each naming an
entity type (``user``, ``client-id``, ``ip``) and how to match it: 0 an exact name (``match``),
1 the default entity (``match`` null), 2 any named or default entity of that type (``match``
null). ``strict`` excludes entities with types the filter does not name. A failed request
carries a response-level error and a null entry list. A null entity name is the default entity.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, FLOAT64, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

ENTITY = Struct(F("entity_type", STRING), F("entity_name", STRING, nullable="0+"))

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_CLIENT_QUOTAS,
    name="DescribeClientQuotas",
    valid="0-1",
    flexible="1+",
    request=(
        F(
            "components",
            Array(Struct(F("entity_type", STRING), F("match_type", INT8), F("match", STRING, nullable="0+"))),
        ),
        F("strict", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F(
            "entries",
            Array(Struct(F("entity", Array(ENTITY)), F("values", Array(Struct(F("key", STRING), F("value", FLOAT64)))))),
            nullable="0+",
        ),
    ),
)
