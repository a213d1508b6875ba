"""Translation between the Raft core's message dataclasses (:mod:`zurau.raft.messages`) and the
bodies of Kafka's own KRaft APIs -- Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot
and DescribeQuorum -- so that quorum members talk the APIs, versions and field layout Kafka's
controllers use (KIP-595, KIP-630 snapshots, KIP-853 dynamic-quorum fields, KIP-996 pre-vote).

A body is the plain ``dict`` that :mod:`zurau.protocol.codec` encodes and decodes. This module does
no I/O and keeps no state: the shell frames and sends what it builds, and hands back what it decodes.

Invariants:

* Every request and response concerns exactly one partition: ``__cluster_metadata`` partition 0,
  named by topic id (``METADATA_TOPIC_ID``, Kafka's ``Uuid(0, 1)``) where Fetch uses ids (v13+),
  by name elsewhere (FetchSnapshot names it in ``name``). A request of any other shape -- not exactly one topic and one partition, a
  wrong topic name or id, a partition other than 0, a negative sender id, a negative fetch offset,
  a Fetch older than v12 (which cannot carry the last fetched epoch) -- raises
  :class:`~zurau.protocol.errors.InvalidRequestError`; so does a response of a wrong shape.
* Bodies are built with every key that the message has in *some* version, so one body encodes at
  any version the schema supports (the codec drops the fields a version lacks) and survives the
  codec's strict mode. What a version cannot express is lost on purpose: pre-vote below Vote v2.
* What a wire response does not echo comes from the request it answers: Fetch's fetch offset and
  last fetched epoch, Vote's pre-vote flag, and for a top-level FetchSnapshot error its snapshot id
  and position (:func:`response_from_wire`).
* A top-level error code (e.g. INCONSISTENT_CLUSTER_ID) becomes a response with that error code,
  leader ``NO_LEADER`` and epoch -1, which the node ignores as far as elections go; partition-level
  errors carry the responder's leader and epoch as usual.
* Fetch responses carry the entries as Kafka v2 record batches (:mod:`zurau.raft.batches`); batch
  boundaries follow ``Entry.last_in_batch``. A missing diverging epoch or snapshot id is
  ``{-1, -1}`` on the wire; one with only half of it set is refused.
* FetchSnapshot chunks travel in ``unaligned_records`` as opaque bytes (not parsed as batches);
  snapshot ids, positions and sizes pass through unchecked -- the leader answers an unknown id or a
  bad position with SNAPSHOT_NOT_FOUND / POSITION_OUT_OF_RANGE itself.
* Checking the cluster id is the caller's job: :attr:`DecodedRequest.cluster_id` is what the peer
  sent (None when it sent none), :meth:`DecodedRequest.cluster_id_matches` applies Kafka's rule.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from zurau.protocol import errors
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import (
    DescribeQuorumResponse,
    DescribeQuorumResponseNodes,
    DescribeQuorumResponseTopics,
    DescribeQuorumResponseTopicsPartitions,
    DescribeQuorumResponseTopicsPartitionsCurrentVoters,
)
from zurau.raft.batches import decode_entries, encode_entries
from zurau.raft.messages import (
    NO_DIRECTORY,
    NO_LEADER,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from zurau.raft.node import QuorumInfo, ReplicaInfo

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid(0, 1), the metadata topic's fixed id
METADATA_PARTITION = 0

# The versions we send: the highest our schemas define.
VOTE_VERSION = 2  # v2: pre_vote (KIP-996)
BEGIN_QUORUM_EPOCH_VERSION = 1
END_QUORUM_EPOCH_VERSION = 1
FETCH_VERSION = 18  # topic ids from v13, replica_state from v15
FETCH_SNAPSHOT_VERSION = 1  # v1: tagged replica directory id and leader endpoints (KIP-853)
DESCRIBE_QUORUM_VERSION = 2

MIN_FETCH_VERSION = 12
"""The oldest Fetch that can carry a Raft fetch (last fetched epoch, diverging epoch, leader)."""

DEFAULT_FETCH_MAX_WAIT_MS = 500
DEFAULT_FETCH_MAX_BYTES = 8 * 1024 * 1024

INCONSISTENT_CLUSTER_ID = errors.InconsistentClusterIdError.code

NO_EPOCH = -1
_NO_DIVERGENCE = {"epoch": -1, "end_offset": -1}
_NO_SNAPSHOT = {"end_offset": -1, "epoch": -1}

Listener = tuple[str, str, int]
"""A named listener endpoint: (listener name, host, port)."""

_NO_LISTENERS: Mapping[int, Sequence[Listener]] = MappingProxyType({})

RAFT_API_KEYS = (
    ApiKey.VOTE,
    ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH,
    ApiKey.FETCH,
    ApiKey.FETCH_SNAPSHOT,
)

_API_OF_REQUEST: dict[type, ApiKey] = {
    VoteRequest: ApiKey.VOTE,
    BeginQuorumEpochRequest: ApiKey.BEGIN_QUORUM_EPOCH,
    EndQuorumEpochRequest: ApiKey.END_QUORUM_EPOCH,
    FetchRequest: ApiKey.FETCH,
    FetchSnapshotRequest: ApiKey.FETCH_SNAPSHOT,
}
_API_OF_RESPONSE: dict[type, ApiKey] = {
    VoteResponse: ApiKey.VOTE,
    BeginQuorumEpochResponse: ApiKey.BEGIN_QUORUM_EPOCH,
    EndQuorumEpochResponse: ApiKey.END_QUORUM_EPOCH,
    FetchResponse: ApiKey.FETCH,
    FetchSnapshotResponse: ApiKey.FETCH_SNAPSHOT,
}


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A Raft request read off the wire. ``source`` is the sender's replica id (the candidate of a
    Vote, the leader of Begin/EndQuorumEpoch, the fetching replica of a Fetch); ``max_wait_ms`` is
    Fetch's long-poll bound (0 for the other APIs); ``destination`` is the voter id the sender
    addressed (Vote/BeginQuorumEpoch v1+), -1 when the wire does not say."""

    cluster_id: str | None
    source: int
    message: RaftRequest
    max_wait_ms: int = 0
    destination: int = -1
    # The directory id the sender believes the addressed voter has (Vote/BeginQuorumEpoch v1+);
    # NO_DIRECTORY when it does not say.
    destination_directory: uuid.UUID = NO_DIRECTORY

    def cluster_id_matches(self, cluster_id: str) -> bool:
        """Kafka's rule: a request without a cluster id is accepted, else it must be ours."""
        return self.cluster_id is None or self.cluster_id == cluster_id


def _invalid(message: str) -> errors.KafkaError:
    return errors.InvalidRequestError(message)


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


def _listeners(listeners: Sequence[Listener]) -> list[dict[str, Any]]:
    return [{"name": name, "host": host, "port": port} for name, host, port in listeners]


def _topic(partition: dict[str, Any]) -> dict[str, Any]:
    """The one-topic list element of Vote/BeginQuorumEpoch/EndQuorumEpoch/DescribeQuorum."""
    return {"topic_name": METADATA_TOPIC, "partitions": [partition]}


def _fetch_topic(partition: dict[str, Any], *, partitions_key: str = "partitions") -> dict[str, Any]:
    """Fetch names the topic by name up to v12 and by id from v13; carry both."""
    return {"topic": METADATA_TOPIC, "topic_id": METADATA_TOPIC_ID, partitions_key: [partition]}


def _only_partition(
    topics: Sequence[dict[str, Any]],
    what: str,
    *,
    by_id: bool = False,
    name_key: str = "topic_name",
    index_key: str = "partition_index",
) -> dict[str, Any]:
    """The single ``__cluster_metadata``-0 partition of a body, or InvalidRequestError."""
    if len(topics) != 1:
        raise _invalid(f"{what}: expected exactly one topic ({METADATA_TOPIC}), got {len(topics)}")
    topic = topics[0]
    if by_id:
        if topic["topic_id"] != METADATA_TOPIC_ID:
            raise _invalid(
                f"{what}: topic id {topic['topic_id']} is not {METADATA_TOPIC}'s ({METADATA_TOPIC_ID})"
            )
    elif topic[name_key] != METADATA_TOPIC:
        raise _invalid(f"{what}: topic {topic[name_key]!r} is not {METADATA_TOPIC}")
    partitions = topic["partitions"]
    if len(partitions) != 1:
        raise _invalid(f"{what}: expected exactly one partition, got {len(partitions)}")
    partition: dict[str, Any] = partitions[0]
    if partition[index_key] != METADATA_PARTITION:
        raise _invalid(f"{what}: partition {partition[index_key]} is not {METADATA_PARTITION}")
    return partition


def _snapshot_id_to_wire(snapshot: OffsetAndEpoch) -> dict[str, Any]:
    return {"end_offset": snapshot.offset, "epoch": snapshot.epoch}


def _snapshot_id_from_wire(wire: Mapping[str, Any], what: str) -> OffsetAndEpoch | None:
    """A Fetch response's snapshot id: None for {-1, -1}; a half-set one is malformed."""
    end_offset, epoch = wire["end_offset"], wire["epoch"]
    if end_offset == -1 and epoch == -1:
        return None
    if end_offset < 0 or epoch < 0:
        raise _invalid(f"{what}: snapshot id with end offset {end_offset} and epoch {epoch}")
    return OffsetAndEpoch(end_offset, epoch)


def _check_fetch_version(version: int) -> None:
    if version < MIN_FETCH_VERSION:
        raise _invalid(
            f"Fetch v{version} cannot carry a Raft fetch (needs v{MIN_FETCH_VERSION}+ for the last fetched epoch)"
        )


# --------------------------------------------------------------------------- requests


def request_to_wire(
    msg: RaftRequest,
    cluster_id: str,
    *,
    destination: int = -1,
    fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS,
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    listeners: Sequence[Listener] = (),
    destination_directory: uuid.UUID = NO_DIRECTORY,
    source_directory: uuid.UUID = NO_DIRECTORY,
) -> tuple[ApiKey, int, dict[str, Any]]:
    """(api key, version, body) of ``msg``, sent by a member of cluster ``cluster_id``.

    ``destination`` is the voter addressed (Vote's and BeginQuorumEpoch's ``voter_id``) and
    ``destination_directory`` its directory id as the sender's voter set knows it (KIP-853, v1+);
    ``source_directory`` is the candidate's own (Vote v1+); ``listeners`` are the sending leader's
    endpoints (BeginQuorumEpoch/EndQuorumEpoch v1)."""
    partition: dict[str, Any]
    body: dict[str, Any]
    if isinstance(msg, VoteRequest):
        partition = {
            "partition_index": METADATA_PARTITION,
            "replica_epoch": msg.candidate_epoch,
            "replica_id": msg.candidate_id,
            "last_offset_epoch": msg.last_offset_epoch,
            "last_offset": msg.last_offset,
            "pre_vote": msg.pre_vote,
            "replica_directory_id": source_directory,
            "voter_directory_id": destination_directory,
        }
        body = {"cluster_id": cluster_id, "voter_id": destination, "topics": [_topic(partition)]}
        return ApiKey.VOTE, VOTE_VERSION, body
    if isinstance(msg, BeginQuorumEpochRequest):
        partition = {
            "partition_index": METADATA_PARTITION,
            "leader_id": msg.leader_id,
            "leader_epoch": msg.leader_epoch,
            "voter_directory_id": destination_directory,
        }
        body = {
            "cluster_id": cluster_id,
            "voter_id": destination,
            "topics": [_topic(partition)],
            "leader_endpoints": _listeners(listeners),
        }
        return ApiKey.BEGIN_QUORUM_EPOCH, BEGIN_QUORUM_EPOCH_VERSION, body
    if isinstance(msg, EndQuorumEpochRequest):
        partition = {
            "partition_index": METADATA_PARTITION,
            "leader_id": msg.leader_id,
            "leader_epoch": msg.leader_epoch,
            "preferred_successors": list(msg.preferred_successors),  # v0
            "preferred_candidates": [{"candidate_id": c} for c in msg.preferred_successors],  # v1+
        }
        body = {
            "cluster_id": cluster_id,
            "topics": [_topic(partition)],
            "leader_endpoints": _listeners(listeners),
        }
        return ApiKey.END_QUORUM_EPOCH, END_QUORUM_EPOCH_VERSION, body
    if isinstance(msg, FetchRequest):
        partition = {
            "partition": METADATA_PARTITION,
            "current_leader_epoch": msg.replica_epoch,
            "fetch_offset": msg.fetch_offset,
            "last_fetched_epoch": msg.last_fetched_epoch,
            "partition_max_bytes": fetch_max_bytes,
            "replica_directory_id": msg.replica_directory_id,  # v17+ (KIP-853)
        }
        body = {
            "cluster_id": cluster_id,
            "replica_id": msg.replica_id,  # up to v14
            "replica_state": {"replica_id": msg.replica_id, "replica_epoch": -1},  # v15+
            "max_wait_ms": fetch_max_wait_ms,
            "min_bytes": 1,
            "max_bytes": fetch_max_bytes,
            "topics": [_fetch_topic(partition)],
        }
        return ApiKey.FETCH, FETCH_VERSION, body
    if isinstance(msg, FetchSnapshotRequest):
        partition = {
            "partition": METADATA_PARTITION,
            "current_leader_epoch": msg.replica_epoch,
            "snapshot_id": _snapshot_id_to_wire(msg.snapshot_id),
            "position": msg.position,
        }
        body = {
            "cluster_id": cluster_id,
            "replica_id": msg.replica_id,
            "max_bytes": msg.max_bytes,
            "topics": [{"name": METADATA_TOPIC, "partitions": [partition]}],
        }
        return ApiKey.FETCH_SNAPSHOT, FETCH_SNAPSHOT_VERSION, body
    raise TypeError(f"not a Raft request: {msg!r}")


def request_from_wire(api_key: int, version: int, body: Mapping[str, Any]) -> DecodedRequest:
    """The Raft request in a decoded request body (see the module docstring for what is rejected)."""
    what = f"{_api_name(api_key)} v{version} request"
    if api_key == ApiKey.VOTE:
        p = _only_partition(body["topics"], what)
        vote = VoteRequest(
            candidate_epoch=p["replica_epoch"],
            candidate_id=p["replica_id"],
            last_offset_epoch=p["last_offset_epoch"],
            last_offset=p["last_offset"],
            pre_vote=bool(p["pre_vote"]),
        )
        return _decoded(
            what,
            body["cluster_id"],
            vote.candidate_id,
            vote,
            destination=body["voter_id"],
            destination_directory=p.get("voter_directory_id") or NO_DIRECTORY,
        )
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        p = _only_partition(body["topics"], what)
        begin = BeginQuorumEpochRequest(leader_id=p["leader_id"], leader_epoch=p["leader_epoch"])
        return _decoded(
            what,
            body["cluster_id"],
            begin.leader_id,
            begin,
            destination=body["voter_id"],
            destination_directory=p.get("voter_directory_id") or NO_DIRECTORY,
        )
    if api_key == ApiKey.END_QUORUM_EPOCH:
        p = _only_partition(body["topics"], what)
        if version >= 1:
            successors = tuple(c["candidate_id"] for c in p["preferred_candidates"])
        else:
            successors = tuple(p["preferred_successors"])
        end = EndQuorumEpochRequest(p["leader_id"], p["leader_epoch"], successors)
        return _decoded(what, body["cluster_id"], end.leader_id, end)
    if api_key == ApiKey.FETCH:
        _check_fetch_version(version)
        p = _only_partition(
            body["topics"], what, by_id=version >= 13, name_key="topic", index_key="partition"
        )
        replica = body["replica_state"]["replica_id"] if version >= 15 else body["replica_id"]
        if p["fetch_offset"] < 0:
            raise _invalid(f"{what}: negative fetch offset {p['fetch_offset']}")
        fetch = FetchRequest(
            replica_id=replica,
            replica_epoch=p["current_leader_epoch"],
            fetch_offset=p["fetch_offset"],
            last_fetched_epoch=p["last_fetched_epoch"],
            replica_directory_id=p.get("replica_directory_id") or NO_DIRECTORY,
        )
        return _decoded(what, body["cluster_id"], replica, fetch, max_wait_ms=body["max_wait_ms"])
    if api_key == ApiKey.FETCH_SNAPSHOT:
        p = _only_partition(body["topics"], what, name_key="name", index_key="partition")
        snapshot_id = p["snapshot_id"]
        fetch_snapshot = FetchSnapshotRequest(
            replica_id=body["replica_id"],
            replica_epoch=p["current_leader_epoch"],
            snapshot_id=OffsetAndEpoch(snapshot_id["end_offset"], snapshot_id["epoch"]),
            position=p["position"],
            max_bytes=body["max_bytes"],
        )
        return _decoded(what, body["cluster_id"], fetch_snapshot.replica_id, fetch_snapshot)
    raise ValueError(f"{_api_name(api_key)} is not a Raft request API")


def _decoded(
    what: str,
    cluster_id: str | None,
    source: int,
    message: RaftRequest,
    *,
    max_wait_ms: int = 0,
    destination: int = -1,
    destination_directory: uuid.UUID = NO_DIRECTORY,
) -> DecodedRequest:
    if source < 0:
        raise _invalid(f"{what}: negative replica id {source}")
    return DecodedRequest(cluster_id, source, message, max_wait_ms, destination, destination_directory)


# --------------------------------------------------------------------------- responses


def _check_kind(api_key: int, msg: object, table: dict[type, ApiKey]) -> None:
    expected = table.get(type(msg))
    if expected is None or expected != api_key:
        raise ValueError(f"{type(msg).__name__} does not belong to {_api_name(api_key)}")


def response_to_wire(api_key: int, version: int, msg: RaftResponse) -> dict[str, Any]:
    """The body answering a ``version`` request of ``api_key`` with ``msg`` (errors at partition
    level; :func:`error_response` builds top-level ones)."""
    _check_kind(api_key, msg, _API_OF_RESPONSE)
    partition: dict[str, Any]
    if isinstance(msg, VoteResponse):
        partition = {
            "partition_index": METADATA_PARTITION,
            "error_code": msg.error_code,
            "leader_id": msg.leader_id,
            "leader_epoch": msg.leader_epoch,
            "vote_granted": msg.vote_granted,
        }
        return {"error_code": NONE, "topics": [_topic(partition)]}
    if isinstance(msg, BeginQuorumEpochResponse | EndQuorumEpochResponse):
        partition = {
            "partition_index": METADATA_PARTITION,
            "error_code": msg.error_code,
            "leader_id": msg.leader_id,
            "leader_epoch": msg.leader_epoch,
        }
        return {"error_code": NONE, "topics": [_topic(partition)]}
    if isinstance(msg, FetchSnapshotResponse):
        partition = {
            "index": METADATA_PARTITION,
            "error_code": msg.error_code,
            "snapshot_id": _snapshot_id_to_wire(msg.snapshot_id),
            "current_leader": {"leader_id": msg.leader_id, "leader_epoch": msg.leader_epoch},
            "size": msg.size,
            "position": msg.position,
            "unaligned_records": msg.data,
        }
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "topics": [{"name": METADATA_TOPIC, "partitions": [partition]}],
        }
    assert isinstance(msg, FetchResponse)
    if version < MIN_FETCH_VERSION:
        raise ValueError(f"Fetch v{version} cannot carry a Raft fetch response")
    diverging = msg.diverging_epoch
    partition = {
        "partition_index": METADATA_PARTITION,
        "error_code": msg.error_code,
        "high_watermark": msg.high_watermark,
        "diverging_epoch": (
            dict(_NO_DIVERGENCE)
            if diverging is None
            else {"epoch": diverging.epoch, "end_offset": diverging.offset}
        ),
        "current_leader": {"leader_id": msg.leader_id, "leader_epoch": msg.leader_epoch},
        "snapshot_id": (
            dict(_NO_SNAPSHOT) if msg.snapshot_id is None else _snapshot_id_to_wire(msg.snapshot_id)
        ),
        "records": encode_entries(msg.records) if msg.records else b"",
    }
    return {
        "throttle_time_ms": 0,
        "error_code": NONE,
        "session_id": 0,
        "responses": [_fetch_topic(partition)],
    }


def error_response(api_key: int, version: int, error_code: int) -> dict[str, Any]:
    """A body failing the whole request with ``error_code`` (e.g. INCONSISTENT_CLUSTER_ID or
    INVALID_REQUEST), for any of the Raft APIs and DescribeQuorum."""
    if api_key in (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        return {"error_code": error_code, "topics": []}
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return {"error_code": error_code, "error_message": None, "topics": [], "nodes": []}
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return {"throttle_time_ms": 0, "error_code": error_code, "topics": []}
    if api_key == ApiKey.FETCH:
        body: dict[str, Any] = {
            "throttle_time_ms": 0,
            "error_code": error_code,
            "session_id": 0,
            "responses": [],
        }
        if version < 7:  # no top-level error code yet: fail the metadata partition instead
            partition = {
                "partition_index": METADATA_PARTITION,
                "error_code": error_code,
                "high_watermark": -1,
            }
            body["responses"] = [_fetch_topic(partition)]
        return body
    raise ValueError(f"{_api_name(api_key)} is not a Raft API")


def response_from_wire(
    api_key: int, version: int, body: Mapping[str, Any], request: RaftRequest
) -> RaftResponse:
    """The Raft response in a decoded response body that answers ``request``."""
    _check_kind(api_key, request, _API_OF_REQUEST)
    what = f"{_api_name(api_key)} v{version} response"
    top_error = body["error_code"]
    if isinstance(request, VoteRequest):
        if top_error != NONE:
            return VoteResponse(top_error, NO_LEADER, NO_EPOCH, False, request.pre_vote)
        p = _only_partition(body["topics"], what)
        return VoteResponse(
            p["error_code"], p["leader_id"], p["leader_epoch"], bool(p["vote_granted"]), request.pre_vote
        )
    if isinstance(request, BeginQuorumEpochRequest):
        if top_error != NONE:
            return BeginQuorumEpochResponse(top_error, NO_LEADER, NO_EPOCH)
        p = _only_partition(body["topics"], what)
        return BeginQuorumEpochResponse(p["error_code"], p["leader_id"], p["leader_epoch"])
    if isinstance(request, EndQuorumEpochRequest):
        if top_error != NONE:
            return EndQuorumEpochResponse(top_error, NO_LEADER, NO_EPOCH)
        p = _only_partition(body["topics"], what)
        return EndQuorumEpochResponse(p["error_code"], p["leader_id"], p["leader_epoch"])
    if isinstance(request, FetchSnapshotRequest):
        if top_error != NONE:
            return FetchSnapshotResponse(
                top_error, NO_LEADER, NO_EPOCH, request.snapshot_id, -1, request.position
            )
        p = _only_partition(body["topics"], what, name_key="name", index_key="index")
        leader = p["current_leader"]
        snapshot_id = p["snapshot_id"]
        data = p["unaligned_records"]
        return FetchSnapshotResponse(
            error_code=p["error_code"],
            leader_id=leader["leader_id"],
            leader_epoch=leader["leader_epoch"],
            snapshot_id=OffsetAndEpoch(snapshot_id["end_offset"], snapshot_id["epoch"]),
            size=p["size"],
            position=p["position"],
            data=bytes(data) if data is not None else b"",
        )
    assert isinstance(request, FetchRequest)
    if top_error != NONE:
        return FetchResponse(
            top_error, NO_LEADER, NO_EPOCH, -1, request.fetch_offset, request.last_fetched_epoch
        )
    _check_fetch_version(version)
    p = _only_partition(body["responses"], what, by_id=version >= 13, name_key="topic")
    leader = p["current_leader"]
    diverging_wire = p["diverging_epoch"]
    diverging = None
    if diverging_wire["epoch"] != -1:
        if diverging_wire["end_offset"] < 0:
            raise _invalid(f"{what}: diverging epoch {diverging_wire['epoch']} without an end offset")
        diverging = OffsetAndEpoch(diverging_wire["end_offset"], diverging_wire["epoch"])
    snapshot_id = _snapshot_id_from_wire(p["snapshot_id"], what)
    records = p["records"]
    entries = tuple(decode_entries(records)) if records else ()
    return FetchResponse(
        error_code=p["error_code"],
        leader_id=leader["leader_id"],
        leader_epoch=leader["leader_epoch"],
        high_watermark=p["high_watermark"],
        fetch_offset=request.fetch_offset,
        last_fetched_epoch=request.last_fetched_epoch,
        records=entries,
        diverging_epoch=diverging,
        snapshot_id=snapshot_id,
    )


# --------------------------------------------------------------------------- DescribeQuorum


def describe_quorum_request() -> dict[str, Any]:
    """The DescribeQuorum body asking about ``__cluster_metadata`` partition 0."""
    return {"topics": [_topic({"partition_index": METADATA_PARTITION})]}


def describe_quorum_request_ok(body: Mapping[str, Any]) -> bool:
    """Whether a DescribeQuorum request asks about exactly ``__cluster_metadata`` partition 0 (else
    answer ``error_response(DESCRIBE_QUORUM, v, UNKNOWN_TOPIC_OR_PARTITION)``)."""
    try:
        _only_partition(body["topics"], "DescribeQuorum request")
    except errors.KafkaError:
        return False
    return True


def _replica_state(r: ReplicaInfo) -> DescribeQuorumResponseTopicsPartitionsCurrentVoters:
    return {
        "replica_id": r.replica_id,
        "log_end_offset": r.log_end_offset,
        "last_fetch_timestamp": r.last_fetch_timestamp_ms,  # v1+
        "last_caught_up_timestamp": r.last_caught_up_timestamp_ms,  # v1+
    }


def describe_quorum_response(
    version: int,
    info: QuorumInfo | None,
    *,
    leader_endpoints: Mapping[int, Sequence[Listener]] = _NO_LISTENERS,
) -> DescribeQuorumResponse:
    """The DescribeQuorum answer from :meth:`RaftNode.quorum_info` (None: not the leader, answered
    with NOT_LEADER_OR_FOLLOWER on the partition). v1+ carries the timestamps, v2 the listeners of
    the nodes in ``leader_endpoints`` (node id -> [(name, host, port)]), in node-id order."""
    partition: DescribeQuorumResponseTopicsPartitions
    if info is None:
        partition = {
            "partition_index": METADATA_PARTITION,
            "error_code": NOT_LEADER_OR_FOLLOWER,
            "error_message": None,
            "leader_id": NO_LEADER,
            "leader_epoch": NO_EPOCH,
            "high_watermark": -1,
            "current_voters": [],
            "observers": [],
        }
    else:
        partition = {
            "partition_index": METADATA_PARTITION,
            "error_code": NONE,
            "error_message": None,
            "leader_id": info.leader_id,
            "leader_epoch": info.leader_epoch,
            "high_watermark": info.high_watermark,
            "current_voters": [_replica_state(r) for r in info.voters],
            "observers": [_replica_state(r) for r in info.observers],
        }
    nodes: list[DescribeQuorumResponseNodes] = [
        {"node_id": node_id, "listeners": [{"name": n, "host": h, "port": p} for n, h, p in leader_endpoints[node_id]]}
        for node_id in sorted(leader_endpoints)
    ]
    topic: DescribeQuorumResponseTopics = {"topic_name": METADATA_TOPIC, "partitions": [partition]}
    return {"error_code": NONE, "error_message": None, "topics": [topic], "nodes": nodes}


__all__ = [
    "BEGIN_QUORUM_EPOCH_VERSION",
    "DEFAULT_FETCH_MAX_BYTES",
    "DEFAULT_FETCH_MAX_WAIT_MS",
    "DESCRIBE_QUORUM_VERSION",
    "END_QUORUM_EPOCH_VERSION",
    "FETCH_SNAPSHOT_VERSION",
    "FETCH_VERSION",
    "INCONSISTENT_CLUSTER_ID",
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "MIN_FETCH_VERSION",
    "RAFT_API_KEYS",
    "VOTE_VERSION",
    "DecodedRequest",
    "Listener",
    "describe_quorum_request",
    "describe_quorum_request_ok",
    "describe_quorum_response",
    "error_response",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
]
