"""KIP-848 consumer-group records of ``__consumer_offsets`` (Kafka's ConsumerGroup* records).

Keys (never flexible), by key version::

    3  ConsumerGroupMetadataKey                 group_id
    4  ConsumerGroupPartitionMetadataKey        group_id              (read and ignored)
    5  ConsumerGroupMemberMetadataKey           group_id, member_id
    6  ConsumerGroupTargetAssignmentMetadataKey group_id
    7  ConsumerGroupTargetAssignmentMemberKey   group_id, member_id
    8  ConsumerGroupCurrentMemberAssignmentKey  group_id, member_id

Values (value version 0, flexible):

* 3 ``epoch`` int32 (the group epoch); tagged ``metadata_hash`` int64 (tag 0, hash of the
  subscribed topics' ids and partition counts) and ``creation_time_ms`` int64 (tag 1).
* 5 ``instance_id``?, ``rack_id``?, ``client_id``, ``client_host``, ``subscribed_topic_names``
  [string], ``subscribed_topic_regex``?, ``rebalance_timeout_ms`` int32, ``server_assignor``?;
  tagged ``classic_member_metadata`` (tag 0, not used by Zurau).
* 6 ``assignment_epoch`` int32 (the group epoch the target assignment was computed for).
* 7 ``topic_partitions`` [{topic_id uuid, partitions [int32]}]: the member's target assignment.
* 8 ``member_epoch`` int32, ``previous_member_epoch`` int32, ``state`` int8 (0 STABLE,
  1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS), ``assigned_partitions`` and
  ``partitions_pending_revocation`` [{topic_id, partitions}].

Tombstones: removing a member writes tombstones for 8, 7 and 5 (in that order) and a new group
epoch (3); deleting a group writes tombstones for 6, 4 and 3.
"""

from __future__ import annotations

from zurau.protocol.schema import BYTES, INT8, INT32, INT64, STRING, UUID, Array, F, Struct

GROUP_KEY = (F("group_id", STRING),)
MEMBER_KEY = (F("group_id", STRING), F("member_id", STRING))

TOPIC_PARTITIONS = Struct(
    F("topic_id", UUID),
    F("partitions", Array(INT32)),
)

GROUP_METADATA_VALUE = (
    F("epoch", INT32),
    F("metadata_hash", INT64, tag=0, tagged="0+", default=0),
    F("creation_time_ms", INT64, tag=1, tagged="0+", default=-1),
)

PARTITION_METADATA_VALUE = (
    F(
        "topics",
        Array(
            Struct(
                F("topic_id", UUID),
                F("topic_name", STRING),
                F("num_partitions", INT32),
            )
        ),
    ),
)

CLASSIC_MEMBER_METADATA = Struct(
    F("supported_protocols", Array(Struct(F("name", STRING), F("metadata", BYTES)))),
)

MEMBER_METADATA_VALUE = (
    F("instance_id", STRING, nullable="0+"),
    F("rack_id", STRING, nullable="0+"),
    F("client_id", STRING),
    F("client_host", STRING),
    F("subscribed_topic_names", Array(STRING)),
    F("subscribed_topic_regex", STRING, nullable="0+"),
    F("rebalance_timeout_ms", INT32, default=-1),
    F("server_assignor", STRING, nullable="0+"),
    F("classic_member_metadata", CLASSIC_MEMBER_METADATA, nullable="0+", tag=0, tagged="0+"),
)

TARGET_ASSIGNMENT_METADATA_VALUE = (F("assignment_epoch", INT32),)

TARGET_ASSIGNMENT_MEMBER_VALUE = (F("topic_partitions", Array(TOPIC_PARTITIONS)),)

CURRENT_MEMBER_ASSIGNMENT_VALUE = (
    F("member_epoch", INT32),
    F("previous_member_epoch", INT32),
    F("state", INT8),
    F("assigned_partitions", Array(TOPIC_PARTITIONS)),
    F("partitions_pending_revocation", Array(TOPIC_PARTITIONS)),
)
