"""UpdateFeatures (key 57): change the cluster's finalized feature levels (KIP-584, KIP-1022;
``kafka-features.sh upgrade|downgrade|disable``).

Kafka 4.2 serves v0-v2, all flexible. v0 says a downgrade with ``allow_downgrade``; v1 replaces it
with ``upgrade_type`` (1 UPGRADE, 2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE) and adds
``validate_only``; v2 drops the per-feature ``results`` from the response (the top-level error
says it all: the update is atomic). Sent to any broker (forwarded to the active controller) or to
a controller.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

SCHEMA = ApiSchema(
    key=ApiKey.UPDATE_FEATURES,
    name="UpdateFeatures",
    valid="0-2",
    flexible="0+",
    request=(
        F("timeout_ms", INT32, default=60000),
        F(
            "feature_updates",
            Array(
                Struct(
                    F("feature", STRING),
                    F("max_version_level", INT16),
                    F("allow_downgrade", BOOL, versions="0"),
                    F("upgrade_type", INT8, versions="1+", default=1),
                )
            ),
        ),
        F("validate_only", BOOL, versions="1+", default=False),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F(
            "results",
            Array(
                Struct(
                    F("feature", STRING), F("error_code", INT16), F("error_message", STRING, nullable="0+")
                )
            ),
            versions="0-1",
        ),
    ),
)
