"""Group, transaction and share coordinator configuration definitions (Kafka's
``GroupCoordinatorConfig``, ``TransactionLogConfig``, ``TransactionStateManagerConfig`` and
``ShareCoordinatorConfig``).
The coordinators read them through typed views (:mod:`zurau.config.coordinator_views`).
"""

from __future__ import annotations

from zurau.config.config_def import ConfigKey
from zurau.config.shorthand import LI, LO, SH, B, H, I, L, M, S, at_least, between
from zurau.config.types import INT_MAX
from zurau.config.validators import NonEmptyList, ValidList, ValidString

# fmt: off
COORDINATOR_CONFIGS: tuple[ConfigKey, ...] = (
    # --- group coordinator ---------------------------------------------------------------------
    ConfigKey("group.coordinator.rebalance.protocols", LI, ("classic", "consumer"),
              ValidList(("classic", "consumer", "share", "streams"), allow_empty=False), M,
              "Group protocols the coordinator accepts."),
    ConfigKey("offsets.topic.num.partitions", I, 50, at_least(1), H,
              "Partitions of __consumer_offsets (do not change after deployment)."),
    ConfigKey("offsets.topic.replication.factor", SH, 3, at_least(1), H,
              "Replication factor of __consumer_offsets (capped at the live brokers when it is "
              "created, with a warning)."),
    ConfigKey("offsets.topic.segment.bytes", I, 104_857_600, at_least(1), H,
              "Segment size of __consumer_offsets."),
    ConfigKey("offsets.topic.compression.codec", I, 0, None, H,
              "Codec id for offset commits written to __consumer_offsets."),
    ConfigKey("offsets.load.buffer.size", I, 5_242_880, at_least(1), H,
              "Read size when loading group state from __consumer_offsets."),
    ConfigKey("offsets.commit.timeout.ms", I, 5000, at_least(1), H,
              "How long a coordinator write waits for replication."),
    ConfigKey("offset.metadata.max.bytes", I, 4096, None, H,
              "Largest metadata string stored with a committed offset."),
    ConfigKey("offsets.retention.minutes", I, 10_080, at_least(1), H,
              "How long committed offsets of an empty group are kept."),
    ConfigKey("offsets.retention.check.interval.ms", L, 600_000, at_least(1), H,
              "Interval between expired-offset checks."),
    ConfigKey("group.min.session.timeout.ms", I, 6000, None, M,
              "Smallest session timeout a classic-group member may ask for."),
    ConfigKey("group.max.session.timeout.ms", I, 1_800_000, None, M,
              "Largest session timeout a classic-group member may ask for."),
    ConfigKey("group.initial.rebalance.delay.ms", I, 3000, None, M,
              "Wait for more members before the first rebalance of a new classic group."),
    ConfigKey("group.max.size", I, INT_MAX, at_least(1), M,
              "Most members of one classic group."),
    ConfigKey("group.consumer.session.timeout.ms", I, 45_000, at_least(1), M,
              "Session timeout of consumer-protocol (KIP-848) members."),
    ConfigKey("group.consumer.min.session.timeout.ms", I, 45_000, at_least(1), M,
              "Smallest session timeout for consumer-protocol groups."),
    ConfigKey("group.consumer.max.session.timeout.ms", I, 60_000, at_least(1), M,
              "Largest session timeout for consumer-protocol groups."),
    ConfigKey("group.consumer.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "Heartbeat interval given to consumer-protocol members."),
    ConfigKey("group.consumer.min.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "Smallest heartbeat interval for consumer-protocol groups."),
    ConfigKey("group.consumer.max.heartbeat.interval.ms", I, 15_000, at_least(1), M,
              "Largest heartbeat interval for consumer-protocol groups."),
    ConfigKey("group.consumer.max.size", I, INT_MAX, at_least(1), M,
              "Most members of one consumer-protocol group."),
    ConfigKey("group.consumer.assignors", LI, ("uniform", "range"), NonEmptyList(), M,
              "Server-side assignors; the first is the default."),
    ConfigKey("group.consumer.migration.policy", S, "disabled",
              ValidString(("disabled", "upgrade", "downgrade", "bidirectional"), case_insensitive=True), M,
              "Which classic <-> consumer group conversions are allowed for non-empty groups.",
              kafka_default="bidirectional"),
    # --- share groups (KIP-932): membership; ShareFetch/ShareAcknowledge are not served yet ----
    ConfigKey("group.share.enable", B, False, None, M,
              "Serve share groups (KIP-932); Kafka 4.0's internal early-access switch. Off: the share "
              "APIs are neither advertised nor served."),
    ConfigKey("group.share.session.timeout.ms", I, 45_000, at_least(1), M,
              "Session timeout of share-group members."),
    ConfigKey("group.share.min.session.timeout.ms", I, 45_000, at_least(1), M,
              "Smallest session timeout for share groups."),
    ConfigKey("group.share.max.session.timeout.ms", I, 60_000, at_least(1), M,
              "Largest session timeout for share groups."),
    ConfigKey("group.share.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "Heartbeat interval given to share-group members."),
    ConfigKey("group.share.min.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "Smallest heartbeat interval for share groups."),
    ConfigKey("group.share.max.heartbeat.interval.ms", I, 15_000, at_least(1), M,
              "Largest heartbeat interval for share groups."),
    ConfigKey("group.share.max.size", I, 200, between(1, 1000), M,
              "Most members of one share group."),
    ConfigKey("group.share.initialize.retry.interval.ms", I, 30_000, at_least(1), LO,
              "How long a share partition's state initialization may be pending before a heartbeat "
              "asks for it again (at least offsets.commit.timeout.ms)."),
    # --- transactions and producer state -------------------------------------------------------
    ConfigKey("transaction.state.log.num.partitions", I, 50, at_least(1), H,
              "Partitions of __transaction_state (do not change after deployment)."),
    ConfigKey("transaction.state.log.replication.factor", SH, 3, at_least(1), H,
              "Replication factor of __transaction_state (capped at the live brokers when it is "
              "created, with a warning)."),
    ConfigKey("transaction.state.log.min.isr", I, 1, at_least(1), H,
              "min.insync.replicas of __transaction_state (Zurau default 1 for a single node).",
              kafka_default=2),
    ConfigKey("transaction.state.log.segment.bytes", I, 104_857_600, at_least(1), H,
              "Segment size of __transaction_state."),
    ConfigKey("transaction.state.log.load.buffer.size", I, 5_242_880, at_least(1), H,
              "Read size when loading transaction state."),
    ConfigKey("transaction.max.timeout.ms", I, 900_000, at_least(1), H,
              "Largest transaction timeout a producer may ask for."),
    ConfigKey("transactional.id.expiration.ms", I, 604_800_000, at_least(1), H,
              "Idle time after which a transactional id is forgotten."),
    ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10_000, at_least(1), LO,
              "Interval between checks for timed-out transactions to abort."),
    ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3_600_000, at_least(1), LO,
              "Interval between removals of expired transactional ids."),
    ConfigKey("transaction.partition.verification.enable", B, True, None, LO,
              "Check a partition was added to the transaction before accepting its writes.",
              dynamic=True),
    ConfigKey("producer.id.expiration.ms", I, 86_400_000, at_least(1), LO,
              "Idle time after which a partition leader forgets a producer id.", dynamic=True),
    ConfigKey("producer.id.expiration.check.interval.ms", I, 600_000, at_least(1), LO,
              "Interval between expired producer id checks."),
    # --- share coordinator (KIP-932, Kafka's ShareCoordinatorConfig) ---------------------------
    ConfigKey("share.coordinator.state.topic.num.partitions", I, 50, at_least(1), H,
              "Partitions of __share_group_state (do not change after deployment)."),
    ConfigKey("share.coordinator.state.topic.replication.factor", SH, 3, at_least(1), H,
              "Replication factor of __share_group_state (capped at the live brokers when it is "
              "created, with a warning)."),
    ConfigKey("share.coordinator.state.topic.min.isr", SH, 2, at_least(1), H,
              "min.insync.replicas of __share_group_state (capped at the live brokers when it is "
              "created)."),
    ConfigKey("share.coordinator.state.topic.segment.bytes", I, 104_857_600, at_least(1), H,
              "Segment size of __share_group_state."),
    ConfigKey("share.coordinator.state.topic.compression.codec", I, 0, None, H,
              "Codec id for the records written to __share_group_state."),
    ConfigKey("share.coordinator.snapshot.update.records.per.snapshot", I, 500, between(0, 500), M,
              "Update records the share coordinator writes for a share-partition between two "
              "snapshot records."),
    ConfigKey("share.coordinator.write.timeout.ms", I, 5000, at_least(1), H,
              "How long a share coordinator write waits for replication."),
    ConfigKey("share.coordinator.load.buffer.size", I, 5_242_880, at_least(1), H,
              "Read size when loading share-group state from __share_group_state."),
    ConfigKey("share.coordinator.cold.partition.snapshot.interval.ms", I, 300_000, at_least(1), LO,
              "How often share-partitions that are not being updated are snapshotted again."),
)
# fmt: on
