"""Record batches and partition logs for the storage and replication unit tests.

One fixed wall clock (:data:`NOW`) so that timestamps, retention and expiration are decided by the
test, never by the machine's clock. :func:`make_batch` builds ``n`` records keyed ``k0``, ``k1``,
...; :func:`open_log` opens (or recovers) partition ``t-0`` in the directory given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zurau.protocol.records.builder import build_batch
from zurau.storage.log_config import LogConfig
from zurau.storage.partition_log import PartitionLog

NOW = 1_700_000_000_000


def make_batch(n: int = 1, *, ts: int = NOW, step: int = 1, value: bytes = b"v" * 10, **build: Any) -> bytes:
    """One batch of ``n`` records ``(b"k<i>", value)`` stamped ``ts + i * step``; ``build``
    goes to :func:`~zurau.protocol.records.builder.build_batch` (``base_offset``,
    ``partition_leader_epoch``, ``producer_id``, ...)."""
    return build_batch([(b"k%d" % i, value, [], ts + i * step) for i in range(n)], **build)


def open_log(
    directory: Path,
    config: LogConfig | None = None,
    *,
    recovery_point: int = 0,
    log_start_offset: int | None = None,
    high_watermark: int | None = None,
    had_clean_shutdown: bool = False,
    now_ms: int = NOW,
    **log_config: Any,
) -> PartitionLog:
    """Partition ``t-0`` in ``directory`` with ``config``, or ``LogConfig(**log_config)``."""
    if config is not None and log_config:
        raise TypeError("give either a LogConfig or its fields, not both")
    return PartitionLog.open(
        directory,
        "t",
        0,
        config if config is not None else LogConfig(**log_config),
        recovery_point,
        log_start_offset,
        now_ms=now_ms,
        high_watermark=high_watermark,
        had_clean_shutdown=had_clean_shutdown,
    )
