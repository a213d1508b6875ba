"""Damaged log tails: the broker recovers to the last whole valid batch and carries on.

A broker in its own process gets N batches (one Produce per batch, so batch boundaries are known),
is stopped (SIGTERM, or SIGKILL), and the last segment file of the partition is damaged:
truncated mid-batch, a byte flipped inside the last batch (its CRC-32C fails), or garbage zeros
appended. After a restart the broker must listen, the partition must end exactly after the last
whole valid batch, every earlier batch must read back byte-identical, and a new produce must land
at that end offset. Deleted ``.index`` files must be rebuilt.

A flipped byte after a *clean* stop is not covered: like Kafka, a broker that shut down cleanly
trusts its flushed segments and does not re-CRC them at start-up.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.component.kafka_wire import KafkaWireClient
from tests.support.broker_process import BrokerProcess
from zurau.protocol.records.builder import build_batch

pytestmark = pytest.mark.slow

_HEAD = struct.Struct(">qi")  # base_offset, batch_length
LOG_OVERHEAD = 12

PRODUCE_V = 9
FETCH_V = 12
CREATE_TOPICS_V = 5

N_BATCHES = 12
RECORDS_PER_BATCH = 4


@pytest.fixture
def bp(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data")
    b.start()
    try:
        yield b
    finally:
        b.kill()


# =========================================================================== wire helpers


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _client(bp: BrokerProcess) -> KafkaWireClient:
    return await KafkaWireClient.connect("127.0.0.1", bp.port, client_id="torn-tail")


async def create_topic(bp: BrokerProcess, topic: str, configs: dict[str, str] | None = None) -> None:
    async with await _client(bp) as c:
        resp = await c.request(
            19,
            CREATE_TOPICS_V,
            {
                "topics": [
                    {
                        "name": topic,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ],
                "timeout_ms": 10_000,
                "validate_only": False,
            },
        )
        assert resp["topics"][0]["error_code"] == 0, resp


def make_batch(i: int, records: int = RECORDS_PER_BATCH, value_size: int = 32) -> bytes:
    return build_batch(
        [
            (
                f"k{i}-{j}".encode(),
                f"batch-{i:05d}-record-{j}-".encode() + b"v" * value_size,
                [],
                1_700_000_000_000 + i,
            )
            for j in range(records)
        ]
    )


async def produce(bp: BrokerProcess, topic: str, batches: list[bytes]) -> list[int]:
    """Produce each batch in its own request (acks=all); return their base offsets."""
    offsets = []
    async with await _client(bp) as c:
        for batch in batches:
            resp = await c.request(
                0,
                PRODUCE_V,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout_ms": 10_000,
                    "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
                },
            )
            part = resp["responses"][0]["partition_responses"][0]
            assert part["error_code"] == 0, part
            offsets.append(part["base_offset"])
    return offsets


def split_batches(data: bytes) -> list[tuple[int, bytes]]:
    """(base_offset, batch bytes) of each whole batch in ``data`` (a trailing partial one dropped)."""
    out = []
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD:
        base, length = _HEAD.unpack_from(data, pos)
        end = pos + LOG_OVERHEAD + length
        if end > len(data):
            break
        out.append((base, bytes(data[pos:end])))
        pos = end
    return out


async def fetch_all(bp: BrokerProcess, topic: str) -> tuple[list[tuple[int, bytes]], int]:
    """Every batch of partition 0 from offset 0 up to the high watermark, and that watermark."""
    batches: list[tuple[int, bytes]] = []
    offset = 0
    async with await _client(bp) as c:
        while True:
            resp = await c.request(
                1,
                FETCH_V,
                {
                    "replica_id": -1,
                    "max_wait_ms": 0,
                    "min_bytes": 0,
                    "max_bytes": 64 << 20,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic": topic,
                            "partitions": [
                                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 16 << 20}
                            ],
                        }
                    ],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                },
            )
            part = resp["responses"][0]["partitions"][0]
            assert part["error_code"] == 0, part
            hw = part["high_watermark"]
            got = split_batches(bytes(part["records"] or b""))
            if not got:
                assert offset >= hw, f"fetch at {offset} returned nothing below the high watermark {hw}"
                return batches, hw
            batches.extend(got)
            last_base, last = got[-1]
            offset = last_base + struct.unpack_from(">i", last, 23)[0] + 1


def same_batch(stored: bytes, sent: bytes) -> bool:
    """Equal except for base_offset and partition_leader_epoch (patched by the broker)."""
    return stored[8:12] == sent[8:12] and stored[16:] == sent[16:]


# =========================================================================== file helpers


def partition_dir(bp: BrokerProcess, topic: str) -> Path:
    d = bp.data_dir / f"{topic}-0"
    assert d.is_dir(), f"no partition dir {d}"
    return d


def segment_logs(bp: BrokerProcess, topic: str) -> list[Path]:
    return sorted(partition_dir(bp, topic).glob("*.log"))


def file_batches(path: Path) -> list[tuple[int, int, int]]:
    """(position, size, base_offset) of each whole batch in a segment file."""
    data = path.read_bytes()
    out = []
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD:
        base, length = _HEAD.unpack_from(data, pos)
        size = LOG_OVERHEAD + length
        if length <= 0 or pos + size > len(data):
            break
        out.append((pos, size, base))
        pos += size
    return out


def stop_broker(bp: BrokerProcess, mode: str) -> None:
    if mode == "clean":
        code = bp.stop()
        assert code == 0, f"broker exited with {code} on SIGTERM:\n{bp.log_text()[-3000:]}"
    else:
        bp.kill()


def damage(path: Path, how: str) -> bool:
    """Damage the last batch of ``path``; return True if that batch is lost (False: it stays)."""
    batches = file_batches(path)
    assert batches and batches[-1][0] + batches[-1][1] == path.stat().st_size, (
        "segment not on a batch boundary"
    )
    pos, size, _base = batches[-1]
    if how == "truncate-mid-records":
        os.truncate(path, pos + size // 2 + 7)
        return True
    if how == "truncate-mid-header":
        os.truncate(path, pos + 30)
        return True
    if how == "flip-crc":
        with open(path, "r+b") as f:
            f.seek(pos + size - 5)
            b = f.read(1)
            f.seek(pos + size - 5)
            f.write(bytes([b[0] ^ 0x5A]))
        return True
    if how == "zeros":
        with open(path, "ab") as f:
            f.write(b"\x00" * 5000)
        return False
    raise ValueError(how)


# =========================================================================== tests

CASES = [
    ("clean", "truncate-mid-records"),
    ("clean", "truncate-mid-header"),
    ("clean", "zeros"),
    ("kill", "truncate-mid-records"),
    ("kill", "truncate-mid-header"),
    ("kill", "zeros"),
    ("kill", "flip-crc"),
]


@pytest.mark.parametrize(("mode", "how"), CASES)
def test_damaged_tail_is_cut_at_last_valid_batch(bp: BrokerProcess, mode: str, how: str) -> None:
    topic = f"torn-{uuid.uuid4().hex[:8]}"
    run(create_topic(bp, topic))
    sent = [make_batch(i) for i in range(N_BATCHES)]
    offsets = run(produce(bp, topic, sent))
    assert offsets == [i * RECORDS_PER_BATCH for i in range(N_BATCHES)]

    stop_broker(bp, mode)
    last_lost = damage(segment_logs(bp, topic)[-1], how)
    survivors = N_BATCHES - 1 if last_lost else N_BATCHES
    expected_end = survivors * RECORDS_PER_BATCH

    bp.start()
    batches, hw = run(fetch_all(bp, topic))
    assert hw == expected_end, f"{how} after {mode} stop: high watermark {hw}, expected {expected_end}"
    assert [b for b, _ in batches] == offsets[:survivors]
    for (base, stored), original in zip(batches, sent[:survivors], strict=True):
        assert same_batch(stored, original), f"batch at {base} changed"

    # New produces continue from the end of the last whole valid batch.
    new = [make_batch(1000 + i) for i in range(2)]
    new_offsets = run(produce(bp, topic, new))
    assert new_offsets == [expected_end, expected_end + RECORDS_PER_BATCH]
    batches, hw = run(fetch_all(bp, topic))
    assert hw == expected_end + 2 * RECORDS_PER_BATCH
    assert [b for b, _ in batches] == offsets[:survivors] + new_offsets
    for (_, stored), original in zip(batches, sent[:survivors] + new, strict=True):
        assert same_batch(stored, original)

    # And it all survives one more restart.
    bp.stop()
    bp.start()
    batches2, hw2 = run(fetch_all(bp, topic))
    assert (batches2, hw2) == (batches, hw)


@pytest.mark.parametrize("mode", ["clean", "kill"])
def test_missing_index_files_are_rebuilt(bp: BrokerProcess, mode: str) -> None:
    """Several 1 MiB segments; every .index removed; reads from any offset still work."""
    topic = f"idx-{uuid.uuid4().hex[:8]}"
    run(create_topic(bp, topic, {"segment.bytes": str(1 << 20), "index.interval.bytes": "4096"}))
    # ~2.6 MiB in ~64 KiB batches: three segments.
    sent = [make_batch(i, records=16, value_size=4000) for i in range(40)]
    offsets = run(produce(bp, topic, sent))
    logs = segment_logs(bp, topic)
    assert len(logs) >= 3, f"expected several segments, got {logs}"

    stop_broker(bp, mode)
    indexes = sorted(partition_dir(bp, topic).glob("*.index"))
    assert len(indexes) == len(logs)
    for p in indexes:
        p.unlink()

    bp.start()
    batches, hw = run(fetch_all(bp, topic))
    assert hw == 40 * 16
    assert [b for b, _ in batches] == offsets
    for (_, stored), original in zip(batches, sent, strict=True):
        assert same_batch(stored, original)
    for p in indexes:
        assert p.exists(), f"{p.name} was not rebuilt"

    # Index-driven lookups: fetching from an offset in the middle of each segment finds its batch.
    async def fetch_from(offset: int) -> int:
        async with await _client(bp) as c:
            resp = await c.request(
                1,
                FETCH_V,
                {
                    "max_wait_ms": 0,
                    "min_bytes": 0,
                    "max_bytes": 1 << 20,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic": topic,
                            "partitions": [
                                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                            ],
                        }
                    ],
                },
            )
            part = resp["responses"][0]["partitions"][0]
            assert part["error_code"] == 0, part
            return split_batches(bytes(part["records"]))[0][0]

    for target in (0, 5 * 16 + 3, 17 * 16 + 1, 33 * 16 + 15, 39 * 16):
        assert run(fetch_from(target)) == target - target % 16

    new_offsets = run(produce(bp, topic, [make_batch(500)]))
    assert new_offsets == [40 * 16]


def test_kill9_right_after_produce_then_torn_tail_twice(bp: BrokerProcess) -> None:
    """Two crash-and-tear cycles in a row: recovery leaves a log that recovers again."""
    topic = f"torn2-{uuid.uuid4().hex[:8]}"
    run(create_topic(bp, topic))
    sent = [make_batch(i) for i in range(6)]
    run(produce(bp, topic, sent))
    expected_end = 6 * RECORDS_PER_BATCH
    for cycle in range(2):
        bp.kill()
        damage(segment_logs(bp, topic)[-1], "truncate-mid-records")
        expected_end -= RECORDS_PER_BATCH
        bp.start()
        t0 = time.monotonic()
        _batches, hw = run(fetch_all(bp, topic))
        assert hw == expected_end, f"cycle {cycle}: high watermark {hw}, expected {expected_end}"
        assert time.monotonic() - t0 < 10
        more = run(produce(bp, topic, [make_batch(100 + cycle)]))
        assert more == [expected_end]
        expected_end += RECORDS_PER_BATCH
