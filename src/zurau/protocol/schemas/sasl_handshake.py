"""SaslHandshake (key 17): pick a SASL mechanism and learn which ones the broker offers.

Kafka 4.x serves v0-v1; so does Zurau. Neither version is flexible (Kafka cannot bump this API
because clients up to 2.4 negotiate it wrongly). With v0 the SASL tokens that follow travel as raw
length-prefixed frames; with v1 they travel inside SaslAuthenticate (key 36) requests.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, STRING, ApiSchema, Array, F

SCHEMA = ApiSchema(
    key=ApiKey.SASL_HANDSHAKE,
    name="SaslHandshake",
    valid="0-1",
    flexible="none",
    request=(F("mechanism", STRING),),
    response=(
        F("error_code", INT16),
        F("mechanisms", Array(STRING)),
    ),
)
