"""AlterUserScramCredentials (key 51): set or delete users' SCRAM credentials.

Only v0 exists (Kafka 4.x serves v0; so does Zurau); flexible from v0. An upsertion carries the
salt, the iterations and the *salted* password (the client runs PBKDF2); the controller derives
the stored and server keys from it, so the password itself never reaches the broker.
Mechanisms: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512. One result per user named.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

SCHEMA = ApiSchema(
    key=ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    name="AlterUserScramCredentials",
    valid="0",
    flexible="0+",
    request=(
        F("deletions", Array(Struct(F("name", STRING), F("mechanism", INT8)))),
        F(
            "upsertions",
            Array(
                Struct(
                    F("name", STRING),
                    F("mechanism", INT8),
                    F("iterations", INT32),
                    F("salt", BYTES),
                    F("salted_password", BYTES),
                )
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F(
            "results",
            Array(Struct(F("user", STRING), F("error_code", INT16), F("error_message", STRING, nullable="0+"))),
        ),
    ),
)
