"""Classic-group metadata records of ``__consumer_offsets`` (GroupMetadataKey / GroupMetadataValue).

Key (key version 2)::

    group  string  the group id

Value (value versions 0-4; flexible from 4; Zurau writes 3), a checkpoint of the group as of the
last stored generation::

    protocol_type            string     v0+  e.g. "consumer"; "" for a group with no protocol
    generation               int32      v0+  the generation id
    protocol                 string?    v0+  the selected assignment protocol (null when Empty)
    leader                   string?    v0+  the leader's member id (null when Empty)
    current_state_timestamp  int64      v2+  when the group entered its current state (ms), -1
    members                  [member]   v0+
        member_id            string     v0+
        group_instance_id    string?    v3+  static membership id (null: dynamic member)
        client_id            string     v0+
        client_host          string     v0+
        rebalance_timeout    int32      v1+  ms
        session_timeout      int32      v0+  ms
        subscription         bytes      v0+  the member's metadata for the selected protocol
        assignment           bytes      v0+  the leader's assignment for the member

Written when the leader's assignment is stored (SyncGroup), when a group becomes Empty, and when a
static member is replaced; a tombstone deletes the group. On load a group with members is Stable,
one without is Empty.
"""

from __future__ import annotations

from zurau.protocol.schema import BYTES, INT32, INT64, STRING, Array, F, Struct

KEY = (F("group", STRING),)

MEMBER = Struct(
    F("member_id", STRING),
    F("group_instance_id", STRING, versions="3+", nullable="3+"),
    F("client_id", STRING),
    F("client_host", STRING),
    F("rebalance_timeout", INT32, versions="1+"),
    F("session_timeout", INT32),
    F("subscription", BYTES),
    F("assignment", BYTES),
)

VALUE = (
    F("protocol_type", STRING),
    F("generation", INT32),
    F("protocol", STRING, nullable="0+"),
    F("leader", STRING, nullable="0+"),
    F("current_state_timestamp", INT64, versions="2+", default=-1),
    F("members", Array(MEMBER)),
)

KEY_VERSION = 2
VALUE_VERSION = 3
