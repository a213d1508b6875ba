"""DescribeLogDirs: this broker's log directories and the partition replicas each one holds.

One result per configured log dir, in ``log.dirs`` order, as Kafka's
``ReplicaManager.describeLogDirs``: each hosted partition that the request names (a null
``topics`` names them all; unknown topics or partitions are simply absent) with its size on disk
(the sum of its segment files), ``offset_lag`` 0 (no future replicas: there is no replica
movement between dirs) and ``is_future_key`` false. From v4 each dir reports its total and usable
bytes (``os.statvfs``: usable = available to an unprivileged writer, as Java's
``FileStore.getUsableSpace``); a dir that cannot be read answers KAFKA_STORAGE_ERROR. The top-level
error (v3+) is NONE. v5's ``is_cordoned`` is false: Zurau has no cordoned dirs.
"""

from __future__ import annotations

import os
from pathlib import Path

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.messages import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponseResults,
    DescribeLogDirsResponseResultsTopicsPartitions,
)

API_KEY = ApiKey.DESCRIBE_LOG_DIRS


def _space(path: Path) -> tuple[int, int]:
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def handle(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "results": []}
    requested = req["topics"]
    wanted: dict[str, set[int]] | None = None
    if requested is not None:
        wanted = {}
        for t in requested:
            wanted.setdefault(t["topic"], set()).update(t["partitions"])

    by_dir: dict[Path, dict[str, list[DescribeLogDirsResponseResultsTopicsPartitions]]] = {}
    for log_dir, replicas in ctx.replica_manager.describe_log_dirs().items():
        topics: dict[str, list[DescribeLogDirsResponseResultsTopicsPartitions]] = by_dir.setdefault(log_dir, {})
        for r in replicas:
            if wanted is not None and r.partition not in wanted.get(r.topic, ()):
                continue
            topics.setdefault(r.topic, []).append(
                {
                    "partition_index": r.partition,
                    "partition_size": r.size,
                    "offset_lag": 0,
                    "is_future_key": False,
                }
            )

    results: list[DescribeLogDirsResponseResults] = []
    for log_dir, topics in by_dir.items():
        entry: DescribeLogDirsResponseResults = {
            "error_code": 0,
            "log_dir": str(log_dir.absolute()),
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            "total_bytes": -1,
            "usable_bytes": -1,
            "is_cordoned": False,
        }
        try:
            entry["total_bytes"], entry["usable_bytes"] = _space(log_dir)
        except OSError:
            entry["error_code"] = KafkaStorageError.code
            entry["topics"] = []
        results.append(entry)
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}
