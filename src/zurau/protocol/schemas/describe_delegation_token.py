"""DescribeDelegationToken (key 41, KIP-48): the tokens the caller may see.

Kafka 4.x serves v1-v3 (v0 was removed in 4.0); v2 is the first flexible version; v3 adds each
token's requester. ``owners`` null describes every token the caller may see; an empty list
describes none. A token is shown to its owner and renewers, and to principals with DESCRIBE on the
DELEGATION_TOKEN resource (the token id) or DESCRIBE_TOKENS on the owner's USER resource.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

PRINCIPAL = Struct(F("principal_type", STRING), F("principal_name", STRING))

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_DELEGATION_TOKEN,
    name="DescribeDelegationToken",
    valid="1-3",
    flexible="2+",
    request=(F("owners", Array(PRINCIPAL), nullable="0+"),),
    response=(
        F("error_code", INT16),
        F(
            "tokens",
            Array(
                Struct(
                    F("principal_type", STRING),
                    F("principal_name", STRING),
                    F("token_requester_principal_type", STRING, versions="3+"),
                    F("token_requester_principal_name", STRING, versions="3+"),
                    F("issue_timestamp", INT64),
                    F("expiry_timestamp", INT64),
                    F("max_timestamp", INT64),
                    F("token_id", STRING),
                    F("hmac", BYTES),
                    F("renewers", Array(PRINCIPAL)),
                )
            ),
        ),
        F("throttle_time_ms", INT32),
    ),
)
