"""Replication configuration definitions (Kafka's ``ReplicationConfigs``): follower
fetching, ISR lag, purgatories, replication throttles (Kafka's ``QuotaConfig`` replication
quotas; see :mod:`zurau.replication.replication_quota`).
"""

from __future__ import annotations

from zurau.config.config_def import ConfigKey
from zurau.config.shorthand import LO, H, I, L, M, at_least

#: Kafka's ``Long.MAX_VALUE``: no throttle.
_UNTHROTTLED = 2**63 - 1

# fmt: off
REPLICATION_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("replica.lag.time.max.ms", L, 30_000, None, H,
              "A follower that has not caught up for this long leaves the ISR."),
    ConfigKey("replica.socket.timeout.ms", I, 30_000, None, H,
              "Socket timeout of follower fetches."),
    ConfigKey("replica.socket.receive.buffer.bytes", I, 65_536, None, H,
              "SO_RCVBUF of follower fetch connections."),
    ConfigKey("replica.fetch.max.bytes", I, 1_048_576, at_least(0), M,
              "Bytes a follower asks for per partition (a larger first batch still comes)."),
    ConfigKey("replica.fetch.wait.max.ms", I, 500, None, M,
              "Longest a follower fetch waits on the leader for data."),
    ConfigKey("replica.fetch.min.bytes", I, 1, None, H,
              "Bytes a follower fetch waits for before the leader answers."),
    ConfigKey("replica.fetch.backoff.ms", I, 1000, at_least(0), M,
              "Sleep after a follower fetch error."),
    ConfigKey("replica.fetch.response.max.bytes", I, 10_485_760, at_least(0), M,
              "Bytes a follower asks for per fetch response."),
    ConfigKey("num.replica.fetchers", I, 1, None, H,
              "Follower fetchers per source broker.", dynamic=True),
    ConfigKey("replica.high.watermark.checkpoint.interval.ms", L, 5000, None, H,
              "Interval between high-watermark checkpoints."),
    ConfigKey("fetch.purgatory.purge.interval.requests", I, 1000, None, M,
              "Purge interval (in requests) of the fetch purgatory."),
    ConfigKey("producer.purgatory.purge.interval.requests", I, 1000, None, M,
              "Purge interval (in requests) of the produce purgatory."),
    ConfigKey("delete.records.purgatory.purge.interval.requests", I, 1, None, M,
              "Purge interval (in requests) of the DeleteRecords purgatory."),
    ConfigKey("leader.replication.throttled.rate", L, _UNTHROTTLED, at_least(0), M,
              "Bytes/s this broker sends, as a leader, to lagging followers of the replicas in "
              "leader.replication.throttled.replicas (reassignments).", dynamic=True),
    ConfigKey("follower.replication.throttled.rate", L, _UNTHROTTLED, at_least(0), M,
              "Bytes/s this broker fetches, as a follower, for lagging replicas in "
              "follower.replication.throttled.replicas (reassignments).", dynamic=True),
    ConfigKey("replication.quota.window.num", I, 11, at_least(1), LO,
              "Samples kept for the replication throttles (their rate spans this many windows)."),
    ConfigKey("replication.quota.window.size.seconds", I, 1, at_least(1), LO,
              "Length of each replication throttle sample window, in seconds."),
)
# fmt: on
