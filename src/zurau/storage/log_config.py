"""Per-topic log configuration: Kafka's topic configs with Kafka's defaults.

Field names are the snake_case of Kafka's topic config names (``segment.bytes`` ->
``segment_bytes``). A ``LogConfig`` is immutable; a config change builds a new one and hands it to
``PartitionLog.update_config``. Segment-shape settings (``segment_bytes``, ``segment_index_bytes``,
``index_interval_bytes``) apply to appends made after the change, as in Kafka.

Defaults are those of Kafka 3.6+ (``message.timestamp.before.max.ms`` and
``message.timestamp.after.max.ms`` replaced ``message.timestamp.difference.max.ms`` in 3.6 and both
default to Long.MAX_VALUE there; Kafka 4.0 lowered the ``after`` default to one hour).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from zurau.protocol.errors import InvalidConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Kafka topic configs that the local log honours (names: snake_case of Kafka's)."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 60 * 60 * 1000  # -1 = unlimited
    retention_bytes: int = -1  # -1 = unlimited
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = CREATE_TIME
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    compression_gzip_level: int = -1  # -1: zlib's default
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    unclean_leader_election_enable: bool = False
    preallocate: bool = False
    # Tiered storage (KIP-405, KIP-950). ``remote_storage_enable`` is the log's effective mode:
    # the topic's ``remote.storage.enable`` and the broker's ``remote.log.storage.system.enable``
    # (the broker builds it so; a broker without the remote tier keeps such a log local).
    remote_storage_enable: bool = False
    local_retention_ms: int = -2  # -2 = retention.ms
    local_retention_bytes: int = -2  # -2 = retention.bytes
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False

    def __post_init__(self) -> None:
        if self.message_timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise InvalidConfigError(
                f"message.timestamp.type must be CreateTime or LogAppendTime, not {self.message_timestamp_type!r}"
            )
        policies = {p.strip() for p in self.cleanup_policy.split(",") if p.strip()}
        if not policies or not policies <= {"delete", "compact"}:
            raise InvalidConfigError(f"cleanup.policy {self.cleanup_policy!r} is not delete/compact")
        if not 14 <= self.segment_bytes <= INT_MAX:
            raise InvalidConfigError(f"segment.bytes {self.segment_bytes} is out of range [14, {INT_MAX}]")
        if self.segment_index_bytes < TIME_INDEX_ENTRY_SIZE:
            raise InvalidConfigError(f"segment.index.bytes {self.segment_index_bytes} is too small")
        if self.index_interval_bytes < 0 or self.max_message_bytes < 0:
            raise InvalidConfigError("index.interval.bytes and max.message.bytes must be >= 0")
        if self.segment_ms < 1 or self.flush_messages < 1 or self.flush_ms < 0:
            raise InvalidConfigError("segment.ms and flush.messages must be >= 1, flush.ms >= 0")
        if self.min_insync_replicas < 1:
            raise InvalidConfigError("min.insync.replicas must be >= 1")
        if self.local_retention_ms < -2 or self.local_retention_bytes < -2:
            raise InvalidConfigError("local.retention.ms and local.retention.bytes must be >= -2")

    # -- derived ---------------------------------------------------------------------------------

    @property
    def log_append_time(self) -> bool:
        """True when the broker stamps batches with its own clock (``LogAppendTime``)."""
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def compression_level(self) -> int | None:
        """The ``compression.<codec>.level`` of the codec ``compression.type`` names (None for
        ``producer``, ``uncompressed`` and ``snappy``, which have no level)."""
        levels = {
            "gzip": self.compression_gzip_level,
            "lz4": self.compression_lz4_level,
            "zstd": self.compression_zstd_level,
        }
        return levels.get(self.compression_type)

    @property
    def delete_enabled(self) -> bool:
        """True when ``cleanup.policy`` includes ``delete`` (time/size retention applies)."""
        return "delete" in self.cleanup_policy

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def remote_copy_enabled(self) -> bool:
        """The remote tier is on and still receives segments (Kafka's
        ``remoteLogEnabledAndRemoteCopyEnabled``): ``remote.storage.enable`` without
        ``remote.log.copy.disable``. Only then does local retention wait for uploads and leave
        the log start offset alone."""
        return self.remote_storage_enable and not self.remote_log_copy_disable

    @property
    def effective_local_retention_ms(self) -> int:
        """``local.retention.ms``, with -2 meaning ``retention.ms`` (Kafka's ``localRetentionMs``)."""
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def effective_local_retention_bytes(self) -> int:
        """``local.retention.bytes``, with -2 meaning ``retention.bytes``."""
        return self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes

    @property
    def max_segment_ms(self) -> int:
        """The age at which the active segment rolls: ``segment.ms``, or ``max.compaction.lag.ms``
        if smaller on a compacted topic (Kafka's ``LogConfig.maxSegmentMs``: the active segment is
        never cleaned, so it must close for its records to be compacted within the lag)."""
        if self.compact_enabled and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def max_offset_index_entries(self) -> int:
        return self.segment_index_bytes // OFFSET_INDEX_ENTRY_SIZE

    @property
    def max_time_index_entries(self) -> int:
        return self.segment_index_bytes // TIME_INDEX_ENTRY_SIZE

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def from_topic_config(cls, configs: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        """Build from Kafka-named topic configs (``{"retention.ms": "1000", ...}``).

        Values may be strings (as in CreateTopics/AlterConfigs) or already-typed. Names this class
        does not model are ignored; a malformed value raises InvalidConfigError. ``base`` supplies
        the values of configs not given (default: Kafka's defaults).
        """
        values: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(cls)}
        for name, raw in configs.items():
            key = name.replace(".", "_")
            if key not in types or raw is None:
                continue
            kind = types[key]
            try:
                if kind == "bool":
                    values[key] = raw if isinstance(raw, bool) else str(raw).strip().lower() == "true"
                elif kind == "int":
                    values[key] = int(raw)
                elif kind == "float":
                    values[key] = float(raw)
                else:
                    values[key] = str(raw)
            except ValueError:
                raise InvalidConfigError(f"invalid value {raw!r} for topic config {name}") from None
        start = base if base is not None else cls()
        current = {f.name: getattr(start, f.name) for f in fields(cls)}
        current.update(values)
        return cls(**current)
