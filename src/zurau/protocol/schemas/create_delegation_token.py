"""CreateDelegationToken (key 38, KIP-48): a delegation token for the caller, or (v3, KIP-373) for
another owner.

Kafka 4.x serves v1-v3 (v0 was removed in 4.0; v1 is the same as v0); v2 is the first flexible
version; v3 adds the owner (request; null or empty: the caller) and the requester (response).
``max_lifetime_ms`` -1 (or any value <= 0) asks for the broker's ``delegation.token.max.lifetime.ms``;
a larger value than that is capped to it. The answer carries the token id and its HMAC (the secret
the token's users authenticate with), the issue, expiry and max timestamps (epoch ms).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

SCHEMA = ApiSchema(
    key=ApiKey.CREATE_DELEGATION_TOKEN,
    name="CreateDelegationToken",
    valid="1-3",
    flexible="2+",
    request=(
        F("owner_principal_type", STRING, versions="3+", nullable="3+"),
        F("owner_principal_name", STRING, versions="3+", nullable="3+"),
        F("renewers", Array(Struct(F("principal_type", STRING), F("principal_name", STRING)))),
        F("max_lifetime_ms", INT64),
    ),
    response=(
        F("error_code", INT16),
        F("principal_type", STRING),
        F("principal_name", STRING),
        F("token_requester_principal_type", STRING, versions="3+"),
        F("token_requester_principal_name", STRING, versions="3+"),
        F("issue_timestamp_ms", INT64),
        F("expiry_timestamp_ms", INT64),
        F("max_timestamp_ms", INT64),
        F("token_id", STRING),
        F("hmac", BYTES),
        F("throttle_time_ms", INT32),
    ),
)
