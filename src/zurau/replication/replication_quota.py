"""Replication throttles (Kafka's ``ReplicationQuotaManager``): a byte-rate quota on the
replication traffic of chosen partitions, one for the leader side and one for the follower side.

* **Which partitions** (:meth:`ReplicationQuota.is_throttled`): a topic's
  ``leader.replication.throttled.replicas`` (leader side) or
  ``follower.replication.throttled.replicas`` (follower side) lists ``partition:broker`` pairs,
  or is ``*`` (every partition). A broker throttles partition ``p`` on a side when the list names
  ``p:<its own id>`` (:func:`throttled_partitions`): the leader-side list names the brokers that
  send (the current replicas of a moving partition), the follower-side list the brokers that
  receive (the new replicas).
* **The rate** (bytes/s) is read at every use through a :data:`RateSource`, so a change of the
  broker's ``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``
  applies to the next fetch. ``Long.MAX_VALUE`` (the default) means unthrottled.
* **Measuring**: every replication byte of a throttled partition is recorded
  (:meth:`ReplicationQuota.record`), whether or not the replica was throttled; the rate is the
  bytes recorded in the last ``window_num`` windows of ``window_ms`` over the time since the
  oldest of them began, taken as at least one window (as Kafka's ``SimpleRate``: a new
  reassignment may send one window's worth at once, then is held to the rate).
  :meth:`ReplicationQuota.is_quota_exceeded` is true while that rate is above the bound.
* **Who is throttled** (the callers decide, with Kafka's rules): only a replica that is not in
  sync. The leader leaves a throttled partition's records out of a follower's fetch answer when
  the follower is not in the ISR and the quota is exceeded
  (:meth:`~zurau.replication.replica_manager.ReplicaManager.should_leader_throttle`); the
  follower leaves a throttled partition out of its fetch while it lags the leader's high
  watermark and the quota is exceeded (:mod:`zurau.replication.replica_fetcher`). Normal
  replication (no throttled-replicas config) and in-sync replicas are never throttled, so a
  throttle never takes a replica out of the ISR nor slows acks=all produces.

Times come from the injected :class:`~zurau.clock.Clock` (milliseconds), so the quota is unit
tested on a :class:`~zurau.clock.ManualClock`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from zurau.clock import Clock

# The configs a throttle is made of (re-exported: the broker wires its quotas by these names).
from zurau.config.replication_throttle import FOLLOWER_RATE as FOLLOWER_RATE
from zurau.config.replication_throttle import FOLLOWER_REPLICAS as FOLLOWER_REPLICAS
from zurau.config.replication_throttle import LEADER_RATE as LEADER_RATE
from zurau.config.replication_throttle import LEADER_REPLICAS as LEADER_REPLICAS
from zurau.replication.byte_rate_quota import UNLIMITED_RATE as UNLIMITED_RATE
from zurau.replication.byte_rate_quota import ByteRateQuota
from zurau.replication.byte_rate_quota import RateSource as RateSource

#: A topic's config overrides (as the metadata image holds them), or None for an unknown topic.
TopicConfigs = Callable[[str], Mapping[str, str] | None]


class AllPartitions:
    """``*``: every partition of the topic."""

    def __contains__(self, _partition: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "*"


ALL_PARTITIONS = AllPartitions()


def throttled_partitions(value: str | None, broker_id: int) -> frozenset[int] | AllPartitions:
    """The partitions a throttled-replicas config value (``*`` or ``partition:broker,...``)
    throttles on broker ``broker_id``: ``*`` all, else those listed with this broker's id.
    Entries that do not parse are ignored (the config was validated when it was set)."""
    text = (value or "").strip()
    if text == "*":
        return ALL_PARTITIONS
    out: set[int] = set()
    for item in text.split(","):
        part, sep, broker = item.strip().partition(":")
        if sep and part.strip().isdigit() and broker.strip().isdigit() and int(broker) == broker_id:
            out.add(int(part))
    return frozenset(out)


class ReplicationQuota(ByteRateQuota):
    """One side's throttle (see the module docstring; the measuring is
    :class:`~zurau.replication.byte_rate_quota.ByteRateQuota`'s).

    ``configs`` gives a topic's config overrides; ``config_name`` is the throttled-replicas config
    of this side; ``rate`` the bound in bytes/s. The parsed list of each topic is kept as long as
    the topic's config mapping is the same object (an image shares an unchanged topic's configs)."""

    def __init__(
        self,
        clock: Clock,
        *,
        broker_id: int,
        config_name: str,
        configs: TopicConfigs,
        rate: RateSource,
        window_num: int = 11,
        window_ms: int = 1000,
    ) -> None:
        super().__init__(clock, rate, window_num=window_num, window_ms=window_ms)
        self.broker_id = broker_id
        self.config_name = config_name
        self._configs = configs
        self._parsed: dict[str, tuple[Mapping[str, str] | None, frozenset[int] | AllPartitions]] = {}

    @property
    def throttled_bytes(self) -> int:
        """Bytes of throttled-replica traffic recorded since start (a counter for metrics)."""
        return self.recorded_bytes

    # ------------------------------------------------------------------ which partitions
    def is_throttled(self, topic: str, partition: int) -> bool:
        """Whether ``topic-partition`` is throttled on this broker's side."""
        configs = self._configs(topic)
        cached = self._parsed.get(topic)
        if cached is None or cached[0] is not configs:
            value = configs.get(self.config_name) if configs is not None else None
            cached = (configs, throttled_partitions(value, self.broker_id))
            self._parsed[topic] = cached
        return partition in cached[1]
