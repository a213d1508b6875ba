"""Zurau's storage alone: does append cost grow with the log, does fetch-by-offset stay logarithmic?

Drives :class:`~zurau.storage.partition_log.PartitionLog` in-process, the way the broker does
(``validate_batches`` once, then ``append(validated=...)``; ``read_slice`` for fetches), on a
real directory. No sockets, so the numbers isolate the log's own cost.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from zurau.protocol.records.batch import validate_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.storage.log_config import LogConfig
from zurau.storage.partition_log import PartitionLog


@dataclass
class LogSizePoint:
    """Costs measured while the log held about ``log_mb`` MB in ``segments`` segments."""

    log_mb: float
    segments: int
    append_us_per_batch: float
    append_mb_per_s: float
    read_slice_us: float
    read_us_per_fetch: float


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def log_size_scaling(
    total_mb: int,
    *,
    checkpoints: int = 6,
    segment_mb: int = 64,
    batch_records: int = 16,
    record_size: int = 1024,
    lookups: int = 2000,
    workdir: Path | None = None,
) -> list[LogSizePoint]:
    """Grow one log to ``total_mb`` MB; at each checkpoint time appends and random fetches.

    Appends: ``batch_records`` records of ``record_size`` bytes per batch (about 16 KiB), timed
    over the stretch since the previous checkpoint. Fetches: ``lookups`` ``read_slice`` calls at
    uniformly random offsets over the whole log (1 MiB max bytes), and the same with the bytes
    read (``read``), timed at the checkpoint.
    """
    root = Path(tempfile.mkdtemp(prefix="zurau-logsize-", dir=workdir))
    rng = random.Random(1)
    cfg = LogConfig(segment_bytes=segment_mb * 1024 * 1024)
    value = bytes(rng.getrandbits(8) for _ in range(record_size))
    batch = build_batch([NewRecord(None, value, (), _now_ms()) for _ in range(batch_records)])
    log = PartitionLog.open(root / "t-0", "t", 0, cfg, now_ms=_now_ms())
    points: list[LogSizePoint] = []
    try:
        step = total_mb * 1e6 / checkpoints
        target = 0.0
        size = 0
        for _ in range(checkpoints):
            target += step
            appended = 0
            t0 = time.process_time()
            while size < target:
                validated = validate_batches(batch)
                log.append(batch, leader_epoch=0, now_ms=_now_ms(), validated=validated)
                size += len(batch)
                appended += 1
            dt = time.process_time() - t0
            log.update_high_watermark(log.log_end_offset)
            end = log.log_end_offset
            offsets = [rng.randrange(0, end) for _ in range(lookups)]
            t1 = time.process_time()
            for o in offsets:
                log.read_slice(o, 1 << 20, max_offset=end)
            t2 = time.process_time()
            for o in offsets[: lookups // 4]:
                log.read(o, 1 << 20, max_offset=end)
            t3 = time.process_time()
            points.append(
                LogSizePoint(
                    log_mb=log.size_in_bytes / 1e6,
                    segments=log.segment_count,
                    append_us_per_batch=dt / max(appended, 1) * 1e6,
                    append_mb_per_s=appended * len(batch) / 1e6 / dt if dt > 0 else 0.0,
                    read_slice_us=(t2 - t1) / lookups * 1e6,
                    read_us_per_fetch=(t3 - t2) / max(lookups // 4, 1) * 1e6,
                )
            )
    finally:
        log.close()
        shutil.rmtree(root, ignore_errors=True)
    return points
