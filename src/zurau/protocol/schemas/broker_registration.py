"""BrokerRegistration (key 62): a KRaft broker registers with the controller on startup.

Part of KIP-631. Flexible from its first version. The broker sends its id, the cluster id it
belongs to, an incarnation id (new with every process start), its listeners, the range of every
feature it supports and its rack; the controller answers with the broker epoch the broker uses in
its heartbeats and in AlterPartition.

* v1: ``is_migrating_zk_broker`` (ZooKeeper migration, KIP-866).
* v2 (KIP-858, JBOD): the directory ids of the broker's online log dirs.
* v3 (KIP-966): the broker epoch of the previous incarnation (-1 if none or after an unclean
  shutdown), so that the controller knows which replicas kept their data.
* v4: the same fields as v3 (only what the broker may report changed).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, STRING, UINT16, UUID, ApiSchema, Array, F, Struct

LISTENER = Struct(
    F("name", STRING),
    F("host", STRING),
    F("port", UINT16),
    F("security_protocol", INT16),
)

FEATURE = Struct(
    F("name", STRING),
    F("min_supported_version", INT16),
    F("max_supported_version", INT16),
)

SCHEMA = ApiSchema(
    key=ApiKey.BROKER_REGISTRATION,
    name="BrokerRegistration",
    valid="0-4",
    flexible="0+",
    request=(
        F("broker_id", INT32),
        F("cluster_id", STRING),
        F("incarnation_id", UUID),
        F("listeners", Array(LISTENER)),
        F("features", Array(FEATURE)),
        F("rack", STRING, nullable="0+"),
        F("is_migrating_zk_broker", BOOL, versions="1+", default=False),
        F("log_dirs", Array(UUID), versions="2+"),
        F("previous_broker_epoch", INT64, versions="3+", default=-1),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("broker_epoch", INT64, default=-1),
    ),
)
