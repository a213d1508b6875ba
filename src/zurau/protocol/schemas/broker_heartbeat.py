"""BrokerHeartbeat (key 63): a registered KRaft broker's periodic heartbeat to the controller.

Part of KIP-631. Flexible from its first version. The broker reports how far it has replayed the
metadata log and whether it wants to be fenced or to shut down; the controller answers whether
the broker has caught up, whether it is fenced and whether it may shut down now.

* v1 (KIP-858, JBOD): tagged directory ids of log dirs that went offline.
* v2 (KIP-1066): tagged directory ids of cordoned log dirs (where no new replicas go), null
  until the broker has recovered.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, NULL, UUID, ApiSchema, Array, F

SCHEMA = ApiSchema(
    key=ApiKey.BROKER_HEARTBEAT,
    name="BrokerHeartbeat",
    valid="0-2",
    flexible="0+",
    request=(
        F("broker_id", INT32),
        F("broker_epoch", INT64, default=-1),
        F("current_metadata_offset", INT64),
        F("want_fence", BOOL),
        F("want_shut_down", BOOL),
        F("offline_log_dirs", Array(UUID), versions="1+", tag=0, tagged="1+"),
        F("cordoned_log_dirs", Array(UUID), versions="2+", nullable="2+", tag=1, tagged="2+", default=NULL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("is_caught_up", BOOL, default=False),
        F("is_fenced", BOOL, default=True),
        F("should_shut_down", BOOL),
    ),
)
