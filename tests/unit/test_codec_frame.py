"""Framing, both directions: request and response headers, whole frames, and the frame decoder.

Header bytes are checked against kio's RequestHeader/ResponseHeader (generated from Kafka's JSON).
"""

from __future__ import annotations

import io
import random
import struct

import pytest
from kio.schema.request_header.v1.header import RequestHeader as KioRequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeaderV2
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.frame import (
    Frame,
    FrameReceiver,
    FrameTooLarge,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_request_header,
    encode_response,
    encode_response_header,
    parse_request_header,
    parse_response_header,
    response_correlation_id,
    response_header,
)
from zurau.protocol.primitives import DecodeError

METADATA_BODY = {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False}


def _kio(obj: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(obj))(buf, obj)
    return buf.getvalue()


@pytest.mark.parametrize("client_id", ["zurau", None, "ünï"])
def test_request_headers_match_kio(client_id: str | None) -> None:
    v1 = KioRequestHeaderV1(
        request_api_key=i16(3), request_api_version=i16(8), correlation_id=i32(42), client_id=client_id
    )
    v2 = KioRequestHeaderV2(
        request_api_key=i16(3), request_api_version=i16(12), correlation_id=i32(42), client_id=client_id
    )
    assert encode_request_header(3, 8, 42, client_id, 1) == _kio(v1)
    assert encode_request_header(3, 12, 42, client_id, 2) == _kio(v2)
    assert encode_request_header(3, 8, 42, client_id, 0) == struct.pack(">hhi", 3, 8, 42)


@pytest.mark.parametrize("version", [8, 12])  # header v1 and v2
def test_requests_round_trip(version: int) -> None:
    frame = encode_request(ApiKey.METADATA, version, 7, "cli", METADATA_BODY)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    header, body = decode_request(frame[4:])
    assert header == RequestHeader(3, version, 7, "cli")
    assert body["topics"][0]["name"] == "t" and body["allow_auto_topic_creation"] is False
    _, pos = parse_request_header(frame[4:], flexible=version >= 9)
    assert frame[4 + pos :] == codec.encode(ApiKey.METADATA, version, "request", METADATA_BODY)


@pytest.mark.parametrize(("version", "header_version"), [(8, 0), (12, 1)])
def test_responses_round_trip(version: int, header_version: int) -> None:
    body = {"brokers": [{"node_id": 1, "host": "h", "port": 9092}], "topics": []}
    frame = encode_response(ApiKey.METADATA, version, 99, body)
    assert frame[4:8] == struct.pack(">i", 99)
    assert response_correlation_id(frame[4:]) == 99
    assert parse_response_header(frame[4:], header_version) == (99, 4 + header_version)
    cid, decoded = decode_response(ApiKey.METADATA, version, frame[4:])
    assert cid == 99 and decoded["brokers"][0]["host"] == "h"


def test_response_header_encoding() -> None:
    assert encode_response_header(5, 0) == b"\x00\x00\x00\x05"
    assert encode_response_header(5, 1) == b"\x00\x00\x00\x05\x00"
    assert response_header is encode_response_header


def test_api_versions_answers_with_header_v0_and_unsupported_in_v0_form() -> None:
    ok = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    frame = encode_response(ApiKey.API_VERSIONS, 3, 1, ok)  # flexible body, header v0
    assert frame[8:] == codec.encode(18, 3, "response", ok)
    assert decode_response(ApiKey.API_VERSIONS, 3, frame[4:]) == (
        1,
        codec.decode(18, 3, "response", frame[8:]),
    )
    refusal = {"error_code": UnsupportedVersionError.code, "api_keys": ok["api_keys"]}
    v0 = encode_response(ApiKey.API_VERSIONS, 0, 2, refusal)
    cid, body = decode_response(ApiKey.API_VERSIONS, 4, v0[4:])  # asked v4, answered in v0 form
    assert cid == 2 and body["error_code"] == UnsupportedVersionError.code
    assert body["api_keys"] == ok["api_keys"]


def test_short_responses_raise_decode_error() -> None:
    with pytest.raises(DecodeError):
        response_correlation_id(b"\x00\x01")
    with pytest.raises(DecodeError):
        decode_response(ApiKey.API_VERSIONS, 3, b"\x00\x00\x00\x01\x00")


def _receive(rx: FrameReceiver, stream: bytes, rng: random.Random) -> list[Frame]:
    """Deliver ``stream`` as a transport would: into :meth:`FrameReceiver.buffer`, at most as much
    as it offers (and a random amount up to that) per read."""
    got: list[Frame] = []
    pos = 0
    while pos < len(stream):
        buf = rx.buffer()
        assert len(buf) > 0
        n = min(len(buf), len(stream) - pos, rng.choice([1, 2, 3, 4, 5, 100, 4096, 1 << 16, 1 << 20]))
        buf[:n] = stream[pos : pos + n]
        got += rx.received(n)
        pos += n
    return got


@pytest.mark.parametrize("seed", range(30))
def test_frame_receiver_cuts_any_chunking_into_the_frames_sent(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [0, 1, 5, 300, 1023, 1024, 1025, 3000, 70_000]
    frames = [rng.randbytes(rng.choice(sizes)) for _ in range(rng.randint(1, 12))]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    rx = FrameReceiver(1 << 20, buffer_bytes=4096, direct_bytes=1024)
    got = _receive(rx, stream, rng)
    assert [bytes(f) for f in got] == frames
    assert rx.buffered == 0
    for f in got:  # copied out of the receive buffer, or a view of a buffer of its own
        if len(f) < 1024:
            assert type(f) is bytes
        if len(f) > 4096:
            assert isinstance(f, memoryview)
        if isinstance(f, memoryview):
            assert f.readonly and len(f.obj) == len(f)  # type: ignore[arg-type]


def test_frame_receiver_hands_out_frames_that_later_reads_do_not_touch() -> None:
    rng = random.Random(7)
    frames = [bytes([i]) * rng.choice([10, 2000, 5000]) for i in range(40)]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    rx = FrameReceiver(1 << 20, buffer_bytes=4096, direct_bytes=1024)
    got = _receive(rx, stream, rng)
    assert [bytes(f) for f in got] == frames  # compared after every frame was received


def test_frame_receiver_receives_a_large_frame_straight_into_its_buffer() -> None:
    body = random.Random(1).randbytes(100_000)
    rx = FrameReceiver(1 << 20, buffer_bytes=4096, direct_bytes=1024)
    head = rx.buffer()
    head[:10] = (struct.pack(">i", len(body)) + body)[:10]
    assert rx.received(10) == []
    rest = rx.buffer()
    assert len(rest) == len(body) - 6  # the rest of the frame, and not a byte more
    rest[:] = body[6:]
    (frame,) = rx.received(len(rest))
    assert frame == body and rest.obj is frame.obj  # type: ignore[union-attr]


@pytest.mark.parametrize("size", [-1, (1 << 20) + 1])
def test_frame_receiver_rejects_a_bad_size_before_reading_the_frame(size: int) -> None:
    rx = FrameReceiver(1 << 20)
    rx.buffer()[:4] = struct.pack(">i", size)
    with pytest.raises(FrameTooLarge):
        rx.received(4)
    assert rx.buffered == 0 and len(rx.buffer()) > 0


def _large_frame(rx: FrameReceiver, body: bytes) -> Frame:
    stream = struct.pack(">i", len(body)) + body
    got = _receive(rx, stream, random.Random(len(body)))
    assert len(got) == 1 and got[0] == body
    return got[0]


def test_frame_receiver_reuses_a_large_buffer_only_once_nothing_references_it() -> None:
    rx = FrameReceiver(1 << 20, buffer_bytes=4096, direct_bytes=1024)
    first = _large_frame(rx, b"a" * 50_000)
    records = first[100:200]  # a view into it, as decoded records are
    first_buffer = id(first.obj)  # type: ignore[union-attr]
    del first
    second = _large_frame(rx, b"b" * 40_000)  # the first one's buffer is still referenced
    assert id(second.obj) != first_buffer and bytes(records) == b"a" * 100  # type: ignore[union-attr]
    second_buffer = id(second.obj)  # type: ignore[union-attr]
    del records, second
    third = _large_frame(rx, b"c" * 30_000)  # nothing references the spare: received into it again
    assert id(third.obj) == second_buffer and len(third) == 30_000 and third == b"c" * 30_000  # type: ignore[union-attr]
    fourth = _large_frame(rx, b"d" * 20_000)  # the third is alive: a new buffer
    assert id(fourth.obj) != second_buffer and third == b"c" * 30_000  # type: ignore[union-attr]
