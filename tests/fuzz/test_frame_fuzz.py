"""Fuzz the wire layer: decoders and a live broker fed random and mutated frames.

Two halves:

* ``test_decode_*``: ``codec.decode`` of random and mutated bodies for every (api, version, kind)
  in ``zurau.protocol.schemas.ALL`` raises nothing but ``DecodeError``.
* ``test_broker_*``: an in-process broker (one per module) is sent random byte strings and
  mutated valid requests over fresh connections; after every example a well-behaved
  ApiVersions + Metadata round trip on a separate connection must succeed, and at the end a
  confluent-kafka producer/consumer round trip must still work. Plus the specific answers the
  broker owes to a handful of bad inputs (oversized frame, unknown ApiVersions version, bad CRC,
  oversized batch, bad topic name).
"""

from __future__ import annotations

import itertools
import logging
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zurau.protocol import codec
from zurau.protocol.frame import decode_response, encode_request
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.builder import build_batch
from zurau.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    RECORDS,
    STRING,
    UUID,
    Array,
    Field,
    Struct,
    in_range,
)
from zurau.protocol.schemas import ALL

_I32 = struct.Struct(">i")

# Error codes (Kafka's numbers).
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35

SOCKET_REQUEST_MAX_BYTES = 1_048_576
MAX_MESSAGE_BYTES = 65_536

SAMPLE_BATCH = build_batch(
    [(b"k", b"v" * 20, [("h", b"x")], 1_700_000_000_000), (None, b"w", [], 1_700_000_000_001)]
)


# =========================================================================== sample bodies


def _sample_value(t: Any, version: int, name: str) -> Any:
    if isinstance(t, Array):
        return [_sample_value(t.of, version, name), _sample_value(t.of, version, name)]
    if isinstance(t, Struct):
        return _sample_struct(t.fields, version)
    if t == STRING:
        return f"s-{name}"
    if t == BYTES:
        return b"\x01\x02\x03"
    if t == RECORDS:
        return SAMPLE_BATCH
    if t == UUID:
        return uuid.UUID(int=0x1234)
    if t == BOOL:
        return True
    if t == FLOAT64:
        return 1.5
    return 1


def _sample_struct(fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    return {
        f.name: _sample_value(f.type, version, f.name) for f in fields if in_range(version, f.version_range)
    }


def sample_body(api_key: int, version: int, kind: str) -> bytes:
    """A valid body for (api, version, kind) with every present field set and arrays of two."""
    schema = ALL[api_key]
    fields = schema.request if kind == "request" else schema.response
    return codec.encode(api_key, version, kind, _sample_struct(fields, version))  # type: ignore[arg-type]


CASES = [
    (key, v, kind)
    for key, schema in sorted(ALL.items())
    for v in range(schema.min_version, schema.max_version + 1)
    for kind in ("request", "response")
]


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """Apply one to four mutations: bit flips, truncation, insertion, deletion, int overwrites."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "int32", "int16", "varint"]))
        n = len(data)
        if op == "flip" and n:
            i = draw(st.integers(0, n - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[draw(st.integers(0, n)) :]
        elif op == "insert":
            i = draw(st.integers(0, n))
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del data[i : i + draw(st.integers(1, 8))]
        elif op == "int32" and n >= 4:
            i = draw(st.integers(0, n - 4))
            value = draw(st.sampled_from([-1, -2, -(2**31), 2**31 - 1, 0x7FFF, 1 << 20, 0]))
            data[i : i + 4] = _I32.pack(value)
        elif op == "int16" and n >= 2:
            i = draw(st.integers(0, n - 2))
            data[i : i + 2] = struct.pack(">h", draw(st.sampled_from([-1, -2, -32768, 32767, 0])))
        elif op == "varint" and n:
            i = draw(st.integers(0, n - 1))
            data[i : i + 1] = draw(
                st.sampled_from([b"\xff\xff\xff\xff\x0f", b"\x80" * 11, b"\xff\xff\xff\xff\xff", b"\x00"])
            )
    return bytes(data)


def _decode_only_decode_error(api_key: int, version: int, kind: str, body: bytes) -> None:
    try:
        codec.decode(api_key, version, kind, body)  # type: ignore[arg-type]
    except DecodeError:
        pass


def test_decode_sample_bodies_round_trip() -> None:
    """The seeds themselves are valid: every sample body decodes (guards the fuzz's premise)."""
    for key, v, kind in CASES:
        codec.decode(key, v, kind, sample_body(key, v, kind))  # type: ignore[arg-type]


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), body=st.binary(max_size=64))
def test_decode_random_bytes_raise_only_decode_error(case: tuple[int, int, str], body: bytes) -> None:
    _decode_only_decode_error(*case, body)


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_decode_mutated_bodies_raise_only_decode_error(
    data: st.DataObject, case: tuple[int, int, str]
) -> None:
    body = data.draw(mutated(sample_body(*case)))
    _decode_only_decode_error(*case, body)


def test_decode_every_truncation_raises_only_decode_error() -> None:
    """Exhaustive: every prefix of every sample body."""
    for key, v, kind in CASES:
        body = sample_body(key, v, kind)
        for n in range(len(body)):
            _decode_only_decode_error(key, v, kind, body[:n])


# =========================================================================== a live broker

FUZZ_TOPIC = "fuzz-topic"
SMALL_TOPIC = "fuzz-small-messages"

_correlation_ids = itertools.count(1)


def request_frame(api_key: int, version: int, body: dict[str, Any]) -> tuple[int, bytes]:
    """A full request frame (size prefix, header v1/v2, body) and its correlation id."""
    cid = next(_correlation_ids)
    return cid, encode_request(api_key, version, cid, "fuzz", body)


class SyncConn:
    """A blocking socket speaking whole frames; enough for single request/response exchanges."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> SyncConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv_exactly(self, n: int) -> bytes:
        parts = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def read_frame(self) -> bytes:
        (size,) = _I32.unpack(self._recv_exactly(4))
        return self._recv_exactly(size)

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        cid, frame = request_frame(api_key, version, body)
        self.sock.sendall(frame)
        return self.read_response(api_key, version, cid)

    def read_response(self, api_key: int, version: int, cid: int) -> dict[str, Any]:
        got, body = decode_response(api_key, version, self.read_frame())
        assert got == cid, f"correlation id {got} != {cid}"
        return body

    def closed_by_peer(self, within: float) -> bool:
        """True if the broker closes the connection within ``within`` seconds (bytes are drained)."""
        deadline = time.monotonic() + within
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                if not self.sock.recv(65536):
                    return True
            except TimeoutError:
                return False
            except ConnectionResetError:
                return True


def create_topics_body(
    name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
        ],
        "timeout_ms": 10_000,
        "validate_only": False,
    }


def produce_body(topic: str, records: bytes | None, acks: int = -1, partition: int = 0) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    }


def fetch_body(topic: str, offset: int = 0, max_wait_ms: int = 0) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


class ErrorLog(logging.Handler):
    """Collects ERROR records (with tracebacks) logged anywhere in this process, i.e. the broker."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        out = [f"{r.name}: {r.getMessage()}\n{self.format(r)}" for r in self.records]
        self.records.clear()
        return out


@pytest.fixture(scope="module")
def broker_errors() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.fixture(scope="module")
def fuzz_broker(broker_errors: ErrorLog) -> Iterator[Any]:
    from zurau.embedded import EmbeddedBroker

    with EmbeddedBroker(**{"socket.request.max.bytes": SOCKET_REQUEST_MAX_BYTES}) as b:
        with SyncConn(b.port) as c:
            for body in (
                create_topics_body(FUZZ_TOPIC, 2),
                create_topics_body(SMALL_TOPIC, 1, {"max.message.bytes": str(MAX_MESSAGE_BYTES)}),
            ):
                resp = c.request(19, 5, body)
                assert resp["topics"][0]["error_code"] == 0, resp
        yield b


def assert_healthy(port: int, errors: ErrorLog | None = None) -> None:
    """A well-behaved ApiVersions + Metadata round trip on a fresh connection; and, given
    ``errors``, no exception escaped into the broker's error log (bad input is expected to be
    rejected with a warning and a closed connection, or an error code, never a traceback)."""
    with SyncConn(port) as c:
        av = c.request(18, 3, {"client_software_name": "fuzz", "client_software_version": "1"})
        assert av["error_code"] == 0 and av["api_keys"], av
        md = c.request(3, 12, {"topics": [{"name": FUZZ_TOPIC}], "allow_auto_topic_creation": False})
        assert md["brokers"] and md["topics"][0]["error_code"] == 0, md
    if errors is not None:
        logged = errors.take()
        assert not logged, "the broker logged errors:\n" + "\n".join(logged[:3])


def _base_frames() -> list[bytes]:
    batch = build_batch([(b"fk", b"fuzz-value", [], 1_700_000_000_000)])
    reqs: list[tuple[int, int, dict[str, Any]]] = [
        (18, 0, {}),
        (18, 3, {"client_software_name": "fuzz", "client_software_version": "1.0"}),
        (18, 4, {"client_software_name": "fuzz", "client_software_version": "1.0"}),
        (3, 1, {"topics": [{"name": FUZZ_TOPIC}]}),
        (3, 4, {"topics": [{"name": FUZZ_TOPIC}], "allow_auto_topic_creation": False}),
        (3, 12, {"topics": [{"name": FUZZ_TOPIC}], "allow_auto_topic_creation": False}),
        (0, 3, produce_body(FUZZ_TOPIC, batch)),
        (0, 9, produce_body(FUZZ_TOPIC, batch)),
        (0, 9, produce_body(FUZZ_TOPIC, batch + batch, acks=1, partition=1)),
        (1, 4, fetch_body(FUZZ_TOPIC)),
        (1, 12, fetch_body(FUZZ_TOPIC)),
    ]
    return [request_frame(k, v, body)[1] for k, v, body in reqs]


BASE_FRAMES = _base_frames()


@st.composite
def mutated_frame(draw: st.DrawFn) -> bytes:
    frame = draw(st.sampled_from(BASE_FRAMES))
    kind = draw(st.sampled_from(["body", "body", "body", "size", "size-fixed"]))
    if kind == "body":
        # Mutate anywhere after the prefix, then fix the prefix so the broker sees a whole frame.
        payload = draw(mutated(frame[4:]))
        return _I32.pack(len(payload)) + payload
    if kind == "size":
        size = draw(
            st.sampled_from(
                [-1, -2, -(2**31), 2**31 - 1, SOCKET_REQUEST_MAX_BYTES + 1, 0, 1, 7, 8, len(frame) - 5]
            )
        )
        return _I32.pack(size) + frame[4:]
    # A mutated body behind its original size prefix (the frame may end early or carry extra bytes).
    return frame[:4] + draw(mutated(frame[4:]))


@st.composite
def random_input(draw: st.DrawFn) -> bytes:
    body = draw(st.binary(max_size=300))
    style = draw(st.sampled_from(["raw", "prefixed", "header"]))
    if style == "raw":
        return body
    if style == "header":
        key = draw(st.sampled_from([*ALL, -1, 99, 32767]))
        version = draw(st.integers(-2, 20))
        body = struct.pack(">hhi", key, version, 1) + body
    return _I32.pack(len(body)) + body


def send_and_drain(port: int, data: bytes) -> None:
    """Send ``data`` on a fresh connection, half-close it, and read until the broker closes."""
    with SyncConn(port, timeout=2.0) as c:
        try:
            c.sock.sendall(data)
            c.sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return
        c.closed_by_peer(within=1.0)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=random_input())
def test_broker_survives_random_bytes(fuzz_broker: Any, broker_errors: ErrorLog, data: bytes) -> None:
    send_and_drain(fuzz_broker.port, data)
    assert_healthy(fuzz_broker.port, broker_errors)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=mutated_frame())
def test_broker_survives_mutated_requests(fuzz_broker: Any, broker_errors: ErrorLog, data: bytes) -> None:
    send_and_drain(fuzz_broker.port, data)
    assert_healthy(fuzz_broker.port, broker_errors)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(frames=st.lists(mutated_frame(), min_size=2, max_size=6))
def test_broker_survives_pipelined_mutated_requests(
    fuzz_broker: Any, broker_errors: ErrorLog, frames: list[bytes]
) -> None:
    """Several requests (good and bad) in one write, as a pipelining client sends them."""
    send_and_drain(fuzz_broker.port, BASE_FRAMES[0] + b"".join(frames))
    assert_healthy(fuzz_broker.port, broker_errors)


# --------------------------------------------------------------------------- specific answers


@pytest.mark.parametrize("size", [SOCKET_REQUEST_MAX_BYTES + 1, 2**31 - 1, -1, -(2**31)])
def test_oversized_or_negative_size_prefix_closes_only_that_connection(fuzz_broker: Any, size: int) -> None:
    port = fuzz_broker.port
    with SyncConn(port) as good, SyncConn(port) as bad:
        assert good.request(18, 0, {})["error_code"] == 0
        bad.sock.sendall(_I32.pack(size) + b"\x00" * 16)
        assert bad.closed_by_peer(within=3.0), f"size prefix {size}: the broker kept the connection open"
        av = good.request(18, 3, {"client_software_name": "x", "client_software_version": "1"})
        assert av["error_code"] == 0
    assert_healthy(port)


def test_size_prefix_at_the_limit_is_not_rejected_early(fuzz_broker: Any) -> None:
    """A frame of exactly socket.request.max.bytes is read (then rejected as garbage), not refused."""
    with SyncConn(fuzz_broker.port) as c:
        cid, frame = request_frame(3, 12, {"topics": [], "allow_auto_topic_creation": False})
        padded = frame[4:] + b"\x00" * (SOCKET_REQUEST_MAX_BYTES - len(frame) + 4)
        assert len(padded) == SOCKET_REQUEST_MAX_BYTES
        c.sock.sendall(_I32.pack(len(padded)) + padded)
        md = c.read_response(3, 12, cid)  # trailing bytes after the body are ignored, as in Kafka
        assert md["brokers"]


def test_api_versions_unknown_version_gets_v0_answer_with_unsupported_version(fuzz_broker: Any) -> None:
    with SyncConn(fuzz_broker.port) as c:
        payload = struct.pack(">hhi", 18, 99, 4242) + struct.pack(">h", 4) + b"fuzz" + b"\x00" * 8
        c.sock.sendall(_I32.pack(len(payload)) + payload)
        data = c.read_frame()
        (cid,) = _I32.unpack_from(data, 0)
        assert cid == 4242
        resp = codec.decode(18, 0, "response", data[4:])
        assert resp["error_code"] == UNSUPPORTED_VERSION
        assert resp["api_keys"], "the v0 answer must list the supported ranges"
        keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}
        assert keys[18][0] == 0 and keys[18][1] >= 3
        # The connection stays usable: the client retries with a version it now knows.
        assert (
            c.request(18, 3, {"client_software_name": "x", "client_software_version": "1"})["error_code"] == 0
        )


@pytest.mark.parametrize("version", [3, 9])
def test_produce_bad_crc_gets_corrupt_message_and_connection_stays_usable(
    fuzz_broker: Any, version: int
) -> None:
    batch = bytearray(build_batch([(b"k", b"some value to corrupt", [], 1_700_000_000_000)]))
    batch[-3] ^= 0xFF  # inside the records: CRC-32C no longer matches
    with SyncConn(fuzz_broker.port) as c:
        resp = c.request(0, version, produce_body(FUZZ_TOPIC, bytes(batch)))
        part = resp["responses"][0]["partition_responses"][0]
        assert part["error_code"] == CORRUPT_MESSAGE, part
        good = c.request(
            0, version, produce_body(FUZZ_TOPIC, build_batch([(b"k", b"fine", [], 1_700_000_000_000)]))
        )
        assert good["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert c.request(18, 0, {})["error_code"] == 0


def test_produce_batch_over_max_message_bytes_gets_message_too_large(fuzz_broker: Any) -> None:
    big = build_batch([(None, b"z" * (MAX_MESSAGE_BYTES + 1000), [], 1_700_000_000_000)])
    with SyncConn(fuzz_broker.port) as c:
        resp = c.request(0, 9, produce_body(SMALL_TOPIC, big))
        part = resp["responses"][0]["partition_responses"][0]
        assert part["error_code"] == MESSAGE_TOO_LARGE, part
        ok = c.request(
            0, 9, produce_body(SMALL_TOPIC, build_batch([(None, b"small", [], 1_700_000_000_000)]))
        )
        assert ok["responses"][0]["partition_responses"][0]["error_code"] == 0


@pytest.mark.parametrize("name", ["bad/name", "with space", "a" * 250, "..", ".", "", "ünïcode"])
def test_create_topics_bad_name_gets_invalid_topic_exception(fuzz_broker: Any, name: str) -> None:
    with SyncConn(fuzz_broker.port) as c:
        resp = c.request(19, 5, create_topics_body(name))
        assert resp["topics"][0]["error_code"] == INVALID_TOPIC_EXCEPTION, resp
    assert_healthy(fuzz_broker.port)


def test_real_clients_still_work_after_fuzzing(fuzz_broker: Any) -> None:
    """Last in the module: a confluent-kafka producer/consumer round trip on the fuzzed broker."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = fuzz_broker.bootstrap_servers
    topic = f"after-fuzz-{uuid.uuid4().hex[:8]}"
    with SyncConn(fuzz_broker.port) as c:
        assert c.request(19, 5, create_topics_body(topic))["topics"][0]["error_code"] == 0
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(50):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "after-fuzz", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 50 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == [f"v{i}".encode() for i in range(50)]
    finally:
        consumer.close()
