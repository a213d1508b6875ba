"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms (and iterations) users have.

Only v0 exists (Kafka 4.x serves v0; so does Zurau); flexible from v0. A null user list describes
every user with a credential. Salts and keys are never returned.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

CREDENTIAL_INFO = Struct(F("mechanism", INT8), F("iterations", INT32))

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    name="DescribeUserScramCredentials",
    valid="0",
    flexible="0+",
    request=(F("users", Array(Struct(F("name", STRING))), nullable="0+"),),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F(
            "results",
            Array(
                Struct(
                    F("user", STRING),
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+"),
                    F("credential_infos", Array(CREDENTIAL_INFO)),
                )
            ),
        ),
    ),
)
