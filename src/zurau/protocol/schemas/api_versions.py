"""ApiVersions (key 18): which APIs and versions the broker serves.

v3+ is flexible; the response always travels with response header v0.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

SCHEMA = ApiSchema(
    key=ApiKey.API_VERSIONS,
    name="ApiVersions",
    valid="0-4",
    flexible="3+",
    request=(
        F("client_software_name", STRING, versions="3+"),
        F("client_software_version", STRING, versions="3+"),
    ),
    response=(
        F("error_code", INT16),
        F(
            "api_keys",
            Array(
                Struct(
                    F("api_key", INT16),
                    F("min_version", INT16),
                    F("max_version", INT16),
                )
            ),
        ),
        F("throttle_time_ms", INT32, versions="1+"),
        F(
            "supported_features",
            Array(Struct(F("name", STRING), F("min_version", INT16), F("max_version", INT16))),
            versions="3+",
            tag=0,
            tagged="3+",
        ),
        F("finalized_features_epoch", INT64, versions="3+", tag=1, tagged="3+", default=-1),
        F(
            "finalized_features",
            Array(Struct(F("name", STRING), F("max_version_level", INT16), F("min_version_level", INT16))),
            versions="3+",
            tag=2,
            tagged="3+",
        ),
        F("zk_migration_ready", "bool", versions="3+", tag=3, tagged="3+", default=False),
    ),
)
