"""Metadata (key 3): which brokers exist, and the partitions and leaders of topics.

Kafka 4.x still serves every version from 0. Notable steps:

* v1 makes the topic list nullable (null asks for all topics; an empty list asks for none) and adds
  broker racks, the controller id and the internal flag; v2 adds the cluster id; v3 throttle time.
* v4 lets the client ask for topic auto-creation; v5 reports offline replicas; v7 leader epochs.
* v8 adds authorized-operation bitfields; the cluster-wide one leaves the request and response
  again in v11 (DescribeCluster took it over).
* v9 is the first flexible version; v10 carries topic ids (and names may be null); v12 answers
  with a null name for unknown topic ids; v13 adds a top-level error code to the response.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

# Value of an authorized-operations bitfield that was not requested.
AUTHORIZED_OPERATIONS_UNSET = -(2**31)

REQUEST_TOPIC = Struct(
    F("topic_id", UUID, versions="10+"),
    F("name", STRING, nullable="10+", default=""),
)

BROKER = Struct(
    F("node_id", INT32),
    F("host", STRING),
    F("port", INT32),
    F("rack", STRING, versions="1+", nullable="1+"),
)

PARTITION = Struct(
    F("error_code", INT16),
    F("partition_index", INT32),
    F("leader_id", INT32),
    F("leader_epoch", INT32, versions="7+", default=-1),
    F("replica_nodes", Array(INT32)),
    F("isr_nodes", Array(INT32)),
    F("offline_replicas", Array(INT32), versions="5+"),
)

TOPIC = Struct(
    F("error_code", INT16),
    F("name", STRING, nullable="12+", default=""),
    F("topic_id", UUID, versions="10+"),
    F("is_internal", BOOL, versions="1+", default=False),
    F("partitions", Array(PARTITION)),
    F("topic_authorized_operations", INT32, versions="8+", default=AUTHORIZED_OPERATIONS_UNSET),
)

SCHEMA = ApiSchema(
    key=ApiKey.METADATA,
    name="Metadata",
    valid="0-13",
    flexible="9+",
    request=(
        F("topics", Array(REQUEST_TOPIC), nullable="1+", default=()),
        F("allow_auto_topic_creation", BOOL, versions="4+", default=True),
        F("include_cluster_authorized_operations", BOOL, versions="8-10"),
        F("include_topic_authorized_operations", BOOL, versions="8+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="3+"),
        F("brokers", Array(BROKER)),
        F("cluster_id", STRING, versions="2+", nullable="2+"),
        F("controller_id", INT32, versions="1+", default=-1),
        F("topics", Array(TOPIC)),
        F("cluster_authorized_operations", INT32, versions="8-10", default=AUTHORIZED_OPERATIONS_UNSET),
        F("error_code", INT16, versions="13+"),
    ),
)
