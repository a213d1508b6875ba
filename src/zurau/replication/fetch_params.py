"""One Fetch request, parsed once (Kafka's ``FetchParams`` and ``FetchRequest.PartitionData``).

The Fetch handler builds a :class:`FetchParams` from the decoded request before anything is read;
the replica manager's :meth:`~zurau.replication.replica_manager.ReplicaManager.fetch` (the reads,
the idle fast path and the long poll) and the fetch-session code take it from there, so no one
looks at the request's ``replica_id`` / ``replica_state`` / ``max_bytes`` encoding again.

* The fetcher: a follower replica (``replica_id`` >= 0: v0-14 ``replica_id``, v15+ the tagged
  ``replica_state``, which also carries its broker epoch) or a consumer (-1).
* ``max_bytes`` is the request's limit (0 or less: none) capped by the broker's
  ``fetch.max.bytes``; ``min_bytes`` is at least 1, ``max_wait_ms`` at least 0.
* ``isolation_level``: 1 is read_committed, which a follower never is (:attr:`read_committed`).
* ``client_metadata`` (KIP-392): set for a consumer's Fetch v11+ (its rack), which may be sent to
  a preferred read replica and may read from a follower.
* Per-partition fetch info stays in the request's decoded form
  (:class:`~zurau.protocol.messages.FetchRequestTopicsPartitions`: ``partition``,
  ``fetch_offset``, ``partition_max_bytes``, ``current_leader_epoch``, ``last_fetched_epoch``,
  ``log_start_offset``), grouped in :class:`FetchTopic` s once the handler has resolved (and
  authorised) each topic; a fetch-session partition hands in the same form.

Invariant: a :class:`FetchParams` is immutable; the topics a fetch reads may change between two
reads of one long poll (an incremental fetch session re-plans), its parameters never do.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import NamedTuple

from zurau.metadata.image import TopicImage
from zurau.protocol.errors import KafkaError
from zurau.protocol.messages import FetchRequest, FetchRequestTopicsPartitions

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1
#: The response size limit when the request sets none (``max_bytes`` <= 0).
NO_LIMIT = 2**31 - 1

#: One partition's fetch info, as decoded (see the module docstring).
PartitionFetch = FetchRequestTopicsPartitions


class ClientMetadata(NamedTuple):
    """What KIP-392's replica selector knows of a consumer (Kafka's ``ClientMetadata``)."""

    rack_id: str


class FetchTopic(NamedTuple):
    """One topic of a fetch as the handler planned it: the name and id it was asked by, the
    topic it resolved to (None, with ``error`` set, when it did not or was not authorised), and
    the partitions to read."""

    name: str | None
    topic_id: uuid.UUID | None
    error: KafkaError | None
    topic: TopicImage | None
    partitions: list[PartitionFetch]


def replica_id_of(req: FetchRequest) -> int:
    """The fetching replica's broker id (-1 for a consumer): v0-14 ``replica_id``, v15+ the
    tagged ``replica_state``."""
    state = req.get("replica_state")  # decoded with its default (-1) below v15
    if state and state.get("replica_id", -1) >= 0:
        return int(state["replica_id"])
    return int(req.get("replica_id", -1))


@dataclass(frozen=True, slots=True)
class FetchParams:
    """A Fetch request's parameters (see the module docstring)."""

    version: int
    replica_id: int
    replica_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    client_metadata: ClientMetadata | None
    #: No fetch session filters the answer per partition afterwards, so an idle partition may be
    #: answered with precomputed bytes (:mod:`zurau.replication.idle_fetch`).
    sessionless: bool = True

    @classmethod
    def from_request(
        cls, req: FetchRequest, version: int, *, fetch_max_bytes: int, sessionless: bool = True
    ) -> FetchParams:
        """Parse a decoded Fetch request (``fetch_max_bytes``: the broker's ``fetch.max.bytes``)."""
        replica_id = replica_id_of(req)
        state = req.get("replica_state")
        max_bytes = req.get("max_bytes", NO_LIMIT)
        if max_bytes <= 0:
            max_bytes = NO_LIMIT
        consumer = replica_id < 0
        return cls(
            version=version,
            replica_id=replica_id,
            replica_epoch=int(state.get("replica_epoch", -1)) if state else -1,
            max_wait_ms=max(req.get("max_wait_ms", 0), 0),
            min_bytes=max(req.get("min_bytes", 1), 1),
            max_bytes=min(max_bytes, fetch_max_bytes),
            isolation_level=req.get("isolation_level", READ_UNCOMMITTED),
            client_metadata=ClientMetadata(req.get("rack_id") or "") if consumer and version >= 11 else None,
            sessionless=sessionless,
        )

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def read_committed(self) -> bool:
        """A consumer reading committed data only (a follower reads up to the log end)."""
        return self.isolation_level == READ_COMMITTED and self.replica_id < 0
