"""Typed views of the coordinators' settings (Kafka's ``GroupCoordinatorConfig`` and
``TransactionStateManagerConfig`` accessors), built once per broker config.

A coordinator takes one of these instead of the whole broker config: every field is typed and
named after what it means, with the config it comes from in a comment. Invariant: a view is
built from a validated :class:`~zurau.config.broker_config.BrokerConfig`'s typed values (see
``BrokerConfig.group_coordinator`` / ``BrokerConfig.transaction_coordinator``) and is immutable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zurau.config.shorthand import MS_PER_MINUTE

__all__ = ["GroupCoordinatorConfig", "ShareCoordinatorConfig", "TransactionCoordinatorConfig"]


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    """The group coordinator's settings, typed (Kafka's ``GroupCoordinatorConfig`` and
    ``OffsetConfig``); the config names are in the comments. Build with
    :attr:`BrokerConfig.group_coordinator <zurau.config.broker_config.BrokerConfig.group_coordinator>`."""

    num_partitions: int  # offsets.topic.num.partitions
    replication_factor: int  # offsets.topic.replication.factor
    segment_bytes: int  # offsets.topic.segment.bytes
    compression_codec: int  # offsets.topic.compression.codec
    load_buffer_size: int  # offsets.load.buffer.size
    commit_timeout_ms: int  # offsets.commit.timeout.ms
    min_session_timeout_ms: int  # group.min.session.timeout.ms
    max_session_timeout_ms: int  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int  # group.initial.rebalance.delay.ms
    group_max_size: int  # group.max.size
    offset_metadata_max_bytes: int  # offset.metadata.max.bytes
    offsets_retention_ms: int  # offsets.retention.minutes, in ms
    offsets_retention_check_interval_ms: int  # offsets.retention.check.interval.ms
    consumer_session_timeout_ms: int  # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int  # group.consumer.heartbeat.interval.ms
    consumer_max_size: int  # group.consumer.max.size
    consumer_assignors: tuple[str, ...]  # group.consumer.assignors, lower-cased
    rebalance_protocols: tuple[str, ...]  # group.coordinator.rebalance.protocols, lower-cased
    # Share groups (KIP-932); defaults so that a view built field by field (tests) needs none.
    share_enabled: bool = False  # group.share.enable
    share_session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    share_heartbeat_interval_ms: int = 5_000  # group.share.heartbeat.interval.ms
    share_max_size: int = 200  # group.share.max.size
    # group.share.initialize.retry.interval.ms, at least offsets.commit.timeout.ms (as Kafka)
    share_initialize_retry_interval_ms: int = 30_000

    @classmethod
    def from_values(cls, v: Mapping[str, Any]) -> GroupCoordinatorConfig:
        """From a broker's typed values by config name."""
        return cls(
            num_partitions=v["offsets.topic.num.partitions"],
            replication_factor=v["offsets.topic.replication.factor"],
            segment_bytes=v["offsets.topic.segment.bytes"],
            compression_codec=v["offsets.topic.compression.codec"],
            load_buffer_size=v["offsets.load.buffer.size"],
            commit_timeout_ms=v["offsets.commit.timeout.ms"],
            min_session_timeout_ms=v["group.min.session.timeout.ms"],
            max_session_timeout_ms=v["group.max.session.timeout.ms"],
            initial_rebalance_delay_ms=v["group.initial.rebalance.delay.ms"],
            group_max_size=v["group.max.size"],
            offset_metadata_max_bytes=v["offset.metadata.max.bytes"],
            offsets_retention_ms=v["offsets.retention.minutes"] * MS_PER_MINUTE,
            offsets_retention_check_interval_ms=v["offsets.retention.check.interval.ms"],
            consumer_session_timeout_ms=v["group.consumer.session.timeout.ms"],
            consumer_heartbeat_interval_ms=v["group.consumer.heartbeat.interval.ms"],
            consumer_max_size=v["group.consumer.max.size"],
            consumer_assignors=tuple(a.strip().lower() for a in v["group.consumer.assignors"]),
            rebalance_protocols=tuple(p.strip().lower() for p in v["group.coordinator.rebalance.protocols"]),
            share_enabled=v["group.share.enable"],
            share_session_timeout_ms=v["group.share.session.timeout.ms"],
            share_heartbeat_interval_ms=v["group.share.heartbeat.interval.ms"],
            share_max_size=v["group.share.max.size"],
            share_initialize_retry_interval_ms=max(
                v["group.share.initialize.retry.interval.ms"], v["offsets.commit.timeout.ms"]
            ),
        )


@dataclass(frozen=True)
class TransactionCoordinatorConfig:
    """The transaction coordinator's settings, typed (Kafka's ``TransactionLogConfig`` and
    ``TransactionStateManagerConfig``); the config names are in the comments. Build with
    :attr:`BrokerConfig.transaction_coordinator
    <zurau.config.broker_config.BrokerConfig.transaction_coordinator>`."""

    num_partitions: int  # transaction.state.log.num.partitions
    replication_factor: int  # transaction.state.log.replication.factor
    segment_bytes: int  # transaction.state.log.segment.bytes
    min_isr: int  # transaction.state.log.min.isr
    load_buffer_size: int  # transaction.state.log.load.buffer.size
    max_timeout_ms: int  # transaction.max.timeout.ms
    id_expiration_ms: int  # transactional.id.expiration.ms
    remove_expired_interval_ms: int  # transaction.remove.expired.transaction.cleanup.interval.ms

    @classmethod
    def from_values(cls, v: Mapping[str, Any]) -> TransactionCoordinatorConfig:
        """From a broker's typed values by config name."""
        return cls(
            num_partitions=v["transaction.state.log.num.partitions"],
            replication_factor=v["transaction.state.log.replication.factor"],
            segment_bytes=v["transaction.state.log.segment.bytes"],
            min_isr=v["transaction.state.log.min.isr"],
            load_buffer_size=v["transaction.state.log.load.buffer.size"],
            max_timeout_ms=v["transaction.max.timeout.ms"],
            id_expiration_ms=v["transactional.id.expiration.ms"],
            remove_expired_interval_ms=v["transaction.remove.expired.transaction.cleanup.interval.ms"],
        )


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    """The share coordinator's settings, typed (Kafka's ``ShareCoordinatorConfig``, KIP-932); the
    config names are in the comments. Build with :attr:`BrokerConfig.share_coordinator
    <zurau.config.broker_config.BrokerConfig.share_coordinator>`."""

    num_partitions: int  # share.coordinator.state.topic.num.partitions
    replication_factor: int  # share.coordinator.state.topic.replication.factor
    min_isr: int  # share.coordinator.state.topic.min.isr
    segment_bytes: int  # share.coordinator.state.topic.segment.bytes
    compression_codec: int  # share.coordinator.state.topic.compression.codec
    snapshot_update_records_per_snapshot: int  # share.coordinator.snapshot.update.records.per.snapshot
    write_timeout_ms: int  # share.coordinator.write.timeout.ms
    load_buffer_size: int  # share.coordinator.load.buffer.size
    cold_partition_snapshot_interval_ms: int  # share.coordinator.cold.partition.snapshot.interval.ms

    @classmethod
    def from_values(cls, v: Mapping[str, Any]) -> ShareCoordinatorConfig:
        """From a broker's typed values by config name."""
        return cls(
            num_partitions=v["share.coordinator.state.topic.num.partitions"],
            replication_factor=v["share.coordinator.state.topic.replication.factor"],
            min_isr=v["share.coordinator.state.topic.min.isr"],
            segment_bytes=v["share.coordinator.state.topic.segment.bytes"],
            compression_codec=v["share.coordinator.state.topic.compression.codec"],
            snapshot_update_records_per_snapshot=v["share.coordinator.snapshot.update.records.per.snapshot"],
            write_timeout_ms=v["share.coordinator.write.timeout.ms"],
            load_buffer_size=v["share.coordinator.load.buffer.size"],
            cold_partition_snapshot_interval_ms=v["share.coordinator.cold.partition.snapshot.interval.ms"],
        )
