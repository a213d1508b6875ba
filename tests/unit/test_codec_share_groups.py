"""Share-group wire formats (KIP-932) against bytes built by hand, and the shared vocabulary.

``test_codec_kio.py`` cross-checks every share-group schema and version with kio; this file adds
fixtures written field by field from Kafka's message definitions, in the order librdkafka 2.15+
writes them (``rd_kafka_ShareFetchRequest``, ``rd_kafka_ShareAcknowledgeRequest`` and
``rd_kafka_ShareGroupHeartbeatRequest``: ShareFetch, ShareAcknowledge and ShareGroupHeartbeat
v1), and the responses librdkafka parses. Each fixture must decode to the expected message and
the message must encode back to the same bytes. v2 fixtures pin what KIP-1206/KIP-1222 add.

The byte helpers below are deliberately independent of :mod:`zurau.protocol.codec`.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from typing import Any

import pytest

from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.frame import decode_request, decode_response, encode_request, encode_response
from zurau.protocol.primitives import DecodeError
from zurau.protocol.schemas import ALL
from zurau.protocol.share_states import AcknowledgeType, RecordState, StateBatch

# --------------------------------------------------------------------------- hand-made bytes


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def cstr(s: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING: length + 1 as an unsigned varint, 0 for null."""
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def cbytes(b: bytes | None) -> bytes:
    if b is None:
        return b"\x00"
    return uvarint(len(b) + 1) + b


def carray(items: list[bytes] | None) -> bytes:
    """COMPACT_(NULLABLE_)ARRAY of already-encoded elements."""
    if items is None:
        return b"\x00"
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"  # an empty tagged-field section


def struct_(*parts: bytes) -> bytes:
    """A flexible struct: its fields, then its (empty) tagged-field section."""
    return b"".join(parts) + NO_TAGS


def request_frame(api_key: int, version: int, correlation_id: int, client_id: str, body: bytes) -> bytes:
    """A request with header v2 (client id as a classic nullable string, then tags), size-prefixed."""
    raw_client = client_id.encode()
    head = i16(api_key) + i16(version) + i32(correlation_id) + i16(len(raw_client)) + raw_client + NO_TAGS
    return i32(len(head) + len(body)) + head + body


def response_frame(correlation_id: int, body: bytes) -> bytes:
    """A response with header v1 (correlation id, then tags), size-prefixed."""
    head = i32(correlation_id) + NO_TAGS
    return i32(len(head) + len(body)) + head + body


TOPIC_A = uuid.UUID("6f1c1c9a-0b7e-4d55-9a3e-2f1f0c6a8b01")
TOPIC_B = uuid.UUID("0d8e3a52-7c44-4b0e-8f1a-95b5d3c2e702")
TOPIC_C = uuid.UUID("a3b2c1d0-1111-4222-8333-444455556666")
MEMBER = "wJ2w5cQ9T2uY1Lh0Xb7sQg"  # librdkafka sends a base64-ish Uuid string of its own making
CLIENT = "rdkafka"
RECORDS = bytes(range(61))  # opaque to the codec: a record batch travels as COMPACT_RECORDS


def _roundtrip_request(key: ApiKey, version: int, frame: bytes, expected: dict[str, Any]) -> None:
    header, body = decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.client_id) == (key, version, CLIENT)
    assert _plain(body) == expected
    assert encode_request(key, version, header.correlation_id, CLIENT, expected) == frame


def _roundtrip_response(key: ApiKey, version: int, frame: bytes, expected: dict[str, Any]) -> None:
    correlation_id, body = decode_response(key, version, frame[4:])
    assert _plain(body) == expected
    assert encode_response(key, version, correlation_id, expected) == frame


def _plain(value: Any) -> Any:
    """Decoded records are memoryviews; compare them as bytes."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


# --------------------------------------------------------------------------- ShareFetch


def _share_fetch_v1_body() -> bytes:
    ack_single = struct_(i64(10), i64(14), carray([i8(AcknowledgeType.ACCEPT)]))
    ack_per_offset = struct_(
        i64(20), i64(23), carray([i8(t) for t in (AcknowledgeType.ACCEPT, AcknowledgeType.GAP,
                                                  AcknowledgeType.RELEASE, AcknowledgeType.REJECT)])
    )  # fmt: skip
    topics = carray([
        # librdkafka first writes the partitions it adds to the session (no acknowledgements)...
        struct_(TOPIC_A.bytes, carray([struct_(i32(0), carray([]))])),
        # ...then the partitions it acknowledges records of.
        struct_(TOPIC_B.bytes, carray([struct_(i32(1), carray([ack_single, ack_per_offset]))])),
    ])  # fmt: skip
    forgotten = carray([struct_(TOPIC_C.bytes, carray([i32(3), i32(4)]))])
    return (
        cstr("share-g")
        + cstr(MEMBER)
        + i32(3)  # share session epoch
        + i32(500)  # max wait ms (fetch.wait.max.ms)
        + i32(1)  # min bytes
        + i32(52_428_800)  # max bytes
        + i32(500)  # max records
        + i32(500)  # batch size
        + topics
        + forgotten
        + NO_TAGS
    )


SHARE_FETCH_V1_REQUEST = {
    "group_id": "share-g",
    "member_id": MEMBER,
    "share_session_epoch": 3,
    "max_wait_ms": 500,
    "min_bytes": 1,
    "max_bytes": 52_428_800,
    "max_records": 500,
    "batch_size": 500,
    "share_acquire_mode": 0,  # not in v1: the decoder fills Kafka's default
    "is_renew_ack": False,
    "topics": [
        {"topic_id": TOPIC_A, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]},
        {
            "topic_id": TOPIC_B,
            "partitions": [
                {
                    "partition_index": 1,
                    "acknowledgement_batches": [
                        {"first_offset": 10, "last_offset": 14, "acknowledge_types": [1]},
                        {"first_offset": 20, "last_offset": 23, "acknowledge_types": [1, 0, 2, 3]},
                    ],
                }
            ],
        },
    ],
    "forgotten_topics_data": [{"topic_id": TOPIC_C, "partitions": [3, 4]}],
}


def test_share_fetch_v1_request_as_librdkafka_writes_it() -> None:
    frame = request_frame(ApiKey.SHARE_FETCH, 1, 77, CLIENT, _share_fetch_v1_body())
    _roundtrip_request(ApiKey.SHARE_FETCH, 1, frame, SHARE_FETCH_V1_REQUEST)


def test_share_fetch_v1_request_opening_a_session_with_null_group_defaults() -> None:
    """Epoch 0 opens a session; an empty forgotten list is written as an empty compact array."""
    body = (
        cstr(None) + cstr("") + i32(0) + i32(0) + i32(0) + i32(2**31 - 1) + i32(0) + i32(0)
        + carray([]) + carray([]) + NO_TAGS
    )  # fmt: skip
    decoded = codec.decode(ApiKey.SHARE_FETCH, 1, "request", body)
    assert decoded["group_id"] is None and decoded["member_id"] == "" and decoded["topics"] == []
    # Kafka's defaults: null group id, empty member id, max bytes 0x7fffffff.
    assert codec.encode(ApiKey.SHARE_FETCH, 1, "request", {}) == body


def test_share_fetch_v2_request_adds_acquire_mode_and_renew_flag_after_batch_size() -> None:
    v1 = _share_fetch_v1_body()
    # Everything up to and including batch_size: two compact strings and six int32s.
    head_len = len(cstr("share-g")) + len(cstr(MEMBER)) + 6 * 4
    v2 = v1[:head_len] + i8(1) + b"\x01" + v1[head_len:]
    message = {**SHARE_FETCH_V1_REQUEST, "share_acquire_mode": 1, "is_renew_ack": True}
    _roundtrip_request(ApiKey.SHARE_FETCH, 2, request_frame(ApiKey.SHARE_FETCH, 2, 5, CLIENT, v2), message)


def _share_fetch_v1_response_body() -> bytes:
    served = struct_(
        i32(0), i16(0), cstr(None), i16(0), cstr(None),
        struct_(i32(1), i32(7)),  # current leader: id, epoch (a plain struct, not tagged)
        cbytes(RECORDS),
        carray([struct_(i64(0), i64(40), i16(1)), struct_(i64(41), i64(60), i16(3))]),
    )  # fmt: skip
    moved = struct_(
        i32(1), i16(6), cstr("leader moved"), i16(0), cstr(None),
        struct_(i32(2), i32(8)),
        cbytes(b""),
        carray([]),
    )  # fmt: skip
    ack_failed = struct_(
        i32(2), i16(0), cstr(None), i16(124), cstr("record state"),  # INVALID_RECORD_STATE
        struct_(i32(1), i32(7)),
        cbytes(b""),
        carray([]),
    )  # fmt: skip
    return (
        i32(0)  # throttle time
        + i16(0)
        + cstr(None)
        + i32(30_000)  # acquisition lock timeout
        + carray([struct_(TOPIC_A.bytes, carray([served, moved, ack_failed]))])
        + carray([struct_(i32(2), cstr("broker-2"), i32(9092), cstr(None))])
        + NO_TAGS
    )


SHARE_FETCH_V1_RESPONSE = {
    "throttle_time_ms": 0,
    "error_code": 0,
    "error_message": None,
    "acquisition_lock_timeout_ms": 30_000,
    "responses": [
        {
            "topic_id": TOPIC_A,
            "partitions": [
                {
                    "partition_index": 0,
                    "error_code": 0,
                    "error_message": None,
                    "acknowledge_error_code": 0,
                    "acknowledge_error_message": None,
                    "current_leader": {"leader_id": 1, "leader_epoch": 7},
                    "records": RECORDS,
                    "acquired_records": [
                        {"first_offset": 0, "last_offset": 40, "delivery_count": 1},
                        {"first_offset": 41, "last_offset": 60, "delivery_count": 3},
                    ],
                },
                {
                    "partition_index": 1,
                    "error_code": 6,
                    "error_message": "leader moved",
                    "acknowledge_error_code": 0,
                    "acknowledge_error_message": None,
                    "current_leader": {"leader_id": 2, "leader_epoch": 8},
                    "records": b"",
                    "acquired_records": [],
                },
                {
                    "partition_index": 2,
                    "error_code": 0,
                    "error_message": None,
                    "acknowledge_error_code": 124,
                    "acknowledge_error_message": "record state",
                    "current_leader": {"leader_id": 1, "leader_epoch": 7},
                    "records": b"",
                    "acquired_records": [],
                },
            ],
        }
    ],
    "node_endpoints": [{"node_id": 2, "host": "broker-2", "port": 9092, "rack": None}],
}


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_response(version: int) -> None:
    """The response did not change in v2: the same bytes serve both versions."""
    frame = response_frame(77, _share_fetch_v1_response_body())
    _roundtrip_response(ApiKey.SHARE_FETCH, version, frame, SHARE_FETCH_V1_RESPONSE)


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_response_records_are_never_null(version: int) -> None:
    """Kafka 4.1+ made Records non-nullable from v1 (an ack-only or error partition carries
    empty records); librdkafka fails the whole response on a null (MessageSetSize -1)."""
    body = dict(SHARE_FETCH_V1_RESPONSE)
    body["responses"] = [
        {
            "topic_id": TOPIC_A,
            "partitions": [{**SHARE_FETCH_V1_RESPONSE["responses"][0]["partitions"][1], "records": None}],
        }
    ]
    with pytest.raises(ValueError, match="not nullable"):
        encode_response(ApiKey.SHARE_FETCH, version, 77, body)


# --------------------------------------------------------------------------- ShareAcknowledge


def _share_ack_v1_body(epoch: int) -> bytes:
    batches = carray([
        struct_(i64(100), i64(100), carray([i8(AcknowledgeType.REJECT)])),
        struct_(i64(101), i64(140), carray([i8(AcknowledgeType.ACCEPT)])),
    ])  # fmt: skip
    topics = carray([struct_(TOPIC_B.bytes, carray([struct_(i32(0), batches), struct_(i32(5), carray([]))]))])
    return cstr("share-g") + cstr(MEMBER) + i32(epoch) + topics + NO_TAGS


def _share_ack_request(epoch: int, renew: bool = False) -> dict[str, Any]:
    return {
        "group_id": "share-g",
        "member_id": MEMBER,
        "share_session_epoch": epoch,
        "is_renew_ack": renew,
        "topics": [
            {
                "topic_id": TOPIC_B,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [
                            {"first_offset": 100, "last_offset": 100, "acknowledge_types": [3]},
                            {"first_offset": 101, "last_offset": 140, "acknowledge_types": [1]},
                        ],
                    },
                    {"partition_index": 5, "acknowledgement_batches": []},
                ],
            }
        ],
    }


@pytest.mark.parametrize("epoch", [4, -1], ids=["in-session", "closing"])
def test_share_acknowledge_v1_request_as_librdkafka_writes_it(epoch: int) -> None:
    frame = request_frame(ApiKey.SHARE_ACKNOWLEDGE, 1, 9, CLIENT, _share_ack_v1_body(epoch))
    _roundtrip_request(ApiKey.SHARE_ACKNOWLEDGE, 1, frame, _share_ack_request(epoch))


def test_share_acknowledge_v2_request_puts_the_renew_flag_after_the_epoch() -> None:
    v1 = _share_ack_v1_body(4)
    cut = len(cstr("share-g")) + len(cstr(MEMBER)) + 4
    v2 = v1[:cut] + b"\x01" + v1[cut:]
    frame = request_frame(ApiKey.SHARE_ACKNOWLEDGE, 2, 9, CLIENT, v2)
    _roundtrip_request(ApiKey.SHARE_ACKNOWLEDGE, 2, frame, _share_ack_request(4, renew=True))


def _share_ack_response_body(version: int) -> bytes:
    partitions = carray([
        struct_(i32(0), i16(0), cstr(None), struct_(i32(1), i32(7))),
        struct_(i32(5), i16(124), cstr("not acquired"), struct_(i32(1), i32(7))),
    ])  # fmt: skip
    lock = i32(15_000) if version >= 2 else b""
    return (
        i32(25) + i16(0) + cstr(None) + lock
        + carray([struct_(TOPIC_B.bytes, partitions)])
        + carray([])
        + NO_TAGS
    )  # fmt: skip


@pytest.mark.parametrize("version", [1, 2])
def test_share_acknowledge_response(version: int) -> None:
    expected = {
        "throttle_time_ms": 25,
        "error_code": 0,
        "error_message": None,
        # v1 has no lock timeout on the wire: the decoder fills Kafka's default, 0.
        "acquisition_lock_timeout_ms": 15_000 if version >= 2 else 0,
        "responses": [
            {
                "topic_id": TOPIC_B,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "error_message": None,
                        "current_leader": {"leader_id": 1, "leader_epoch": 7},
                    },
                    {
                        "partition_index": 5,
                        "error_code": 124,
                        "error_message": "not acquired",
                        "current_leader": {"leader_id": 1, "leader_epoch": 7},
                    },
                ],
            }
        ],
        "node_endpoints": [],
    }
    frame = response_frame(31, _share_ack_response_body(version))
    _roundtrip_response(ApiKey.SHARE_ACKNOWLEDGE, version, frame, expected)


# --------------------------------------------------------------------------- ShareGroupHeartbeat


def test_share_group_heartbeat_v1_join_as_librdkafka_writes_it() -> None:
    # librdkafka writes the subscription in reverse order of its list; order is the client's.
    body = (
        cstr("share-g")
        + cstr(MEMBER)
        + i32(0)
        + cstr(None)
        + carray([cstr("orders"), cstr("audit")])
        + NO_TAGS
    )
    expected = {
        "group_id": "share-g",
        "member_id": MEMBER,
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": ["orders", "audit"],
    }
    _roundtrip_request(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        1,
        request_frame(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, CLIENT, body),
        expected,
    )


def test_share_group_heartbeat_v1_unchanged_subscription_is_a_null_array() -> None:
    body = cstr("share-g") + cstr(MEMBER) + i32(12) + cstr("rack-a") + carray(None) + NO_TAGS
    decoded = codec.decode(ApiKey.SHARE_GROUP_HEARTBEAT, 1, "request", body)
    assert decoded["subscribed_topic_names"] is None and decoded["rack_id"] == "rack-a"
    assert codec.encode(ApiKey.SHARE_GROUP_HEARTBEAT, 1, "request", decoded) == body


@pytest.mark.parametrize("with_assignment", [True, False])
def test_share_group_heartbeat_v1_response(with_assignment: bool) -> None:
    assignment = struct_(carray([struct_(TOPIC_A.bytes, carray([i32(0), i32(2)]))]))
    body = (
        i32(0) + i16(0) + cstr(None) + cstr(MEMBER) + i32(13) + i32(5000)
        + (b"\x01" + assignment if with_assignment else b"\xff")  # nullable struct: 1 present, -1 null
        + NO_TAGS
    )  # fmt: skip
    expected = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": MEMBER,
        "member_epoch": 13,
        "heartbeat_interval_ms": 5000,
        "assignment": {"topic_partitions": [{"topic_id": TOPIC_A, "partitions": [0, 2]}]}
        if with_assignment
        else None,
    }
    _roundtrip_response(ApiKey.SHARE_GROUP_HEARTBEAT, 1, response_frame(3, body), expected)


# --------------------------------------------------------------------------- the state APIs


def test_read_share_group_state_batches_are_state_batches() -> None:
    """The wire struct of a state batch has exactly StateBatch's fields, in the same order."""
    batch = struct_(i64(10), i64(19), i8(RecordState.ARCHIVED), i16(5))
    body = carray([
        struct_(TOPIC_A.bytes, carray([
            struct_(i32(0), i16(0), cstr(None), i32(2), i64(10), carray([batch])),
        ])),
    ]) + NO_TAGS  # fmt: skip
    decoded = codec.decode(ApiKey.READ_SHARE_GROUP_STATE, 0, "response", body)
    wire = decoded["results"][0]["partitions"][0]["state_batches"][0]
    assert list(wire) == [f.name for f in dataclasses.fields(StateBatch)]
    assert StateBatch(**wire) == StateBatch(10, 19, RecordState.ARCHIVED, 5)
    assert codec.encode(ApiKey.READ_SHARE_GROUP_STATE, 0, "response", decoded) == body


@pytest.mark.parametrize("version", [0, 1])
def test_write_share_group_state_delivery_complete_count_is_v1_only(version: int) -> None:
    batch = struct_(i64(0), i64(4), i8(RecordState.ACKNOWLEDGED), i16(1))
    dcc = i32(5) if version >= 1 else b""
    partition = struct_(i32(3), i32(1), i32(9), i64(0), dcc, carray([batch]))
    body = cstr("share-g") + carray([struct_(TOPIC_C.bytes, carray([partition]))]) + NO_TAGS
    decoded = codec.decode(ApiKey.WRITE_SHARE_GROUP_STATE, version, "request", body)
    part = decoded["topics"][0]["partitions"][0]
    assert (part["state_epoch"], part["leader_epoch"], part["start_offset"]) == (1, 9, 0)
    assert part["delivery_complete_count"] == (5 if version >= 1 else -1)  # Kafka's default: -1
    assert codec.encode(ApiKey.WRITE_SHARE_GROUP_STATE, version, "request", decoded) == body


def test_describe_share_group_offsets_null_topics_means_all() -> None:
    body = carray([struct_(cstr("share-g"), carray(None))]) + NO_TAGS
    decoded = codec.decode(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, "request", body)
    assert decoded == {"groups": [{"group_id": "share-g", "topics": None}]}
    assert codec.encode(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, "request", decoded) == body
    # Left out, the list defaults to empty (Kafka's default), not to null.
    empty = carray([struct_(cstr("share-g"), carray([]))]) + NO_TAGS
    assert (
        codec.encode(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, "request", {"groups": [{"group_id": "share-g"}]})
        == empty
    )


# --------------------------------------------------------------------------- registry and errors


SHARE_APIS = {
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.READ_SHARE_GROUP_STATE: (0, 0),
    ApiKey.WRITE_SHARE_GROUP_STATE: (0, 1),
    ApiKey.DELETE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (0, 1),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
}


@pytest.mark.parametrize("key", sorted(SHARE_APIS), ids=lambda k: ApiKey(k).api_name)
def test_kafka_4_2_version_ranges_all_flexible(key: ApiKey) -> None:
    schema = ALL[key]
    assert (schema.min_version, schema.max_version) == SHARE_APIS[key]
    assert all(schema.is_flexible(v) for v in range(schema.min_version, schema.max_version + 1))
    assert schema.request_header_version(schema.min_version) == 2
    assert schema.response_header_version(schema.min_version) == 1


def test_truncated_share_fetch_request_is_a_decode_error() -> None:
    body = _share_fetch_v1_body()
    for cut in (3, len(body) // 2, len(body) - 2):
        with pytest.raises(DecodeError):
            codec.decode(ApiKey.SHARE_FETCH, 1, "request", body[:cut])


def test_unserved_versions_have_no_codec() -> None:
    """v0 of the client APIs was Kafka 4.0's early access: never decoded as if it were v1."""
    with pytest.raises((KeyError, ValueError)):
        codec.decode(ApiKey.SHARE_FETCH, 0, "request", _share_fetch_v1_body())


# --------------------------------------------------------------------------- share_states


def test_ids_are_kafkas() -> None:
    assert {s.name: s.value for s in RecordState} == {
        "AVAILABLE": 0, "ACQUIRED": 1, "ACKNOWLEDGED": 2, "ARCHIVED": 4,
    }  # fmt: skip
    assert {t.name: t.value for t in AcknowledgeType} == {"GAP": 0, "ACCEPT": 1, "RELEASE": 2, "REJECT": 3}


def test_state_batch_is_frozen_and_checks_its_invariants() -> None:
    batch = StateBatch(first_offset=5, last_offset=5, delivery_state=RecordState.ACQUIRED, delivery_count=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.first_offset = 6  # type: ignore[misc]
    assert batch.is_valid()
    assert StateBatch(0, 9, RecordState.AVAILABLE, 0).is_valid()
    assert not StateBatch(6, 5, RecordState.AVAILABLE, 0).is_valid()  # empty range
    assert not StateBatch(-1, 5, RecordState.AVAILABLE, 0).is_valid()
    assert not StateBatch(0, 5, 3, 0).is_valid()  # 3 is no RecordState
    assert not StateBatch(0, 5, RecordState.ARCHIVED, -1).is_valid()
