"""CreateTopics (key 19): create topics, optionally with a manual replica assignment and configs.

Kafka 4.x serves v2-v7, which is what Zurau serves too (clients ask for v3, v4 or v7).

* v4 lets a request leave the partition count and replication factor at -1 to take the broker's
  defaults even without a manual assignment.
* v5 is the first flexible version; its response also reports each new topic's partition count,
  replication factor and configs (or, as a tagged field, why the configs could not be returned).
* v6 may answer THROTTLING_QUOTA_EXCEEDED; v7 returns the new topic's id.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

# One partition placed by hand: the partition and the brokers holding its replicas.
REPLICA_ASSIGNMENT = Struct(
    F("partition_index", INT32),
    F("broker_ids", Array(INT32)),
)

# A config the client wants set on the new topic (value null means "use the default").
REQUESTED_CONFIG = Struct(
    F("name", STRING),
    F("value", STRING, nullable="0+"),
)

NEW_TOPIC = Struct(
    F("name", STRING),
    F("num_partitions", INT32),
    F("replication_factor", INT16),
    F("assignments", Array(REPLICA_ASSIGNMENT)),
    F("configs", Array(REQUESTED_CONFIG)),
)

# A config of the created topic, as reported back from v5 on.
CREATED_CONFIG = Struct(
    F("name", STRING, versions="5+"),
    F("value", STRING, versions="5+", nullable="5+"),
    F("read_only", BOOL, versions="5+"),
    F("config_source", INT8, versions="5+", default=-1),
    F("is_sensitive", BOOL, versions="5+"),
)

TOPIC_RESULT = Struct(
    F("name", STRING),
    F("topic_id", UUID, versions="7+"),
    F("error_code", INT16),
    F("error_message", STRING, versions="1+", nullable="0+"),
    F("topic_config_error_code", INT16, versions="5+", tag=0, tagged="5+"),
    F("num_partitions", INT32, versions="5+", default=-1),
    F("replication_factor", INT16, versions="5+", default=-1),
    F("configs", Array(CREATED_CONFIG), versions="5+", nullable="5+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.CREATE_TOPICS,
    name="CreateTopics",
    valid="2-7",
    flexible="5+",
    request=(
        F("topics", Array(NEW_TOPIC)),
        F("timeout_ms", INT32, default=60000),
        F("validate_only", BOOL, versions="1+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="2+"),
        F("topics", Array(TOPIC_RESULT)),
    ),
)
