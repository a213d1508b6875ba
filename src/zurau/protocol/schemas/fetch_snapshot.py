"""FetchSnapshot (key 59): a KRaft replica downloads a snapshot of the metadata log in chunks.

Part of KIP-630. Flexible from its first version. A follower whose fetch offset is below the
leader's log start offset is told (in its Fetch response) which snapshot to fetch; it then asks
for that snapshot id from ``position`` on and the leader returns up to ``max_bytes`` of it, not
necessarily aligned to record batches, with the snapshot's total size.

v1 (KIP-853) adds the tagged directory id of the requesting replica and tagged endpoints of the
leaders named in the response.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import (
    INT16,
    INT32,
    INT64,
    NULL,
    RECORDS,
    STRING,
    UUID,
    ApiSchema,
    Array,
    F,
    Struct,
)
from zurau.protocol.schemas._raft_common import NODE_ENDPOINT

SNAPSHOT_ID = Struct(
    F("end_offset", INT64),
    F("epoch", INT32),
)

PARTITION = Struct(
    F("partition", INT32),
    F("current_leader_epoch", INT32),
    F("snapshot_id", SNAPSHOT_ID),
    F("position", INT64),  # the byte position in the snapshot to read from
    F("replica_directory_id", UUID, versions="1+", tag=0, tagged="1+"),
)

TOPIC = Struct(
    F("name", STRING),
    F("partitions", Array(PARTITION)),
)

LEADER_ID_AND_EPOCH = Struct(
    F("leader_id", INT32),
    F("leader_epoch", INT32),
)

PARTITION_RESPONSE = Struct(
    F("index", INT32),
    F("error_code", INT16),
    F("snapshot_id", SNAPSHOT_ID),
    F("current_leader", LEADER_ID_AND_EPOCH, tag=0, tagged="0+"),
    F("size", INT64),  # the snapshot's total size in bytes
    F("position", INT64),  # where in the snapshot ``unaligned_records`` starts
    F("unaligned_records", RECORDS),
)

TOPIC_RESPONSE = Struct(
    F("name", STRING),
    F("partitions", Array(PARTITION_RESPONSE)),
)

SCHEMA = ApiSchema(
    key=ApiKey.FETCH_SNAPSHOT,
    name="FetchSnapshot",
    valid="0-1",
    flexible="0+",
    request=(
        F("cluster_id", STRING, nullable="0+", tag=0, tagged="0+", default=NULL),
        F("replica_id", INT32, default=-1),
        F("max_bytes", INT32, default=2**31 - 1),
        F("topics", Array(TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("topics", Array(TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT), versions="1+", tag=0, tagged="1+"),
    ),
)
