"""Fetch (key 1): read record batches from partitions, for consumers and follower replicas.

Kafka 4.x dropped v0-v3, so v4 (isolation level, aborted-transaction lists, message format v2) is
the floor. Wire changes after that:

* v5: log start offsets in both directions; v7: incremental fetch sessions (session id/epoch and
  the list of forgotten partitions); v9: current leader epoch per partition; v11: rack id in the
  request and the preferred read replica in the response.
* v12: first flexible version; last fetched epoch per partition; tagged cluster id; the response
  gains tagged diverging epoch, current leader and snapshot id per partition.
* v13: topics are identified by topic id instead of name.
* v15: a tagged replica state (id and epoch) replaces the plain replica id.
* v16: tagged leader endpoints in the response; v17: tagged replica directory id per partition;
  v18: tagged replica high watermark per partition.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    ApiSchema,
    Array,
    F,
    Struct,
)

INT64_MAX = 2**63 - 1

REPLICA_STATE = Struct(
    F("replica_id", INT32, versions="15+", default=-1),
    F("replica_epoch", INT64, versions="15+", default=-1),
)

FETCH_PARTITION = Struct(
    F("partition", INT32),
    F("current_leader_epoch", INT32, versions="9+", default=-1),
    F("fetch_offset", INT64),
    F("last_fetched_epoch", INT32, versions="12+", default=-1),
    F("log_start_offset", INT64, versions="5+", default=-1),
    F("partition_max_bytes", INT32),
    F("replica_directory_id", UUID, versions="17+", tag=0, tagged="17+"),
    F("high_watermark", INT64, versions="18+", tag=1, tagged="18+", default=INT64_MAX),
)

FETCH_TOPIC = Struct(
    F("topic", STRING, versions="0-12"),
    F("topic_id", UUID, versions="13+"),
    F("partitions", Array(FETCH_PARTITION)),
)

FORGOTTEN_TOPIC = Struct(
    F("topic", STRING, versions="7-12"),
    F("topic_id", UUID, versions="13+"),
    F("partitions", Array(INT32), versions="7+"),
)

EPOCH_END_OFFSET = Struct(
    F("epoch", INT32, versions="12+", default=-1),
    F("end_offset", INT64, versions="12+", default=-1),
)

LEADER_ID_AND_EPOCH = Struct(
    F("leader_id", INT32, versions="12+", default=-1),
    F("leader_epoch", INT32, versions="12+", default=-1),
)

SNAPSHOT_ID = Struct(
    F("end_offset", INT64, default=-1),
    F("epoch", INT32, default=-1),
)

ABORTED_TRANSACTION = Struct(
    F("producer_id", INT64, versions="4+"),
    F("first_offset", INT64, versions="4+"),
)

PARTITION_DATA = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("high_watermark", INT64),
    F("last_stable_offset", INT64, versions="4+", default=-1),
    F("log_start_offset", INT64, versions="5+", default=-1),
    F("diverging_epoch", EPOCH_END_OFFSET, versions="12+", tag=0, tagged="12+"),
    F("current_leader", LEADER_ID_AND_EPOCH, versions="12+", tag=1, tagged="12+"),
    F("snapshot_id", SNAPSHOT_ID, versions="12+", tag=2, tagged="12+"),
    F("aborted_transactions", Array(ABORTED_TRANSACTION), versions="4+", nullable="4+", default=()),
    F("preferred_read_replica", INT32, versions="11+", default=-1),
    F("records", RECORDS, nullable="0+"),
)

FETCHABLE_TOPIC_RESPONSE = Struct(
    F("topic", STRING, versions="0-12"),
    F("topic_id", UUID, versions="13+"),
    F("partitions", Array(PARTITION_DATA)),
)

NODE_ENDPOINT = Struct(
    F("node_id", INT32, versions="16+"),
    F("host", STRING, versions="16+"),
    F("port", INT32, versions="16+"),
    F("rack", STRING, versions="16+", nullable="16+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.FETCH,
    name="Fetch",
    valid="4-18",
    flexible="12+",
    request=(
        F("cluster_id", STRING, versions="12+", nullable="12+", tag=0, tagged="12+"),
        F("replica_id", INT32, versions="0-14", default=-1),
        F("replica_state", REPLICA_STATE, versions="15+", tag=1, tagged="15+"),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, versions="3+", default=2**31 - 1),
        F("isolation_level", INT8, versions="4+", default=0),
        F("session_id", INT32, versions="7+", default=0),
        F("session_epoch", INT32, versions="7+", default=-1),
        F("topics", Array(FETCH_TOPIC)),
        F("forgotten_topics_data", Array(FORGOTTEN_TOPIC), versions="7+"),
        F("rack_id", STRING, versions="11+", default=""),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("error_code", INT16, versions="7+"),
        F("session_id", INT32, versions="7+", default=0),
        F("responses", Array(FETCHABLE_TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT), versions="16+", tag=0, tagged="16+"),
    ),
)
