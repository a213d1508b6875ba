"""ShareAcknowledge (key 79): a share-group member acknowledges records without fetching more.

Kafka 4.2 serves v1-v2 (v0 was the early-access version of Kafka 4.0, removed in 4.1); so does
Zurau's schema. librdkafka 2.15+ sends v1. Every version is flexible.

* The request belongs to the member's share session (see :mod:`.share_fetch`): epoch -1
  acknowledges and closes the session; 0 is refused (only ShareFetch opens a session).
* Acknowledgement batches are those of ShareFetch: ``first_offset..last_offset`` (inclusive)
  with one :class:`zurau.protocol.share_states.AcknowledgeType` for the batch or one per offset.
* v2 (KIP-1222): ``is_renew_ack`` flags Renew (4) acknowledgements, which extend the lock of
  acquired records; the response then carries ``acquisition_lock_timeout_ms``.
* ``node_endpoints`` lists the current leaders of partitions answered NOT_LEADER_OR_FOLLOWER.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas.share_fetch import ACKNOWLEDGEMENT_BATCH, LEADER_ID_AND_EPOCH, NODE_ENDPOINT

ACKNOWLEDGE_PARTITION = Struct(
    F("partition_index", INT32),
    F("acknowledgement_batches", Array(ACKNOWLEDGEMENT_BATCH)),
)

ACKNOWLEDGE_TOPIC = Struct(
    F("topic_id", UUID),
    F("partitions", Array(ACKNOWLEDGE_PARTITION)),
)

PARTITION_DATA = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    F("current_leader", LEADER_ID_AND_EPOCH),
)

TOPIC_RESPONSE = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

SCHEMA = ApiSchema(
    key=ApiKey.SHARE_ACKNOWLEDGE,
    name="ShareAcknowledge",
    valid="1-2",
    flexible="0+",
    request=(
        F("group_id", STRING, nullable="0+"),  # Kafka's default: null
        F("member_id", STRING, nullable="0+", default=""),
        F("share_session_epoch", INT32),
        F("is_renew_ack", BOOL, versions="2+", default=False),
        F("topics", Array(ACKNOWLEDGE_TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),  # Kafka's default: null
        F("acquisition_lock_timeout_ms", INT32, versions="2+"),
        F("responses", Array(TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT)),
    ),
)
