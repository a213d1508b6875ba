"""The consumer protocol (protocol type ``consumer``): subscription and assignment bytes.

Classic-group members of protocol type ``consumer`` put a *subscription* in JoinGroup's protocol
metadata and the leader hands each member an *assignment* through SyncGroup. The broker treats
both as opaque bytes, except that it reads the subscribed topics (for DescribeGroups and offset
expiry); clients and tools read both. Each is an int16 version followed by the struct of that
version; no version is flexible.

* Subscription: the topics and optional user data; v1 adds the partitions the member owns
  (cooperative rebalancing), v2 the generation those were owned in, v3 the member's rack.
* Assignment: per topic the assigned partitions, and optional user data. v1-v3 change nothing on
  the wire; the version moves in step with the subscription's.

A reader meeting a version newer than it knows reads it with the newest format it knows and
ignores the bytes after it: later versions may only append fields.
"""

from zurau.protocol.schema import BYTES, INT32, NULL, STRING, Array, DataSchema, F, Struct

SUBSCRIPTION = DataSchema(
    name="ConsumerProtocolSubscription",
    valid="0-3",
    flexible="none",
    fields=(
        F("topics", Array(STRING)),
        F("user_data", BYTES, nullable="0+"),
        F(
            "owned_partitions",
            Array(Struct(F("topic", STRING, versions="1+"), F("partitions", Array(INT32), versions="1+"))),
            versions="1+",
        ),
        F("generation_id", INT32, versions="2+", default=-1),
        F("rack_id", STRING, versions="3+", nullable="3+", default=NULL),
    ),
)

ASSIGNMENT = DataSchema(
    name="ConsumerProtocolAssignment",
    valid="0-3",
    flexible="none",
    fields=(
        F("assigned_partitions", Array(Struct(F("topic", STRING), F("partitions", Array(INT32))))),
        F("user_data", BYTES, nullable="0+"),
    ),
)
