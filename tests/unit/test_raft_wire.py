"""Raft messages on Kafka's wire (``zurau.raft.wire``): every request and response survives
request_to_wire/response_to_wire -> codec.encode -> codec.decode -> *_from_wire (in the codec's
strict mode, on for the suite), at the versions we send and at the older ones a peer may use;
malformed bodies raise InvalidRequestError; and DescribeQuorum reports what a hand-driven
three-voter quorum with an observer did, with every message between the nodes crossing the wire."""

from __future__ import annotations

import random
import uuid
from collections import deque
from typing import Any

import pytest

from zurau.protocol import codec, errors
from zurau.protocol.api_keys import ApiKey
from zurau.raft import (
    Entry,
    InMemoryQuorumStateStore,
    InMemoryRaftLog,
    OffsetAndEpoch,
    Propose,
    QuorumInfo,
    RaftNode,
    Received,
    ReplicaInfo,
    Role,
    Tick,
)
from zurau.raft.batches import iter_entry_batches
from zurau.raft.messages import (
    FENCED_LEADER_EPOCH,
    NO_LEADER,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    RaftMessage,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from zurau.raft.node import OBSERVER_SESSION_TIMEOUT_MS, Outbound
from zurau.raft.wire import (
    BEGIN_QUORUM_EPOCH_VERSION,
    DESCRIBE_QUORUM_VERSION,
    END_QUORUM_EPOCH_VERSION,
    FETCH_VERSION,
    INCONSISTENT_CLUSTER_ID,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    VOTE_VERSION,
    DecodedRequest,
    describe_quorum_request,
    describe_quorum_request_ok,
    describe_quorum_response,
    error_response,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)

CLUSTER = "zurau-test-cluster"
InvalidRequest = errors.InvalidRequestError


def wire_body(key: int, version: int, kind: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` after a trip through the codec's bytes."""
    return codec.decode(key, version, kind, codec.encode(key, version, kind, body))


def request_round_trip(msg: RaftRequest, *, version: int | None = None, **kw: Any) -> DecodedRequest:
    key, chosen, body = request_to_wire(msg, CLUSTER, **kw)
    v = chosen if version is None else version
    return request_from_wire(key, v, wire_body(key, v, "request", body))


def response_round_trip(
    request: RaftRequest, response: RaftResponse, *, version: int | None = None
) -> RaftResponse:
    key, chosen, _ = request_to_wire(request, CLUSTER)
    v = chosen if version is None else version
    body = response_to_wire(key, v, response)
    return response_from_wire(key, v, wire_body(key, v, "response", body), request)


# ------------------------------------------------------------------ versions


def test_we_send_the_highest_versions_our_schemas_define() -> None:
    chosen = {
        ApiKey.VOTE: VOTE_VERSION,
        ApiKey.BEGIN_QUORUM_EPOCH: BEGIN_QUORUM_EPOCH_VERSION,
        ApiKey.END_QUORUM_EPOCH: END_QUORUM_EPOCH_VERSION,
        ApiKey.FETCH: FETCH_VERSION,
        ApiKey.DESCRIBE_QUORUM: DESCRIBE_QUORUM_VERSION,
    }
    for key, version in chosen.items():
        assert version == codec.schema_for(key).max_version, key.name
    assert FETCH_VERSION >= 15  # topic ids (v13) and replica_state (v15)
    samples: list[RaftRequest] = [
        VoteRequest(1, 1, 0, 0),
        BeginQuorumEpochRequest(1, 1),
        EndQuorumEpochRequest(1, 1),
        FetchRequest(2, 1, 0, 0),
    ]
    assert [request_to_wire(m, CLUSTER)[:2] for m in samples] == [
        (ApiKey.VOTE, VOTE_VERSION),
        (ApiKey.BEGIN_QUORUM_EPOCH, BEGIN_QUORUM_EPOCH_VERSION),
        (ApiKey.END_QUORUM_EPOCH, END_QUORUM_EPOCH_VERSION),
        (ApiKey.FETCH, FETCH_VERSION),
    ]


# ------------------------------------------------------------------ requests

REQUESTS: list[tuple[RaftRequest, int]] = [
    (VoteRequest(candidate_epoch=7, candidate_id=2, last_offset_epoch=5, last_offset=123), 2),
    (VoteRequest(candidate_epoch=8, candidate_id=3, last_offset_epoch=6, last_offset=9, pre_vote=True), 3),
    (BeginQuorumEpochRequest(leader_id=1, leader_epoch=4), 1),
    (EndQuorumEpochRequest(leader_id=1, leader_epoch=4, preferred_successors=(3, 2)), 1),
    (EndQuorumEpochRequest(leader_id=2, leader_epoch=9), 2),
    (FetchRequest(replica_id=3, replica_epoch=4, fetch_offset=1000, last_fetched_epoch=3), 3),
    (FetchRequest(replica_id=100, replica_epoch=0, fetch_offset=0, last_fetched_epoch=0), 100),
]


@pytest.mark.parametrize(("msg", "source"), REQUESTS, ids=lambda x: type(x).__name__)
def test_requests_round_trip_at_the_versions_we_send(msg: RaftRequest, source: int) -> None:
    decoded = request_round_trip(msg, destination=5, fetch_max_wait_ms=321)
    assert decoded.message == msg
    assert decoded.source == source
    assert decoded.cluster_id == CLUSTER and decoded.cluster_id_matches(CLUSTER)
    assert not decoded.cluster_id_matches("another-cluster")
    assert decoded.max_wait_ms == (321 if isinstance(msg, FetchRequest) else 0)
    expected_destination = 5 if isinstance(msg, VoteRequest | BeginQuorumEpochRequest) else -1
    assert decoded.destination == expected_destination


@pytest.mark.parametrize(
    "key", [ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH]
)
def test_requests_round_trip_at_every_older_version_a_peer_may_use(key: ApiKey) -> None:
    schema = codec.schema_for(key)
    for msg, source in REQUESTS:
        if request_to_wire(msg, CLUSTER)[0] != key:
            continue
        for version in range(schema.min_version, schema.max_version + 1):
            if key == ApiKey.FETCH and version < 12:
                with pytest.raises(InvalidRequest, match="v12"):
                    request_round_trip(msg, version=version)
                continue
            decoded = request_round_trip(msg, version=version, destination=5)
            expected = msg
            if isinstance(msg, VoteRequest) and version < 2:
                expected = VoteRequest(
                    msg.candidate_epoch, msg.candidate_id, msg.last_offset_epoch, msg.last_offset
                )
            assert decoded.message == expected, (key.name, version)
            assert decoded.source == source
            if key in (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH):
                assert decoded.destination == (5 if version >= 1 else -1)


def test_request_bodies_name_the_metadata_partition_the_way_kafka_does() -> None:
    _, _, fetch = request_to_wire(FetchRequest(3, 4, 10, 2), CLUSTER, fetch_max_bytes=1024)
    decoded = wire_body(ApiKey.FETCH, FETCH_VERSION, "request", fetch)
    assert decoded["replica_state"] == {"replica_id": 3, "replica_epoch": -1}
    assert decoded["cluster_id"] == CLUSTER
    assert decoded["max_bytes"] == 1024
    (topic,) = decoded["topics"]
    assert topic["topic_id"] == METADATA_TOPIC_ID
    (partition,) = topic["partitions"]
    assert (partition["partition"], partition["current_leader_epoch"]) == (0, 4)
    assert (partition["fetch_offset"], partition["last_fetched_epoch"]) == (10, 2)
    assert partition["partition_max_bytes"] == 1024
    _, _, vote = request_to_wire(VoteRequest(2, 1, 1, 5, pre_vote=True), CLUSTER, destination=3)
    decoded = wire_body(ApiKey.VOTE, VOTE_VERSION, "request", vote)
    assert decoded["voter_id"] == 3 and decoded["topics"][0]["topic_name"] == METADATA_TOPIC
    assert decoded["topics"][0]["partitions"][0]["pre_vote"] is True
    listeners = [("CONTROLLER", "c1.example", 9093)]
    _, _, begin = request_to_wire(BeginQuorumEpochRequest(1, 2), CLUSTER, destination=2, listeners=listeners)
    decoded = wire_body(ApiKey.BEGIN_QUORUM_EPOCH, BEGIN_QUORUM_EPOCH_VERSION, "request", begin)
    assert decoded["leader_endpoints"] == [{"name": "CONTROLLER", "host": "c1.example", "port": 9093}]


def test_a_request_without_a_cluster_id_is_accepted_by_kafkas_rule() -> None:
    key, version, body = request_to_wire(VoteRequest(2, 1, 0, 0), CLUSTER)
    body["cluster_id"] = None
    decoded = request_from_wire(key, version, wire_body(key, version, "request", body))
    assert decoded.cluster_id is None and decoded.cluster_id_matches(CLUSTER)


# ------------------------------------------------------------------ malformed requests


def _mangled(msg: RaftRequest, mangle: Any, version: int | None = None) -> DecodedRequest:
    key, chosen, body = request_to_wire(msg, CLUSTER)
    v = chosen if version is None else version
    mangle(body)
    return request_from_wire(key, v, wire_body(key, v, "request", body))


def _second_topic(body: dict[str, Any]) -> None:
    topics = body["topics"]
    topics.append(dict(topics[0]))


def _no_topic(body: dict[str, Any]) -> None:
    body["topics"] = []


def _second_partition(body: dict[str, Any]) -> None:
    partitions = body["topics"][0]["partitions"]
    partitions.append(dict(partitions[0]))


def _no_partition(body: dict[str, Any]) -> None:
    body["topics"][0]["partitions"] = []


def _set_partition(key: str, value: Any) -> Any:
    def mangle(body: dict[str, Any]) -> None:
        body["topics"][0]["partitions"][0][key] = value

    return mangle


def _set_topic(key: str, value: Any) -> Any:
    def mangle(body: dict[str, Any]) -> None:
        body["topics"][0][key] = value

    return mangle


def _set(key: str, value: Any) -> Any:
    def mangle(body: dict[str, Any]) -> None:
        body[key] = value

    return mangle


MALFORMED: list[tuple[str, RaftRequest, Any, int | None, str]] = [
    ("vote-two-topics", VoteRequest(2, 1, 0, 0), _second_topic, None, "exactly one topic"),
    ("vote-no-topic", VoteRequest(2, 1, 0, 0), _no_topic, None, "exactly one topic"),
    ("vote-wrong-topic", VoteRequest(2, 1, 0, 0), _set_topic("topic_name", "orders"), None, "'orders'"),
    ("vote-partition-1", VoteRequest(2, 1, 0, 0), _set_partition("partition_index", 1), None, "partition 1"),
    ("vote-negative-candidate", VoteRequest(2, 1, 0, 0), _set_partition("replica_id", -1), None, "negative"),
    ("begin-two-partitions", BeginQuorumEpochRequest(1, 2), _second_partition, None, "exactly one partition"),
    ("end-no-partition", EndQuorumEpochRequest(1, 2), _no_partition, None, "exactly one partition"),
    (
        "fetch-wrong-topic-id",
        FetchRequest(2, 1, 0, 0),
        _set_topic("topic_id", uuid.UUID(int=7)),
        None,
        "topic id",
    ),
    ("fetch-v12-wrong-topic-name", FetchRequest(2, 1, 0, 0), _set_topic("topic", "orders"), 12, "'orders'"),
    ("fetch-partition-3", FetchRequest(2, 1, 0, 0), _set_partition("partition", 3), None, "partition 3"),
    ("fetch-two-topics", FetchRequest(2, 1, 0, 0), _second_topic, None, "exactly one topic"),
    (
        "fetch-consumer-replica",
        FetchRequest(2, 1, 0, 0),
        _set("replica_state", {"replica_id": -1}),
        None,
        "negative replica id",
    ),
    (
        "fetch-v14-consumer-replica",
        FetchRequest(2, 1, 0, 0),
        _set("replica_id", -1),
        14,
        "negative replica id",
    ),
    (
        "fetch-negative-offset",
        FetchRequest(2, 1, 0, 0),
        _set_partition("fetch_offset", -5),
        None,
        "negative fetch offset",
    ),
    ("fetch-v11", FetchRequest(2, 1, 0, 0), lambda body: None, 11, "v12"),
]


@pytest.mark.parametrize(
    ("name", "msg", "mangle", "version", "match"), MALFORMED, ids=[m[0] for m in MALFORMED]
)
def test_malformed_requests_raise_invalid_request(
    name: str, msg: RaftRequest, mangle: Any, version: int | None, match: str
) -> None:
    with pytest.raises(InvalidRequest, match=match) as info:
        _mangled(msg, mangle, version)
    assert info.value.code == 42


def test_apis_that_are_not_raft_requests_are_refused() -> None:
    with pytest.raises(ValueError):
        request_from_wire(ApiKey.PRODUCE, 9, {})


# ------------------------------------------------------------------ responses


def _entries() -> tuple[Entry, ...]:
    """A leader-change control entry, then data batches of several sizes over two epochs."""
    log = InMemoryRaftLog()
    log.append_as_leader(3, [b"leader-change"], control=True)
    log.append_as_leader(3, [b"a", b"bb", b"ccc"])
    log.append_as_leader(3, [b""])
    log.append_as_leader(4, [b"leader-change-4"], control=True)
    log.append_as_leader(4, [b"d" * 1000, b"e"])
    return tuple(log.read(0, 100))


def test_a_fetch_response_carries_entries_as_record_batches() -> None:
    entries = _entries()
    request = FetchRequest(replica_id=2, replica_epoch=4, fetch_offset=0, last_fetched_epoch=0)
    response = FetchResponse(NONE, 1, 4, 5, 0, 0, records=entries)
    back = response_round_trip(request, response)
    assert back == response
    assert [e.last_in_batch for e in back.records] == [True, False, False, True, True, True, False, True]
    assert [e.control for e in back.records] == [True, False, False, False, False, True, False, False]
    # On the wire: one Kafka batch per batch of entries.
    body = response_to_wire(ApiKey.FETCH, FETCH_VERSION, response)
    records = body["responses"][0]["partitions"][0]["records"]
    assert [len(b) for b in iter_entry_batches(records)] == [1, 3, 1, 1, 2]
    decoded = wire_body(ApiKey.FETCH, FETCH_VERSION, "response", body)
    partition = decoded["responses"][0]["partitions"][0]
    assert decoded["responses"][0]["topic_id"] == METADATA_TOPIC_ID
    assert partition["current_leader"] == {"leader_id": 1, "leader_epoch": 4}
    assert partition["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert partition["high_watermark"] == 5


def test_a_fetch_response_at_v12_names_the_topic() -> None:
    request = FetchRequest(2, 4, 1, 3)
    response = FetchResponse(NONE, 1, 4, 1, 1, 3, records=_entries()[1:4])
    assert response_round_trip(request, response, version=12) == response


def test_a_diverging_epoch_response_round_trips() -> None:
    request = FetchRequest(replica_id=3, replica_epoch=5, fetch_offset=40, last_fetched_epoch=4)
    response = FetchResponse(NONE, 1, 5, 30, 40, 4, diverging_epoch=OffsetAndEpoch(offset=35, epoch=3))
    back = response_round_trip(request, response)
    assert back == response and back.records == ()
    body = wire_body(
        ApiKey.FETCH, FETCH_VERSION, "response", response_to_wire(ApiKey.FETCH, FETCH_VERSION, response)
    )
    assert body["responses"][0]["partitions"][0]["diverging_epoch"] == {"epoch": 3, "end_offset": 35}
    # (offset 0, epoch 0) is a real divergence point (the follower must truncate everything).
    empty = FetchResponse(NONE, 1, 5, 0, 40, 4, diverging_epoch=OffsetAndEpoch(0, 0))
    assert response_round_trip(request, empty) == empty


def test_fetch_errors_keep_the_responders_leader_and_the_requests_position() -> None:
    request = FetchRequest(3, 2, 17, 2)
    for response in (
        FetchResponse(NOT_LEADER_OR_FOLLOWER, 2, 5, 12, 17, 2),
        FetchResponse(FENCED_LEADER_EPOCH, NO_LEADER, 5, 0, 17, 2),
    ):
        assert response_round_trip(request, response) == response


RESPONSES: list[tuple[RaftRequest, RaftResponse]] = [
    (VoteRequest(4, 2, 3, 10), VoteResponse(NONE, NO_LEADER, 4, True)),
    (VoteRequest(4, 2, 3, 10), VoteResponse(FENCED_LEADER_EPOCH, 3, 6, False)),
    (VoteRequest(5, 2, 3, 10, pre_vote=True), VoteResponse(NONE, NO_LEADER, 4, True, pre_vote=True)),
    (VoteRequest(5, 2, 3, 10, pre_vote=True), VoteResponse(NONE, 1, 4, False, pre_vote=True)),
    (BeginQuorumEpochRequest(1, 4), BeginQuorumEpochResponse(NONE, 1, 4)),
    (BeginQuorumEpochRequest(1, 4), BeginQuorumEpochResponse(FENCED_LEADER_EPOCH, 3, 5)),
    (EndQuorumEpochRequest(1, 4, (2,)), EndQuorumEpochResponse(NONE, NO_LEADER, 4)),
]


@pytest.mark.parametrize(("request_", "response"), RESPONSES, ids=lambda x: type(x).__name__)
def test_responses_round_trip_at_every_version(request_: RaftRequest, response: RaftResponse) -> None:
    key = request_to_wire(request_, CLUSTER)[0]
    schema = codec.schema_for(key)
    for version in range(schema.min_version, schema.max_version + 1):
        assert response_round_trip(request_, response, version=version) == response


def test_the_pre_vote_flag_comes_from_the_request() -> None:
    """Vote responses do not echo pre_vote: the answer to a pre-vote is a pre-vote answer."""
    response = VoteResponse(NONE, NO_LEADER, 4, True, pre_vote=False)
    back = response_round_trip(VoteRequest(5, 2, 3, 10, pre_vote=True), response)
    assert isinstance(back, VoteResponse) and back.pre_vote


@pytest.mark.parametrize(
    "request_",
    [
        VoteRequest(4, 2, 3, 10, pre_vote=True),
        BeginQuorumEpochRequest(1, 4),
        EndQuorumEpochRequest(1, 4),
        FetchRequest(2, 4, 9, 3),
    ],
    ids=lambda x: type(x).__name__,
)
def test_top_level_errors_become_responses_without_a_leader(request_: RaftRequest) -> None:
    key, version, _ = request_to_wire(request_, CLUSTER)
    body = wire_body(key, version, "response", error_response(key, version, INCONSISTENT_CLUSTER_ID))
    assert body["error_code"] == INCONSISTENT_CLUSTER_ID
    back = response_from_wire(key, version, body, request_)
    assert (back.error_code, back.leader_id, back.leader_epoch) == (INCONSISTENT_CLUSTER_ID, NO_LEADER, -1)
    if isinstance(request_, VoteRequest):
        assert isinstance(back, VoteResponse) and not back.vote_granted and back.pre_vote
    if isinstance(request_, FetchRequest):
        assert isinstance(back, FetchResponse)
        assert (back.fetch_offset, back.last_fetched_epoch, back.records) == (9, 3, ())


def test_error_responses_encode_at_every_version() -> None:
    for key in (
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.DESCRIBE_QUORUM,
    ):
        schema = codec.schema_for(key)
        for version in range(schema.min_version, schema.max_version + 1):
            body = wire_body(key, version, "response", error_response(key, version, INCONSISTENT_CLUSTER_ID))
            if key == ApiKey.FETCH and version < 7:  # no top-level error code: on the partition
                assert body["responses"][0]["partitions"][0]["error_code"] == INCONSISTENT_CLUSTER_ID
            else:
                assert body["error_code"] == INCONSISTENT_CLUSTER_ID
    with pytest.raises(ValueError):
        error_response(ApiKey.PRODUCE, 9, INCONSISTENT_CLUSTER_ID)


def test_malformed_responses_raise_invalid_request() -> None:
    request = BeginQuorumEpochRequest(1, 4)
    body = response_to_wire(ApiKey.BEGIN_QUORUM_EPOCH, 1, BeginQuorumEpochResponse(NONE, 1, 4))
    body["topics"][0]["partitions"][0]["partition_index"] = 2
    with pytest.raises(InvalidRequest, match="partition 2"):
        response_from_wire(
            ApiKey.BEGIN_QUORUM_EPOCH, 1, wire_body(ApiKey.BEGIN_QUORUM_EPOCH, 1, "response", body), request
        )
    fetch = FetchRequest(2, 4, 0, 0)
    body = response_to_wire(ApiKey.FETCH, FETCH_VERSION, FetchResponse(NONE, 1, 4, 0, 0, 0))
    body["responses"] = []
    with pytest.raises(InvalidRequest, match="exactly one topic"):
        response_from_wire(
            ApiKey.FETCH, FETCH_VERSION, wire_body(ApiKey.FETCH, FETCH_VERSION, "response", body), fetch
        )


def test_a_response_must_belong_to_its_api() -> None:
    with pytest.raises(ValueError):
        response_to_wire(ApiKey.VOTE, VOTE_VERSION, BeginQuorumEpochResponse(NONE, 1, 4))
    with pytest.raises(ValueError):
        response_from_wire(ApiKey.FETCH, FETCH_VERSION, {"error_code": 0}, VoteRequest(1, 1, 0, 0))


# ------------------------------------------------------------------ a quorum over the wire

VOTERS = (1, 2, 3)
OBSERVER = 100


class WireCluster:
    """Raft nodes that exchange every message through Kafka's wire bodies and the codec's bytes.
    ``pump(now)`` delivers queued messages (and whatever they provoke) at one instant until none is
    left; a request's answer travels back paired with the request, as on a connection."""

    def __init__(self) -> None:
        self.nodes: dict[int, RaftNode] = {}
        self.queue: deque[tuple[int, Outbound]] = deque()
        self.delivered: list[tuple[int, int, RaftMessage]] = []

    def add(self, node_id: int, now: int) -> RaftNode:
        node = RaftNode(
            node_id, VOTERS, InMemoryRaftLog(), InMemoryQuorumStateStore(), random.Random(node_id), now
        )
        self.nodes[node_id] = node
        return node

    def step(self, node_id: int, now: int, event: Any) -> None:
        out = self.nodes[node_id].step(now, event)
        self.queue.extend((node_id, o) for o in out.sends)

    def pump(self, now: int, *, cut_off: int | None = None) -> None:
        """Deliver until nothing is queued; messages to or from ``cut_off`` are lost."""
        while self.queue:
            source, outbound = self.queue.popleft()
            if cut_off in (source, outbound.destination):
                continue
            request = outbound.message
            assert not isinstance(request, RaftResponse), "every response is paired with its request"
            key, version, body = request_to_wire(request, CLUSTER, destination=outbound.destination)
            decoded = request_from_wire(key, version, wire_body(key, version, "request", body))
            assert decoded.source == source and decoded.cluster_id == CLUSTER
            self.delivered.append((source, outbound.destination, decoded.message))
            out = self.nodes[outbound.destination].step(now, Received(decoded.source, decoded.message))
            answers = [o for o in out.sends if isinstance(o.message, RaftResponse)]
            assert len(answers) == 1 and answers[0].destination == source
            answer = answers[0].message
            assert isinstance(answer, RaftResponse)
            wire = wire_body(key, version, "response", response_to_wire(key, version, answer))
            back = response_from_wire(key, version, wire, decoded.message)
            assert back == answer
            self.queue.extend((outbound.destination, o) for o in out.sends if o is not answers[0])
            self.step(source, now, Received(outbound.destination, back))


def describe(version: int, info: QuorumInfo | None, **kw: Any) -> dict[str, Any]:
    """The DescribeQuorum answer as a client decodes it; returns the partition (checks the rest)."""
    body = wire_body(
        ApiKey.DESCRIBE_QUORUM, version, "response", describe_quorum_response(version, info, **kw)
    )
    assert body["error_code"] == NONE
    (topic,) = body["topics"]
    assert topic["topic_name"] == METADATA_TOPIC
    (partition,) = topic["partitions"]
    assert partition["partition_index"] == 0
    partition["nodes"] = body["nodes"]
    return partition


def replicas(states: list[dict[str, Any]], timestamps: bool = True) -> list[tuple[int, ...]]:
    if timestamps:
        return [
            (r["replica_id"], r["log_end_offset"], r["last_fetch_timestamp"], r["last_caught_up_timestamp"])
            for r in states
        ]
    return [(r["replica_id"], r["log_end_offset"]) for r in states]


@pytest.fixture
def cluster() -> WireCluster:
    """Node 1 elected at t=5000 and followed by 2 and 3; two client entries at t=6000 (flushed at
    6025) that node 2 fetches at t=6100 and node 3 does not; observer 100 catches up at t=6200."""
    c = WireCluster()
    for v in VOTERS:
        c.add(v, 0)
    c.step(1, 5000, Tick())  # past node 1's election timeout: pre-vote, vote, BeginQuorumEpoch
    c.pump(5000)
    assert c.nodes[1].role is Role.LEADER and c.nodes[1].epoch == 1
    assert all(c.nodes[v].role is Role.FOLLOWER and c.nodes[v].log.end_offset() == 1 for v in (2, 3))
    c.step(1, 6000, Propose((b"x", b"y")))
    c.step(1, 6025, Tick())  # flush
    c.pump(6025)
    c.step(2, 6100, Tick())
    c.pump(6100)
    c.add(OBSERVER, 6200)
    c.step(OBSERVER, 6200, Tick())
    c.pump(6200)
    return c


def test_messages_of_every_kind_crossed_the_wire(cluster: WireCluster) -> None:
    kinds = {type(m) for _, _, m in cluster.delivered}
    assert {VoteRequest, BeginQuorumEpochRequest, FetchRequest} <= kinds
    assert any(isinstance(m, VoteRequest) and m.pre_vote for _, _, m in cluster.delivered)
    leader_log = cluster.nodes[1].log.read(0, 100)
    assert len(leader_log) == 3 and leader_log[0].control
    assert list(cluster.nodes[2].log.read(0, 100)) == list(leader_log)
    assert list(cluster.nodes[OBSERVER].log.read(0, 100)) == list(leader_log)
    assert cluster.nodes[OBSERVER].role is Role.FOLLOWER and cluster.nodes[OBSERVER].leader_id == 1


def test_quorum_info_tracks_voters_observers_and_caught_up_times(cluster: WireCluster) -> None:
    leader = cluster.nodes[1]
    assert all(cluster.nodes[n].quorum_info(7000) is None for n in (2, 3, OBSERVER))
    info = leader.quorum_info(7000)
    assert info is not None
    assert (info.leader_id, info.leader_epoch, info.high_watermark) == (1, 1, 3)
    assert info.voters == [
        ReplicaInfo(1, 3, 7000, 7000),  # the leader: always caught up now
        ReplicaInfo(2, 3, 6100, 6100),
        ReplicaInfo(3, 1, 5000, 5000),  # last fetched (at offset 1 = the leader's end then) at 5000
    ]
    assert info.observers == [ReplicaInfo(OBSERVER, 3, 6200, 6200)]


def test_caught_up_as_of_the_previous_fetch(cluster: WireCluster) -> None:
    """Node 3 fetches at 7000 from offset 1 (leader at 3), the leader appends, and node 3 fetches
    again from 3 at 7010 (leader at 5): it was caught up with the leader as of 7000."""
    leader = cluster.nodes[1]

    def node_3(now: int) -> ReplicaInfo:
        info = leader.quorum_info(now)
        assert info is not None
        return info.voters[2]

    leader.step(7000, Received(3, FetchRequest(3, 1, 1, 1)))
    assert node_3(7000) == ReplicaInfo(3, 1, 7000, 5000)
    leader.step(7005, Propose((b"z1", b"z2")))
    leader.step(7010, Received(3, FetchRequest(3, 1, 3, 1)))
    assert node_3(7010) == ReplicaInfo(3, 3, 7010, 7000)
    leader.step(7020, Received(3, FetchRequest(3, 1, 5, 1)))
    assert node_3(7020) == ReplicaInfo(3, 5, 7020, 7020)


def test_observers_that_stop_fetching_are_forgotten(cluster: WireCluster) -> None:
    leader = cluster.nodes[1]
    later = 6200 + OBSERVER_SESSION_TIMEOUT_MS
    info = leader.quorum_info(later - 1)
    assert info is not None and [o.replica_id for o in info.observers] == [OBSERVER]
    info = leader.quorum_info(later)
    assert info is not None and info.observers == []


def test_a_voter_that_never_fetched_is_unknown() -> None:
    c = WireCluster()
    for v in VOTERS:
        c.add(v, 0)
    c.step(1, 5000, Tick())
    c.pump(5000, cut_off=3)
    info = c.nodes[1].quorum_info(5500)
    assert info is not None and c.nodes[1].role is Role.LEADER
    assert info.voters[2] == ReplicaInfo(3, -1, -1, -1)
    assert info.voters[1] == ReplicaInfo(2, 1, 5000, 5000)


def test_describe_quorum_at_every_version(cluster: WireCluster) -> None:
    info = cluster.nodes[1].quorum_info(7000)
    endpoints = {1: [("CONTROLLER", "c1", 9093)], 2: [("CONTROLLER", "c2", 9093), ("SSL", "c2", 9094)]}
    v0 = describe(0, info, leader_endpoints=endpoints)
    assert (v0["leader_id"], v0["leader_epoch"], v0["high_watermark"], v0["error_code"]) == (1, 1, 3, NONE)
    assert replicas(v0["current_voters"], timestamps=False) == [(1, 3), (2, 3), (3, 1)]
    assert replicas(v0["observers"], timestamps=False) == [(OBSERVER, 3)]
    assert all(r["last_caught_up_timestamp"] == -1 for r in v0["current_voters"])  # not in v0
    assert v0["nodes"] == []
    for version in (1, 2):
        p = describe(version, info, leader_endpoints=endpoints)
        assert replicas(p["current_voters"]) == [(1, 3, 7000, 7000), (2, 3, 6100, 6100), (3, 1, 5000, 5000)]
        assert replicas(p["observers"]) == [(OBSERVER, 3, 6200, 6200)]
    v2 = describe(2, info, leader_endpoints=endpoints)
    assert v2["error_message"] is None
    assert v2["nodes"] == [
        {"node_id": 1, "listeners": [{"name": "CONTROLLER", "host": "c1", "port": 9093}]},
        {
            "node_id": 2,
            "listeners": [
                {"name": "CONTROLLER", "host": "c2", "port": 9093},
                {"name": "SSL", "host": "c2", "port": 9094},
            ],
        },
    ]


def test_describe_quorum_on_a_non_leader() -> None:
    for version in (0, 1, 2):
        p = describe(version, None)
        assert p["error_code"] == NOT_LEADER_OR_FOLLOWER
        assert (p["leader_id"], p["leader_epoch"]) == (NO_LEADER, -1)
        assert p["current_voters"] == [] and p["observers"] == []


def test_describe_quorum_requests() -> None:
    for version in (0, 1, 2):
        body = wire_body(ApiKey.DESCRIBE_QUORUM, version, "request", describe_quorum_request())
        assert describe_quorum_request_ok(body)
    assert not describe_quorum_request_ok({"topics": []})
    assert not describe_quorum_request_ok(
        {"topics": [{"topic_name": "orders", "partitions": [{"partition_index": 0}]}]}
    )
    assert not describe_quorum_request_ok(
        {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 1}]}]}
    )
    assert not describe_quorum_request_ok(
        {
            "topics": [
                {"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}, {"partition_index": 0}]}
            ]
        }
    )
