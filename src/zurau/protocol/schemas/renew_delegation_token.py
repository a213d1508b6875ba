"""RenewDelegationToken (key 39, KIP-48): push a token's expiry further, named by its HMAC.

Kafka 4.x serves v1-v2 (v0 was removed in 4.0); v2 is the first flexible version.
``renew_period_ms`` <= 0 asks for ``delegation.token.expiry.time.ms``; a longer period is cut to
it, and the new expiry never passes the token's max timestamp. Only the owner and the renewers may
renew.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT16, INT32, INT64, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.RENEW_DELEGATION_TOKEN,
    name="RenewDelegationToken",
    valid="1-2",
    flexible="2+",
    request=(
        F("hmac", BYTES),
        F("renew_period_ms", INT64),
    ),
    response=(
        F("error_code", INT16),
        F("expiry_timestamp_ms", INT64),
        F("throttle_time_ms", INT32),
    ),
)
