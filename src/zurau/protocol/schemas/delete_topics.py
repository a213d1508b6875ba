"""DeleteTopics (key 20): delete topics by name or, from v6, by topic id.

Kafka 4.x serves v1-v6, and so does Zurau (clients ask for v3, v4 or v6).

* v4 is the first flexible version.
* v5 adds a per-topic error message and may answer THROTTLING_QUOTA_EXCEEDED.
* v6 replaces the plain list of names with a list of (name, topic id) pairs in which either may be
  given; the response then carries the topic id and its name may be null.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

# v6+: a topic to delete, named by name or by id.
TOPIC_STATE = Struct(
    F("name", STRING, versions="6+", nullable="6+"),  # Kafka default: null
    F("topic_id", UUID, versions="6+"),
)

TOPIC_RESULT = Struct(
    F("name", STRING, nullable="6+"),
    F("topic_id", UUID, versions="6+"),
    F("error_code", INT16),
    F("error_message", STRING, versions="5+", nullable="5+"),  # Kafka default: null
)

SCHEMA = ApiSchema(
    key=ApiKey.DELETE_TOPICS,
    name="DeleteTopics",
    valid="1-6",
    flexible="4+",
    request=(
        F("topics", Array(TOPIC_STATE), versions="6+"),
        F("topic_names", Array(STRING), versions="0-5"),
        F("timeout_ms", INT32),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="1+"),
        F("responses", Array(TOPIC_RESULT)),
    ),
)
