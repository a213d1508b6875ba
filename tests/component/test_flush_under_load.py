"""The maintenance flush running flat out while produces append and roll segments.

The broker flushes every 1 ms (``log.flush.scheduler.interval.ms``, ``log.flush.interval.ms``)
and checkpoints every 1 ms while producers fill small segments (an index entry per batch, a
roll whenever the 240-byte time index is full). Several times meanwhile, and once at the end, the data directory is copied as
it is on disk (no clean shutdown: a kill-like image). Each image is then checked:

* every index file of a segment the checkpointed recovery point trusts (it lies wholly below it,
  so a restart does not rescan it) holds whole entries, each pointing at the start of the batch
  whose last offset it names, in increasing order; time-index timestamps increase;
* reopened from its checkpoints (an unclean start: recovery from the recovery point), each
  partition holds every record acknowledged before the image was taken, at its offset.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from tests.component.kafka_wire import KafkaWireClient
from zurau.embedded import EmbeddedBroker
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.checkpoint import read_offsets_checkpoint
from zurau.storage.log_manager import RECOVERY_POINT_CHECKPOINT, LogManager
from zurau.storage.log_segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment

PRODUCE, CREATE_TOPICS = 0, 19
TOPIC = "stress"
PARTITIONS = 2
REQUESTS = 900  # per partition, 5 records each
RECORDS = 5

pytestmark = pytest.mark.slow


def value(partition: int, seq: int) -> bytes:
    return b"p%d-%07d-" % (partition, seq) + b"x" * 60


async def produce(c: KafkaWireClient, partition: int, first_seq: int) -> int:
    now = int(time.time() * 1000)
    batch = build_batch([(None, value(partition, first_seq + i), (), now) for i in range(RECORDS)])
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}],
    }
    r = await c.request(PRODUCE, 9, body)
    p = r["responses"][0]["partition_responses"][0]
    assert p["error_code"] == 0, p
    return int(p["base_offset"])


def check_trusted_indexes(partition_dir: Path, recovery_point: int) -> int:
    """Check the index files of the segments wholly below ``recovery_point``; return how many."""
    bases = sorted(int(n[: -len(LOG_SUFFIX)]) for n in os.listdir(partition_dir) if n.endswith(LOG_SUFFIX))
    checked = 0
    for base, nxt in zip(bases, bases[1:], strict=False):
        if nxt > recovery_point:
            break
        seg = LogSegment.open(
            partition_dir, base, max_offset_index_entries=1 << 20, max_time_index_entries=1 << 20, now_ms=0
        )
        try:
            headers = {pos: h for pos, h in seg.iter_headers()}
            raw = (partition_dir / f"{base:020d}{INDEX_SUFFIX}").read_bytes()
            assert len(raw) % 8 == 0, f"torn offset index in {partition_dir} at {base}"
            last = (-1, -1)
            for rel, position in struct.iter_unpack(">ii", raw):
                assert (rel, position) > last and rel > last[0] and position > last[1], "increasing entries"
                h = headers.get(position)
                assert h is not None and h.last_offset == base + rel, f"entry ({rel}, {position}) of {base}"
                last = (rel, position)
            times = (partition_dir / f"{base:020d}{TIME_INDEX_SUFFIX}").read_bytes()
            assert len(times) % 12 == 0
            stamps = [t for t, _rel in struct.iter_unpack(">qi", times)]
            assert stamps == sorted(set(stamps)), "strictly increasing time index"
        finally:
            seg.close_fd()
        checked += 1
    return checked


def read_values(log_manager: LogManager, partition: int) -> dict[int, bytes]:
    log = log_manager.get(TOPIC, partition)
    assert log is not None
    out: dict[int, bytes] = {}
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, max_offset=log.log_end_offset)
        for pos, h in iter_batches(data):
            for r in decode_batch_records(data[pos : pos + h.size]):
                out[r.offset] = bytes(r.value or b"")
            offset = h.next_offset
    return out


async def test_flushing_every_millisecond_while_appending_and_rolling(tmp_path: Path) -> None:
    data = tmp_path / "data"
    images: list[tuple[Path, dict[int, dict[int, bytes]]]] = []
    acked: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
    configs = {
        "log.flush.scheduler.interval.ms": 1,
        "log.flush.interval.ms": 1,
        "log.flush.offset.checkpoint.interval.ms": 1,
        "log.index.interval.bytes": 128,  # an entry per batch,
        "log.index.size.max.bytes": 240,  # and a roll every 20 batches (full time index)
    }

    def take_image() -> None:
        """Copy the data directory now (on the loop: between two appends)."""
        image = tmp_path / f"image-{len(images)}"
        shutil.copytree(data, image, ignore=shutil.ignore_patterns("*.tmp"))
        images.append((image, {p: dict(a) for p, a in acked.items()}))

    async with EmbeddedBroker(data, **configs) as b:
        host, port = b.broker.listen_addresses[0]
        async with await KafkaWireClient.connect(host, port) as admin:
            body = {
                "topics": [
                    {"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 1, "configs": []}
                ],
                "timeout_ms": 5000,
            }
            assert (await admin.request(CREATE_TOPICS, 5, body))["topics"][0]["error_code"] == 0

        async def producer(partition: int) -> None:
            async with await KafkaWireClient.connect(host, port) as c:
                for i in range(REQUESTS):
                    base = await produce(c, partition, i * RECORDS)
                    for k in range(RECORDS):
                        acked[partition][base + k] = value(partition, i * RECORDS + k)

        async def imager() -> None:
            while len(images) < 4:
                await asyncio.sleep(0.2)
                take_image()

        tasks = [asyncio.create_task(producer(p)) for p in range(PARTITIONS)]
        snapshots = asyncio.create_task(imager())
        await asyncio.gather(*tasks)
        snapshots.cancel()
        await asyncio.sleep(0.05)  # a few more maintenance rounds over the quiet log
        take_image()
        logs = [b.broker.log_manager.get(TOPIC, p) for p in range(PARTITIONS)]
        assert all(lg is not None and lg.segment_count > 20 for lg in logs), "many rolls happened"

    trusted = 0
    for image, acked_then in images:
        recovery_points = read_offsets_checkpoint(image / RECOVERY_POINT_CHECKPOINT)
        for p in range(PARTITIONS):
            rp = recovery_points.get((TOPIC, p), 0)
            trusted += check_trusted_indexes(image / f"{TOPIC}-{p}", rp)
        mgr = LogManager([image], lambda: int(time.time() * 1000))
        try:
            assert not any(mgr.had_clean_shutdown.values()), "a kill-like image, recovered as such"
            for p in range(PARTITIONS):
                got = read_values(mgr, p)
                missing = [o for o, v in acked_then[p].items() if got.get(o) != v]
                assert not missing, f"{image.name} {TOPIC}-{p}: acknowledged records lost at {missing[:5]}"
                assert sorted(got) == list(range(len(got))), "dense offsets"
        finally:
            mgr.close()
    assert trusted > 0, "the recovery point moved on while appending (segments were trusted)"
    final_rps = read_offsets_checkpoint(images[-1][0] / RECOVERY_POINT_CHECKPOINT)
    assert all(final_rps[(TOPIC, p)] > 0 for p in range(PARTITIONS))
