"""AlterClientQuotas (key 49): set or remove quota values of client quota entities.

v0-v1 (v1 is the first flexible version). Each entry names one entity (a list of
``(entity_type, entity_name)``, a null name being the default entity of that type) and its
operations: set ``key`` to ``value``, or remove ``key`` (``value`` ignored). With
``validate_only`` nothing is changed. The response has one result per request entry, naming
its entity.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, FLOAT64, INT16, INT32, STRING, ApiSchema, Array, F, Struct

ENTITY = Struct(F("entity_type", STRING), F("entity_name", STRING, nullable="0+"))

SCHEMA = ApiSchema(
    key=ApiKey.ALTER_CLIENT_QUOTAS,
    name="AlterClientQuotas",
    valid="0-1",
    flexible="1+",
    request=(
        F(
            "entries",
            Array(
                Struct(
                    F("entity", Array(ENTITY)),
                    F("ops", Array(Struct(F("key", STRING), F("value", FLOAT64), F("remove", BOOL)))),
                )
            ),
        ),
        F("validate_only", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F(
            "entries",
            Array(
                Struct(
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+"),
                    F("entity", Array(ENTITY)),
                )
            ),
        ),
    ),
)
