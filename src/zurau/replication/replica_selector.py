"""Which replica a consumer should fetch from (KIP-392, Kafka's ``replica.selector.class``).

A leader answering a consumer's fetch (Fetch v11+, which carries the consumer's ``client.rack``)
may name a *preferred read replica*; the consumer then fetches that partition from it until it
errs or its metadata changes. The candidates are the leader and the live followers that hold
the fetch offset (their log end offset, as the leader last learned it, is at or past it). The
leader itself is never named: "read from me" is the absence of a preferred replica.

* :data:`RACK_AWARE` (``org.apache.kafka.common.replica.RackAwareReplicaSelector``): a consumer
  with a rack reads from a replica in that rack: the leader if it is there, else the most
  caught-up such follower (highest log end offset, then most recently caught up). No rack, or no
  replica in it: the leader.
* :data:`LEADER` (``org.apache.kafka.common.replica.LeaderReplicaSelector``): always the leader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER = "org.apache.kafka.common.replica.LeaderReplicaSelector"
SELECTORS = (RACK_AWARE, LEADER)


class ReplicaView(NamedTuple):
    """A candidate replica as the leader sees it."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int
    is_leader: bool


# (candidates, the consumer's rack or "") -> the chosen broker id, or -1 for none
ReplicaSelector = Callable[[list[ReplicaView], str], int]


def rack_aware(replicas: list[ReplicaView], client_rack: str) -> int:
    leader = next((r for r in replicas if r.is_leader), None)
    fallback = leader.broker_id if leader is not None else -1
    if not client_rack:
        return fallback
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack:
        return fallback
    if leader is not None and leader in same_rack:
        return leader.broker_id
    best = max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms, -r.broker_id))
    return best.broker_id


def leader_only(replicas: list[ReplicaView], client_rack: str) -> int:
    return next((r.broker_id for r in replicas if r.is_leader), -1)


def selector_for(class_name: str | None) -> ReplicaSelector | None:
    """The selector named by ``replica.selector.class`` (None when unset)."""
    if not class_name:
        return None
    if class_name == RACK_AWARE:
        return rack_aware
    if class_name == LEADER:
        return leader_only
    raise ValueError(f"unknown replica.selector.class {class_name!r} (known: {', '.join(SELECTORS)})")


__all__ = ["LEADER", "RACK_AWARE", "SELECTORS", "ReplicaSelector", "ReplicaView", "leader_only", "rack_aware", "selector_for"]
