"""SaslAuthenticate (key 36): carry one SASL token each way after SaslHandshake v1.

Kafka 4.x serves v0-v2; so does Zurau. v1 adds the session lifetime to the response (0: no
re-authentication required); v2 is the first flexible version.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT16, INT64, STRING, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.SASL_AUTHENTICATE,
    name="SaslAuthenticate",
    valid="0-2",
    flexible="2+",
    request=(F("auth_bytes", BYTES),),
    response=(
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("auth_bytes", BYTES),
        F("session_lifetime_ms", INT64, versions="1+"),
    ),
)
