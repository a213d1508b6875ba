"""The connection's receive path (BufferedProtocol) cuts any byte stream into the frames sent.

Frames of every size class (inside the receive buffer, at the direct-read threshold, larger
than the receive buffer) are fed in random chunk sizes through ``get_buffer``/``buffer_updated``
exactly as an event loop would; the frames handed on must be the ones sent, in order, each a
private writable ``bytearray``.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from zurau.broker.auth.session import SecuritySession
from zurau.broker.connection import DIRECT_FRAME_BYTES, RECEIVE_BUFFER_BYTES, KafkaConnection
from zurau.protocol.frame import Frame

SIZES = [
    1,
    10,
    160,
    5000,
    DIRECT_FRAME_BYTES - 1,
    DIRECT_FRAME_BYTES,
    DIRECT_FRAME_BYTES + 1,
    RECEIVE_BUFFER_BYTES - 4,
    RECEIVE_BUFFER_BYTES + 7,
    300_000,
]
CHUNKS = [1, 2, 3, 7, 100, 4096, 65536, 1 << 20]


class _Config:
    socket_request_max_bytes = 100 << 20


class _Services:
    config = _Config()
    metrics = None


class _Broker:
    services = _Services()
    connections: set[Any] = set()

    def new_session(self, conn: Any) -> SecuritySession:
        return SecuritySession(None, lambda user, mechanism: None, conn.close)  # PLAINTEXT: no authentication


class _Capture(KafkaConnection):
    """A connection that records the frames it would dispatch."""

    def __init__(self) -> None:
        super().__init__(_Broker())  # type: ignore[arg-type]
        self.received: list[Frame] = []
        self.closed_reason: str | None = None

    def _on_frame(self, frame: Frame) -> None:
        self.received.append(frame)

    def _update_reading(self) -> None:
        pass

    def close(self, reason: str) -> None:
        self.closed_reason = reason
        self._closed = True


def _stream(rng: random.Random, sizes: list[int]) -> tuple[list[bytes], bytes]:
    frames = [rng.randbytes(min(s, 16)) + bytes([i % 256]) * max(s - 16, 0) for i, s in enumerate(sizes)]
    return frames, b"".join(struct.pack(">i", len(f)) + f for f in frames)


def _feed(conn: _Capture, stream: bytes, rng: random.Random) -> None:
    pos = 0
    while pos < len(stream) and not conn._closed:
        buf = conn.get_buffer(-1)
        assert len(buf) > 0
        n = min(len(buf), len(stream) - pos, rng.choice(CHUNKS))
        buf[:n] = stream[pos : pos + n]
        pos += n
        conn.buffer_updated(n)


@pytest.mark.parametrize("seed", range(40))
def test_random_streams_are_cut_into_the_frames_sent(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.choice(SIZES) for _ in range(rng.randint(1, 10))]
    frames, stream = _stream(rng, sizes)
    conn = _Capture()
    _feed(conn, stream, rng)
    assert conn.closed_reason is None
    assert [bytes(f) for f in conn.received] == frames
    # Compared only after the whole stream went through: a frame aliasing the reused receive
    # buffer would have been overwritten by later bytes.
    assert all(type(f) is bytearray for f in conn.received)


@pytest.mark.parametrize("size", [-1, (100 << 20) + 1])
def test_a_bad_size_prefix_closes_the_connection(size: int) -> None:
    conn = _Capture()
    _feed(conn, struct.pack(">i", size) + b"x" * 10, random.Random(0))
    assert conn.closed_reason is not None and "socket.request.max.bytes" in conn.closed_reason
    assert conn.received == []


def test_a_connection_holds_a_receive_buffer_only_while_a_frame_is_unfinished() -> None:
    """Idle connections cost no receive buffer: it is given back once every byte was framed,
    and two connections alternating reuse the same one."""
    rng = random.Random(1)
    frames, stream = _stream(rng, [10, 5000, 10])
    a, b = _Capture(), _Capture()
    assert not a.frames.holds_buffer and not b.frames.holds_buffer
    _feed(a, stream[:7], rng)  # part of the first frame: the buffer is held
    held = a.get_buffer(-1).obj
    assert a.frames.holds_buffer
    _feed(a, stream[7:], rng)
    assert not a.frames.holds_buffer and [bytes(f) for f in a.received] == frames
    buf = b.get_buffer(-1)  # the next readable connection reuses the freed buffer
    assert buf.obj is held
    one = struct.pack(">i", 3) + b"abc"
    buf[: len(one)] = one
    b.buffer_updated(len(one))
    assert not b.frames.holds_buffer and [bytes(f) for f in b.received] == [b"abc"]
