"""The tiered storage settings, typed (Kafka's ``RemoteLogManagerConfig`` and
``TopicBasedRemoteLogMetadataManagerConfig`` accessors), built once per broker config.

The remote log manager, its readers and the remote log metadata take this view instead of the
whole broker config; each field names its config in a comment. Plugin settings are the broker
properties under the two prefixes, prefix removed (Kafka's ``remoteStorageManagerProps`` /
``remoteLogMetadataManagerProps``). Invariant: built from a validated
:class:`~zurau.config.broker_config.BrokerConfig` (``BrokerConfig.remote_log_manager``); a broker
with ``remote.log.storage.system.enable=true`` and no
``remote.log.storage.manager.class.name`` does not start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from zurau.config.config_def import ConfigKey
from zurau.config.remote_log_configs import RLMM_CONFIGS
from zurau.config.types import ConfigError

__all__ = ["RemoteLogManagerConfig", "with_prefix"]

_RLMM: dict[str, ConfigKey] = {d.name: d for d in RLMM_CONFIGS}


def with_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The properties whose names start with ``prefix``, prefix removed."""
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix) and len(k) > len(prefix)}


@dataclass(frozen=True)
class RemoteLogManagerConfig:
    """Tiered storage settings; build with
    :attr:`BrokerConfig.remote_log_manager <zurau.config.broker_config.BrokerConfig.remote_log_manager>`."""

    system_enable: bool  # remote.log.storage.system.enable
    storage_manager_class_name: str | None  # remote.log.storage.manager.class.name
    metadata_manager_listener_name: str | None  # remote.log.metadata.manager.listener.name
    custom_metadata_max_bytes: int  # remote.log.metadata.custom.metadata.max.bytes
    index_file_cache_total_size_bytes: int  # remote.log.index.file.cache.total.size.bytes
    thread_pool_size: int  # remote.log.manager.thread.pool.size
    copier_thread_pool_size: int  # remote.log.manager.copier.thread.pool.size
    expiration_thread_pool_size: int  # remote.log.manager.expiration.thread.pool.size
    task_interval_ms: int  # remote.log.manager.task.interval.ms
    task_retry_backoff_ms: int  # remote.log.manager.task.retry.backoff.ms
    task_retry_backoff_max_ms: int  # remote.log.manager.task.retry.backoff.max.ms
    task_retry_jitter: float  # remote.log.manager.task.retry.jitter
    reader_threads: int  # remote.log.reader.threads
    reader_max_pending_tasks: int  # remote.log.reader.max.pending.tasks
    copy_max_bytes_per_second: int  # remote.log.manager.copy.max.bytes.per.second
    copy_quota_window_num: int  # remote.log.manager.copy.quota.window.num
    copy_quota_window_size_seconds: int  # remote.log.manager.copy.quota.window.size.seconds
    fetch_max_bytes_per_second: int  # remote.log.manager.fetch.max.bytes.per.second
    fetch_quota_window_num: int  # remote.log.manager.fetch.quota.window.num
    fetch_quota_window_size_seconds: int  # remote.log.manager.fetch.quota.window.size.seconds
    fetch_max_wait_ms: int  # remote.fetch.max.wait.ms
    list_offsets_request_timeout_ms: int  # remote.list.offsets.request.timeout.ms
    # The topic-based metadata manager's, from the rlmm-prefixed properties:
    metadata_topic_replication_factor: int  # remote.log.metadata.topic.replication.factor
    metadata_topic_num_partitions: int  # remote.log.metadata.topic.num.partitions
    metadata_topic_retention_ms: int  # remote.log.metadata.topic.retention.ms
    metadata_consume_wait_ms: int  # remote.log.metadata.consume.wait.ms
    metadata_init_retry_max_timeout_ms: int  # remote.log.metadata.initialization.retry.max.timeout.ms
    metadata_init_retry_interval_ms: int  # remote.log.metadata.initialization.retry.interval.ms
    #: remote.log.storage.manager.impl.prefix'd properties, prefix removed (the plugin's configure)
    storage_manager_props: Mapping[str, str] = field(default_factory=dict)
    #: remote.log.metadata.manager.impl.prefix'd properties, prefix removed
    metadata_manager_props: Mapping[str, str] = field(default_factory=dict)

    @property
    def copier_threads(self) -> int:
        """Threads copying segments: ``copier.thread.pool.size``, or ``thread.pool.size`` when it
        is -1 (Kafka 3.9's fallback)."""
        return self.copier_thread_pool_size if self.copier_thread_pool_size > 0 else self.thread_pool_size

    @property
    def expiration_threads(self) -> int:
        """Threads expiring remote segments (same fallback as :attr:`copier_threads`)."""
        return self.expiration_thread_pool_size if self.expiration_thread_pool_size > 0 else self.thread_pool_size

    @classmethod
    def defaults(cls, **overrides: Any) -> RemoteLogManagerConfig:
        """Kafka's defaults with ``overrides`` (field names), for code and tests that build a
        remote log manager without a broker config."""
        from zurau.config.broker_config import BrokerConfig  # broker_config imports this module

        return replace(BrokerConfig({}).remote_log_manager, **overrides)

    @classmethod
    def from_values(cls, v: Mapping[str, Any], props: Mapping[str, str]) -> RemoteLogManagerConfig:
        """From a broker config's typed values ``v`` and its supplied properties ``props``."""
        if v["remote.log.storage.system.enable"] and not v["remote.log.storage.manager.class.name"]:
            raise ConfigError.invalid(
                "remote.log.storage.manager.class.name",
                None,
                "must be set when remote.log.storage.system.enable=true (file, s3, an entry point "
                "of the group zurau.remote_storage or module:attribute)",
            )
        rsm = with_prefix(props, v["remote.log.storage.manager.impl.prefix"])
        rlmm = with_prefix(props, v["remote.log.metadata.manager.impl.prefix"])
        m = {n: d.parse(rlmm[n]) if n in rlmm else d.default for n, d in _RLMM.items()}
        retention = m["remote.log.metadata.topic.retention.ms"]
        if retention != -1 and retention <= 0:
            prefixed = v["remote.log.metadata.manager.impl.prefix"] + "remote.log.metadata.topic.retention.ms"
            raise ConfigError.invalid(prefixed, retention, "must be -1 (unlimited) or positive")
        return cls(
            system_enable=v["remote.log.storage.system.enable"],
            storage_manager_class_name=v["remote.log.storage.manager.class.name"],
            metadata_manager_listener_name=v["remote.log.metadata.manager.listener.name"],
            custom_metadata_max_bytes=v["remote.log.metadata.custom.metadata.max.bytes"],
            index_file_cache_total_size_bytes=v["remote.log.index.file.cache.total.size.bytes"],
            thread_pool_size=v["remote.log.manager.thread.pool.size"],
            copier_thread_pool_size=v["remote.log.manager.copier.thread.pool.size"],
            expiration_thread_pool_size=v["remote.log.manager.expiration.thread.pool.size"],
            task_interval_ms=v["remote.log.manager.task.interval.ms"],
            task_retry_backoff_ms=v["remote.log.manager.task.retry.backoff.ms"],
            task_retry_backoff_max_ms=v["remote.log.manager.task.retry.backoff.max.ms"],
            task_retry_jitter=v["remote.log.manager.task.retry.jitter"],
            reader_threads=v["remote.log.reader.threads"],
            reader_max_pending_tasks=v["remote.log.reader.max.pending.tasks"],
            copy_max_bytes_per_second=v["remote.log.manager.copy.max.bytes.per.second"],
            copy_quota_window_num=v["remote.log.manager.copy.quota.window.num"],
            copy_quota_window_size_seconds=v["remote.log.manager.copy.quota.window.size.seconds"],
            fetch_max_bytes_per_second=v["remote.log.manager.fetch.max.bytes.per.second"],
            fetch_quota_window_num=v["remote.log.manager.fetch.quota.window.num"],
            fetch_quota_window_size_seconds=v["remote.log.manager.fetch.quota.window.size.seconds"],
            fetch_max_wait_ms=v["remote.fetch.max.wait.ms"],
            list_offsets_request_timeout_ms=v["remote.list.offsets.request.timeout.ms"],
            metadata_topic_replication_factor=m["remote.log.metadata.topic.replication.factor"],
            metadata_topic_num_partitions=m["remote.log.metadata.topic.num.partitions"],
            metadata_topic_retention_ms=retention,
            metadata_consume_wait_ms=m["remote.log.metadata.consume.wait.ms"],
            metadata_init_retry_max_timeout_ms=m["remote.log.metadata.initialization.retry.max.timeout.ms"],
            metadata_init_retry_interval_ms=m["remote.log.metadata.initialization.retry.interval.ms"],
            storage_manager_props=rsm,
            metadata_manager_props=rlmm,
        )
