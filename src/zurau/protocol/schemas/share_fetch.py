"""ShareFetch (key 78): a share-group member fetches records it acquires for a time-limited lock,
and piggybacks acknowledgements of records it was delivered earlier.

Kafka 4.2 serves v1-v2 (v0 was the early-access version of Kafka 4.0, removed in 4.1); so does
Zurau's schema. librdkafka 2.15+ sends v1. Every version is flexible.

* A share session (KIP-932) works like an incremental fetch session, keyed by group and member:
  ``share_session_epoch`` 0 opens it (the topics listed are the session's partitions), -1 closes
  it (acknowledgements only, no fetching), and any other value must be the next epoch; each
  request then adds ``topics`` and removes ``forgotten_topics_data``.
* A partition is listed with its ``acknowledgement_batches`` (possibly empty). A batch covers
  ``first_offset..last_offset`` (inclusive); ``acknowledge_types`` holds either one type for the
  whole batch or one per offset (:class:`zurau.protocol.share_states.AcknowledgeType` ids;
  v2 adds 4, Renew: extend the lock without settling the record, flagged by ``is_renew_ack``).
* ``max_records`` bounds the records acquired (batch boundaries may exceed it) and
  ``batch_size`` is the preferred size of acquired batches; ``max_records`` 0 means
  "acknowledge only". v2's ``share_acquire_mode`` is 0 batch-optimized or 1 record-limit
  (KIP-1206).
* The response gives per partition a fetch error and, separately, an acknowledgement error,
  the records, and ``acquired_records``: the offset ranges handed to this member with their
  delivery count; ``acquisition_lock_timeout_ms`` says how long the lock lasts.
* ``node_endpoints`` lists the current leaders of partitions answered NOT_LEADER_OR_FOLLOWER.

Kafka's v0-only ``PartitionMaxBytes`` is left out: no version Kafka 4.1+ serves has it.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import (
    BOOL,
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

# A range of offsets acknowledged with one type, or with one type per offset.
ACKNOWLEDGEMENT_BATCH = Struct(
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("acknowledge_types", Array(INT8)),
)

FETCH_PARTITION = Struct(
    F("partition_index", INT32),
    F("acknowledgement_batches", Array(ACKNOWLEDGEMENT_BATCH)),
)

FETCH_TOPIC = Struct(
    F("topic_id", UUID),
    F("partitions", Array(FETCH_PARTITION)),
)

FORGOTTEN_TOPIC = Struct(
    F("topic_id", UUID),
    F("partitions", Array(INT32)),
)

LEADER_ID_AND_EPOCH = Struct(
    F("leader_id", INT32),
    F("leader_epoch", INT32),
)

ACQUIRED_RECORDS = Struct(
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("delivery_count", INT16),
)

PARTITION_DATA = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    F("acknowledge_error_code", INT16),
    F("acknowledge_error_message", STRING, nullable="0+"),  # Kafka's default: null
    F("current_leader", LEADER_ID_AND_EPOCH),
    # Kafka 4.1+: nullable only in v0 (early access); v1+ partitions always carry records, empty
    # when none (an ack-only or error partition), and librdkafka rejects a null here.
    F("records", RECORDS, nullable="0"),
    F("acquired_records", Array(ACQUIRED_RECORDS)),
)

TOPIC_RESPONSE = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

NODE_ENDPOINT = Struct(
    F("node_id", INT32),
    F("host", STRING),
    F("port", INT32),
    F("rack", STRING, nullable="0+"),  # Kafka's default: null
)

SCHEMA = ApiSchema(
    key=ApiKey.SHARE_FETCH,
    name="ShareFetch",
    valid="1-2",
    flexible="0+",
    request=(
        F("group_id", STRING, nullable="0+"),  # Kafka's default: null
        F("member_id", STRING, nullable="0+", default=""),
        F("share_session_epoch", INT32),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, default=2**31 - 1),
        F("max_records", INT32, versions="1+"),
        F("batch_size", INT32, versions="1+"),
        F("share_acquire_mode", INT8, versions="2+", default=0),
        F("is_renew_ack", BOOL, versions="2+", default=False),
        F("topics", Array(FETCH_TOPIC)),
        F("forgotten_topics_data", Array(FORGOTTEN_TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),  # Kafka's default: null
        F("acquisition_lock_timeout_ms", INT32),
        F("responses", Array(TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT)),
    ),
)
