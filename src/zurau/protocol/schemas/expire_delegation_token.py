"""ExpireDelegationToken (key 40, KIP-48): move a token's expiry to ``now + expiry_time_period_ms``
(never past its max timestamp), or with a negative period remove it at once.

Kafka 4.x serves v1-v2 (v0 was removed in 4.0); v2 is the first flexible version. Only the owner
and the renewers may expire a token.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BYTES, INT16, INT32, INT64, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.EXPIRE_DELEGATION_TOKEN,
    name="ExpireDelegationToken",
    valid="1-2",
    flexible="2+",
    request=(
        F("hmac", BYTES),
        F("expiry_time_period_ms", INT64),
    ),
    response=(
        F("error_code", INT16),
        F("expiry_timestamp_ms", INT64),
        F("throttle_time_ms", INT32),
    ),
)
