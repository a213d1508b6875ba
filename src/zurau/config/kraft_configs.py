"""Node identity and KRaft configuration definitions (Kafka's ``KRaftConfigs``,
``QuorumConfig`` and ``MetadataLogConfig``), plus the rack and replica selector of a node.

Zurau's defaults for ``process.roles`` and ``node.id`` make a single dev node start without
settings; Kafka requires both (``kafka_default=KAFKA_REQUIRED``).
"""

from __future__ import annotations

from zurau.config.config_def import KAFKA_REQUIRED, ConfigKey
from zurau.config.shorthand import LI, LO, B, H, I, L, M, S, at_least
from zurau.config.validators import ValidList, ValidString

# fmt: off
KRAFT_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("process.roles", LI, ("broker", "controller"), ValidList(("broker", "controller"), allow_empty=False), H,
              "Roles of this node: broker, controller, or both (Zurau's single-node default is both).",
              kafka_default=KAFKA_REQUIRED),
    ConfigKey("node.id", I, 1, None, H,
              "Id of this node in the cluster (Zurau defaults to 1 for a single dev node).",
              kafka_default=KAFKA_REQUIRED),
    ConfigKey("broker.id", I, -1, None, H,
              "Old name for node.id; when set alone it is used as node.id, and both must agree."),
    ConfigKey("cluster.id", S, None, None, H,
              "Zurau only: expected cluster id; if unset Zurau generates one and persists it in meta.properties."),
    ConfigKey("controller.quorum.voters", LI, (), None, H,
              "Static controller quorum as id@host:port entries."),
    ConfigKey("controller.quorum.bootstrap.servers", LI, (), None, H,
              "host:port entries used to discover a dynamic controller quorum."),
    ConfigKey("controller.listener.names", S, None, None, H,
              "Comma-separated listener names used by the controller quorum."),
    ConfigKey("controller.quorum.election.timeout.ms", I, 1000, None, H,
              "Time without a leader before a voter starts an election."),
    ConfigKey("controller.quorum.fetch.timeout.ms", I, 2000, None, H,
              "Time without a successful fetch from the leader before a voter becomes a candidate."),
    ConfigKey("controller.quorum.election.backoff.max.ms", I, 1000, None, H,
              "Upper bound of the backoff between elections."),
    ConfigKey("controller.quorum.append.linger.ms", I, 25, None, M,
              "How long the quorum leader batches appends before flushing them."),
    ConfigKey("controller.quorum.auto.join.enable", B, False, None, M,
              "Dynamic quorums: a controller that is not a voter adds itself (AddRaftVoter) once caught up."),
    ConfigKey("controller.quorum.request.timeout.ms", I, 2000, None, M,
              "Timeout of quorum requests between voters."),
    ConfigKey("controller.quorum.retry.backoff.ms", I, 20, None, LO,
              "Backoff before retrying a failed quorum request."),
    ConfigKey("metadata.log.dir", S, None, None, H,
              "Directory of the metadata log; defaults to the first log directory."),
    ConfigKey("metadata.log.segment.bytes", I, 1_073_741_824, at_least(12), H,
              "Segment size of the metadata log."),
    ConfigKey("metadata.log.segment.ms", L, 604_800_000, None, H,
              "Age at which a metadata log segment is rolled."),
    ConfigKey("metadata.max.retention.bytes", L, 104_857_600, None, H,
              "Size of metadata log plus snapshots above which old ones are deleted."),
    ConfigKey("metadata.max.retention.ms", L, 604_800_000, None, H,
              "Age after which metadata log segments and snapshots may be deleted."),
    ConfigKey("metadata.log.max.record.bytes.between.snapshots", L, 20_971_520, at_least(1), H,
              "New metadata bytes that trigger a snapshot."),
    ConfigKey("metadata.log.max.snapshot.interval.ms", L, 3_600_000, at_least(0), H,
              "Longest time between snapshots while there are new records (0 disables)."),
    ConfigKey("metadata.max.idle.interval.ms", I, 500, at_least(0), LO,
              "Interval at which an idle active controller appends no-op records (0 disables)."),
    ConfigKey("broker.heartbeat.interval.ms", I, 2000, None, M,
              "Interval between broker heartbeats to the controller."),
    ConfigKey("broker.session.timeout.ms", I, 9000, None, M,
              "Heartbeat silence after which the controller fences a broker."),
    ConfigKey("initial.broker.registration.timeout.ms", I, 60_000, None, M,
              "How long a starting broker waits to register before giving up."),
    ConfigKey("broker.rack", S, None, None, M,
              "Rack of this broker, for rack-aware replica placement and fetch from follower."),
    ConfigKey("replica.selector.class", S, None,
              ValidString(("org.apache.kafka.common.replica.RackAwareReplicaSelector",
                           "org.apache.kafka.common.replica.LeaderReplicaSelector")), M,
              "Replica selector for consumer fetches (KIP-392): RackAwareReplicaSelector reads "
              "from a replica in the client.rack; unset: from leaders."),
)
# fmt: on
