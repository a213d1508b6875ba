"""The connection's fast paths over a real socket: direct frame reads, in-place produce, sendfile fetch.

* Frames of ``DIRECT_FRAME_BYTES`` or more are received straight into their own buffer; these
  tests dribble large and small frames in odd-sized pieces so every split of a size prefix and
  body is seen, and check that the broker stored exactly what was sent.
* Fetched data leaves as :class:`~zurau.storage.file_region.FileRegion` pieces via ``os.sendfile``;
  a client that does not read fills the socket so the rest goes out through the transport's
  buffer. Either way the bytes must be the stored ones, in order.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.broker.connection import DIRECT_FRAME_BYTES, KafkaConnection
from zurau.config import BrokerConfig
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.file_region import FileRegion

PRODUCE, FETCH, CREATE_TOPICS = 0, 1, 19


@pytest_asyncio.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = Broker(BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}))
    await b.start()
    try:
        yield b
    finally:
        await b.stop()


async def _client(broker: Broker) -> KafkaWireClient:
    host, port = broker.listen_addresses[0]
    return await KafkaWireClient.connect(host, port)


async def _create(c: KafkaWireClient, name: str, partitions: int) -> None:
    body = {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "configs": []}],
        "timeout_ms": 5000,
    }
    r = await c.request(CREATE_TOPICS, 5, body)
    assert r["topics"][0]["error_code"] == 0, r


def _produce_body(topic: str, partition: int, batch: bytes) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }


def _fetch_body(topic: str, partitions: int, max_bytes: int = 64 << 20) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "fetch_offset": 0, "partition_max_bytes": 16 << 20}
                    for p in range(partitions)
                ],
            }
        ],
    }


def _values(data: bytes | memoryview) -> list[bytes | None]:
    out = []
    for pos, h in iter_batches(data):
        out.extend(r.value for r in decode_batch_records(memoryview(data)[pos : pos + h.size]))
    return out


def _big_batch(tag: int, records: int, size: int) -> tuple[bytes, list[bytes]]:
    values = [bytes([tag, i % 256]) * (size // 2) for i in range(records)]
    return build_batch([NewRecord(None, v) for v in values]), values


@pytest.mark.parametrize("piece", [1, 3, 4093, 65536])
async def test_large_and_small_frames_arriving_in_pieces(broker: Broker, piece: int) -> None:
    c = await _client(broker)
    try:
        await _create(c, "dribble", 1)
        small, small_values = _big_batch(1, 2, 10)
        large, large_values = _big_batch(2, 40, 4000)  # ~160 KB: received directly into its buffer
        assert len(large) > DIRECT_FRAME_BYTES
        frames = []
        cids = []
        for batch in (small, large, small, large):
            cid, frame = c.frame(PRODUCE, 9, _produce_body("dribble", 0, batch))
            cids.append(cid)
            frames.append(frame)
        stream = b"".join(frames)
        if piece >= 4093:
            # Few, larger writes: exercise frames split at every kind of boundary.
            for i in range(0, len(stream), piece):
                c.writer.write(stream[i : i + piece])
                await c.writer.drain()
                await asyncio.sleep(0)
        else:
            # Byte-sized pieces at the frame edges, then the rest in one go.
            for i in range(0, 64, piece):
                c.writer.write(stream[i : min(i + piece, 64)])
                await c.writer.drain()
                await asyncio.sleep(0.001)
            c.writer.write(stream[64:])
            await c.writer.drain()
        offsets = []
        for cid in cids:
            r = await asyncio.wait_for(c.read_response(PRODUCE, 9, cid), 10)
            part = r["responses"][0]["partition_responses"][0]
            assert part["error_code"] == 0
            offsets.append(part["base_offset"])
        assert offsets == [0, 2, 42, 44]
        r = await c.request(FETCH, 11, _fetch_body("dribble", 1), timeout=10)
        got = _values(r["responses"][0]["partitions"][0]["records"])
        assert got == small_values + large_values + small_values + large_values
    finally:
        await c.close()


async def test_fetch_of_many_megabytes_from_a_slow_reader(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Responses far larger than the socket buffer stay whole and ordered (sendfile, then fallback)."""
    sends: list[tuple[int, int]] = []
    real_sendfile = KafkaConnection._sendfile

    def recording_sendfile(self: KafkaConnection, region: FileRegion) -> int:
        sent = real_sendfile(self, region)
        sends.append((sent, region.size))
        return sent

    monkeypatch.setattr(KafkaConnection, "_sendfile", recording_sendfile)
    c = await _client(broker)
    try:
        await _create(c, "big", 4)
        expected: dict[int, list[bytes]] = {}
        for p in range(4):
            expected[p] = []
            for tag in range(3):
                batch, values = _big_batch(16 * p + tag, 100, 8000)  # ~0.8 MB per batch
                r = await c.request(PRODUCE, 9, _produce_body("big", p, batch), timeout=10)
                assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
                expected[p].extend(values)
        # Two fetches pipelined; read nothing for a while so the socket buffer fills up.
        cid1, f1 = c.frame(FETCH, 11, _fetch_body("big", 4))
        cid2, f2 = c.frame(FETCH, 4, _fetch_body("big", 4))
        c.writer.write(f1 + f2)
        await c.writer.drain()
        await asyncio.sleep(0.3)
        for cid, version in ((cid1, 11), (cid2, 4)):
            r = await asyncio.wait_for(c.read_response(FETCH, version, cid), 20)
            parts = {p["partition_index"]: p for p in r["responses"][0]["partitions"]}
            for p in range(4):
                assert parts[p]["error_code"] == 0
                assert _values(parts[p]["records"]) == expected[p]
        # Some regions went out whole by sendfile, and at least one was cut short by a full socket.
        assert any(sent == size for sent, size in sends)
        assert any(sent < size for sent, size in sends)
    finally:
        await c.close()


def test_file_region_outlives_the_descriptor_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"0123456789abcdef")
    fd = os.open(path, os.O_RDONLY)
    region = FileRegion(fd, 4, 8)
    os.close(fd)
    path.unlink()  # retention deleted the segment and closed the log's descriptor
    assert len(region) == 8
    assert bytes(region) == b"456789ab"
    assert region.read(5) == b"9ab"
    region.close()
    region.close()  # idempotent


def test_file_region_reports_truncation(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"x" * 100)
    fd = os.open(path, os.O_RDWR)
    region = FileRegion(fd, 50, 40)
    os.ftruncate(fd, 60)
    os.close(fd)
    with pytest.raises(EOFError):
        region.read()
    region.close()
