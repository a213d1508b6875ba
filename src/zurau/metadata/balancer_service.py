"""The self-balancing loop of the active controller: when to plan, and carrying a plan out.

Every node runs :class:`BalancerService`; only the active controller acts (a node that loses the
lead forgets its soft state, the next active controller starts from the metadata log). Each
``tick``, when ``confluent.balancer.enable`` is true on a cluster (more than one registered
broker):

1. **Load**: every ``SAMPLE_INTERVAL_MS`` the :class:`~zurau.metadata.balancer_load.LoadMonitor`
   samples the live brokers' log dirs (sizes, disk capacity, bytes in).
2. **Model**: :func:`~zurau.metadata.controller.balancer.model.cluster_model` of the current image
   with that load; brokers being removed are those whose broker config ``zurau.balancer.removing``
   is true (set by ``zurau balancer remove-broker``, kept in the metadata log, so a removal goes on
   after a controller failover); ``fenced since`` is when this controller first saw a broker fenced
   (a new active controller starts that clock again: a dead broker is drained at the threshold
   after the last failover at the latest, never earlier).
3. **Trigger**: a broker to drain (removing, or fenced past
   ``confluent.balancer.heal.broker.failure.threshold.ms``), an empty live broker, uneven load when
   the trigger is ``ANY_UNEVEN_LOAD``, or an operator's ``zurau balancer rebalance``. An empty
   broker or uneven load starts a rebalance only when a plan would move something (load that no
   move can even out is left as it is, and not looked at again until the metadata or the load
   sample changes). A rebalance,
   once started, goes on until a plan proposes nothing (an empty broker that got its first
   replicas is no longer empty, yet not balanced): it is marked by the cluster default broker
   config ``zurau.balancer.rebalance.requested`` (set by the command or here when a trigger fires,
   cleared here at the end), so that it survives a controller failover.
4. **Execute**: at most ``confluent.balancer.max.concurrent.moves`` reassignments in flight in the
   whole cluster; the first moves of the plan are submitted as AlterPartitionReassignments, which
   adds the new replicas before removing old ones (so the ISR never shrinks below what it was) and
   completes once they are in sync. The throttle (``confluent.balancer.throttle.bytes.per.second``)
   is set, as ``kafka-reassign-partitions --throttle`` sets it, on the moving replicas (topic
   configs ``leader/follower.replication.throttled.replicas``) and their brokers (broker configs
   ``leader/follower.replication.throttled.rate``), and removed when no move is left. The topics
   it throttled are named in the cluster default broker config ``zurau.balancer.throttled.topics``
   (written with the throttles), so that the next active controller removes them too. Leadership
   moves come last, when no replica move is in flight: the replica order is changed (a
   reassignment that copies nothing) and the preferred leader elected.

Invariants: the service only proposes changes through the controller's own APIs (the same checks
as an operator's request; what they refuse is logged as a warning); a partition already being
reassigned is left alone; an error in one tick is logged and the next tick starts afresh
(everything it needs is in the image).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from zurau.clock import Clock
from zurau.config.replication_throttle import THROTTLED_RATES, THROTTLED_REPLICAS, Move, throttle_of
from zurau.metadata.balancer_load import LoadMonitor, LoadSample
from zurau.metadata.controller.balancer.model import ClusterModel, LoadModel, PartitionLoad, cluster_model
from zurau.metadata.controller.balancer.options import ENABLE, BalancerOptions, options_from_config
from zurau.metadata.controller.balancer.planner import Plan, brokers_to_drain, plan, should_rebalance
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import BROKER_RESOURCE, TOPIC_RESOURCE
from zurau.protocol.messages import (
    AlterPartitionReassignmentsRequestTopics,
    AlterPartitionReassignmentsResponse,
    IncrementalAlterConfigsRequestResources,
    IncrementalAlterConfigsRequestResourcesConfigs,
)

log = logging.getLogger("zurau.balancer")

REMOVING = "zurau.balancer.removing"
REBALANCE_REQUESTED = "zurau.balancer.rebalance.requested"
THROTTLED_TOPICS = "zurau.balancer.throttled.topics"
SAMPLE_INTERVAL_MS = 10_000
TICK_INTERVAL_S = 2.0
#: After an evaluation that took d, the next starts no sooner than PACING x d later: the balancer
#: uses at most about 1/PACING of the active controller's CPU (a 10,000-partition cluster's model
#: and trigger check take a good part of a second of pure Python).
PACING = 20
SET, DELETE = 0, 1
PREFERRED = 0  # ElectLeaders election type


class BalancerChannel(Protocol):
    """What the service needs of the controller channel."""

    @property
    def active(self) -> bool: ...

    @property
    def image(self) -> MetadataImage: ...

    async def alter_partition_reassignments(
        self, topics: list[AlterPartitionReassignmentsRequestTopics], allow_replication_factor_change: bool
    ) -> AlterPartitionReassignmentsResponse: ...

    async def incremental_alter_configs(
        self, resources: list[IncrementalAlterConfigsRequestResources], validate_only: bool
    ) -> Sequence[Any]: ...

    async def elect_leaders(self, election_type: int, topic_partitions: list[Any] | None) -> Any: ...


def _leaders(image: MetadataImage) -> dict[tuple[str, int], int]:
    """The leader of every led partition (the load monitor's rates are the leaders' growth)."""
    return {(t.name, i): p.leader for t in image.all() for i, p in t.partitions.items() if p.leader >= 0}


def removing_brokers(image: MetadataImage) -> set[int]:
    """Brokers whose ``zurau.balancer.removing`` broker config is true."""
    return {
        b for b in image.brokers
        if str(image.broker_config(str(b)).get(REMOVING, "false")).lower() == "true"
    }


def throttled_topics(image: MetadataImage) -> set[str]:
    """The topics named by the cluster default ``zurau.balancer.throttled.topics``."""
    return {t for t in str(image.broker_config("").get(THROTTLED_TOPICS, "")).split(",") if t}


def load_model(sample: LoadSample | None) -> LoadModel:
    """The planner's view of a load sample (out rate: the leader's followers fetch what comes in).
    One pass over the sample: a partition's size is its largest replica's."""
    if sample is None:
        return LoadModel()
    sizes: dict[tuple[str, int], int] = {}
    for (topic, partition, _), size in sample.sizes.items():
        key = (topic, partition)
        if size > sizes.get(key, -1):
            sizes[key] = size
    partitions: dict[tuple[str, int], PartitionLoad] = {}
    for key, size in sizes.items():
        rate = int(sample.bytes_in.get(key, 0.0))
        partitions[key] = PartitionLoad(size, rate, rate)
    return LoadModel(dict(sample.capacity), partitions)


def refused_configs(results: Sequence[Any]) -> list[str]:
    """The resources an IncrementalAlterConfigs refused (logged as warnings: the next tick
    works from the image, so a refusal is not retried here)."""
    refused = [
        f"{r.get('resource_name') or '<default>'}: {r.get('error_message') or r.get('error_code')}"
        for r in results if r.get("error_code")
    ]
    if refused:
        log.warning("balancer: config changes refused: %s", "; ".join(refused))
    return refused


def refused_moves(response: AlterPartitionReassignmentsResponse | Any) -> list[str]:
    """The partitions an AlterPartitionReassignments refused (logged as warnings)."""
    refused = []
    if response.get("error_code"):
        refused.append(str(response.get("error_message") or response.get("error_code")))
    for t in response.get("responses") or ():
        refused += [
            f"{t.get('name')}-{p.get('partition_index')}: {p.get('error_message') or p.get('error_code')}"
            for p in t.get("partitions") or () if p.get("error_code")
        ]
    if refused:
        log.warning("balancer: reassignments refused: %s", "; ".join(refused))
    return refused


def _set(configs: Sequence[tuple[str, str]]) -> list[IncrementalAlterConfigsRequestResourcesConfigs]:
    """IncrementalAlterConfigs SET operations of (name, value) pairs."""
    return [{"name": n, "config_operation": SET, "value": v} for n, v in configs]


class BalancerService:
    """See the module docstring. ``config_get(name)``: the effective typed value of a broker config
    (dynamic over static); ``min_isr()``: the cluster's default ``min.insync.replicas``."""

    def __init__(
        self,
        channel: BalancerChannel,
        monitor: LoadMonitor,
        clock: Clock,
        config_get: Callable[[str], Any],
    ) -> None:
        self.channel = channel
        self.monitor = monitor
        self.clock = clock
        self.config_get = config_get
        self.fenced_since: dict[int, int] = {}
        self.next_sample_ms = 0
        self.last_plan: Plan | None = None
        self.idle_key: tuple[int, int | None, BalancerOptions] | None = None  # see _triggered
        self._task: asyncio.Task[None] | None = None
        # Pacing (see tick): the inputs of the last evaluation, and when the next may start.
        self.seen: tuple[Any, ...] | None = None
        self.next_eval_ms = 0

    def start(self, interval_s: float = TICK_INTERVAL_S) -> None:
        """Tick every ``interval_s`` until :meth:`close` (an error is logged, the loop goes on)."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    await self.tick()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("balancer tick failed")

        self._task = asyncio.get_running_loop().create_task(loop())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.monitor.close()

    def reset(self) -> None:
        """Forget the soft state (this node is no longer the active controller)."""
        self.fenced_since.clear()
        self.next_sample_ms = 0
        self.monitor.last = None
        self.last_plan = None
        self.idle_key = None
        self.seen = None
        self.next_eval_ms = 0

    def options(self) -> BalancerOptions:
        return options_from_config(self.config_get)

    async def tick(self) -> None:
        if not self.channel.active:
            if self.fenced_since or self.monitor.last is not None:
                self.reset()
            return
        image = self.channel.image
        if not bool(self.config_get(ENABLE)) or len(image.brokers) < 2:
            return
        now = self.clock.now_ms()
        for b, reg in image.brokers.items():
            if reg.live:
                self.fenced_since.pop(b, None)
            else:
                self.fenced_since.setdefault(b, now)
        if now < self.next_eval_ms:
            return
        if now >= self.next_sample_ms:
            self.next_sample_ms = now + SAMPLE_INTERVAL_MS
            leaders = await asyncio.to_thread(_leaders, image)
            await self.monitor.sample([b.id for b in image.live_brokers()], leaders)
        options = self.options()
        sample = self.monitor.last
        threshold = options.heal_broker_failure_threshold_ms
        dead = frozenset(b for b, t in self.fenced_since.items() if threshold >= 0 and now - t >= threshold)
        # Nothing that a decision depends on changed since the last one: nothing to do. The maps
        # of a new image are the same objects where nothing changed in them (persistent maps).
        seen = (image.topics_by_name, image.brokers, image.broker_configs, sample, options, dead)
        if self.seen is not None and all(a is b or a == b for a, b in zip(seen, self.seen, strict=True)):
            return
        started = time.perf_counter()
        load = await asyncio.to_thread(load_model, sample)
        model = await asyncio.to_thread(
            cluster_model,
            image,
            load,
            removing=removing_brokers(image),
            fenced_since_ms=dict(self.fenced_since),
            now_ms=now,
            min_insync_replicas=int(self.config_get("min.insync.replicas")),
        )
        # Pacing: the balancer's own CPU (the model, a trigger check or a plan: pure Python, which
        # holds the interpreter even off the event loop) stays a small share of the controller's.
        try:
            await self._decide(image, model, options, now)
            self.seen = seen  # (an error: decided again at the next tick)
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.next_eval_ms = now + int(PACING * elapsed_ms)

    async def _decide(self, image: MetadataImage, model: ClusterModel, options: BalancerOptions, now: int) -> None:
        in_flight = [p for p in model.partitions if p.reassigning]
        requested = str(image.broker_config("").get(REBALANCE_REQUESTED, "false")).lower() == "true"
        # A removed or dead broker that hosts nothing is drained: no reason to plan (else a dead
        # broker left registered would keep the balancer planning, whatever the trigger says).
        draining = any(model.replicas_on(b) for b in brokers_to_drain(model, options))
        if not requested and not draining:
            if await self._triggered(model, options, image.offset):
                log.info("balancer: load is uneven (%s): rebalancing", options.trigger.value)
                await self._set_requested(True)
                return  # planned on the next tick, from the image that holds the mark
            if not in_flight:
                await self._unthrottle(image)
            return
        budget = (options.max_moves or len(model.partitions) or 1) - len(in_flight)
        if budget <= 0:
            return
        # A plan is pure CPU work on immutable inputs: off the event loop.
        proposal = await asyncio.to_thread(plan, model, dataclasses.replace(options, max_moves=budget))
        self.last_plan = proposal
        moves = list(proposal.reassignments)[:budget]
        if moves:
            await self._throttle(image, moves, options)
            topics: dict[str, list[Any]] = {}
            for m in moves:
                topics.setdefault(m.topic, []).append({"partition_index": m.partition, "replicas": list(m.replicas)})
            log.info("balancer: moving %d partition(s): %s", len(moves),
                     ", ".join(f"{m.topic}-{m.partition}->{list(m.replicas)}" for m in moves))
            refused_moves(await self.channel.alter_partition_reassignments(
                [{"name": t, "partitions": ps} for t, ps in topics.items()], False
            ))
            return
        if in_flight:
            return
        await self._unthrottle(image)
        if proposal.leadership_moves:
            log.info("balancer: moving %d leadership(s): %s", len(proposal.leadership_moves),
                     ", ".join(f"{m.topic}-{m.partition}:{m.from_leader}->{m.to_leader}"
                               for m in proposal.leadership_moves))
            topics = {}
            for lm in proposal.leadership_moves:
                topics.setdefault(lm.topic, []).append({"partition_index": lm.partition, "replicas": list(lm.replicas)})
            refused_moves(await self.channel.alter_partition_reassignments(
                [{"name": t, "partitions": ps} for t, ps in topics.items()], False
            ))
            by_topic: dict[str, list[int]] = {}
            for lm in proposal.leadership_moves:
                by_topic.setdefault(lm.topic, []).append(lm.partition)
            await self.channel.elect_leaders(
                PREFERRED, [{"topic": t, "partitions": ps} for t, ps in sorted(by_topic.items())]
            )
            return
        if requested:
            log.info("balancer: the rebalance is done")
            await self._set_requested(False)

    async def _triggered(self, model: ClusterModel, options: BalancerOptions, offset: int) -> bool:
        """Whether uneven load starts a rebalance: the trigger says so and a plan would move
        something. Load no move can even out (say three brokers leading four partitions) would
        otherwise set and clear the rebalance mark at every other tick, a metadata record each
        time; such a verdict is kept until the image (``offset``), the load sample or the
        options change."""
        sample = self.monitor.last
        key = (offset, sample.at_ms if sample is not None else None, options)
        if key == self.idle_key:
            return False
        if await asyncio.to_thread(should_rebalance, model, options.trigger, options):
            if not (await asyncio.to_thread(plan, model, options)).empty:
                return True
            log.debug("balancer: load is uneven (%s), yet no move would even it out", options.trigger.value)
        self.idle_key = key
        return False

    async def _set_requested(self, on: bool) -> None:
        op: IncrementalAlterConfigsRequestResourcesConfigs = (
            {"name": REBALANCE_REQUESTED, "config_operation": SET, "value": "true"}
            if on
            else {"name": REBALANCE_REQUESTED, "config_operation": DELETE, "value": None}
        )
        refused_configs(await self.channel.incremental_alter_configs(
            [{"resource_type": BROKER_RESOURCE, "resource_name": "", "configs": [op]}], False
        ))

    async def _throttle(self, image: MetadataImage, moves: Sequence[Any], options: BalancerOptions) -> None:
        """Throttle ``moves`` as ``kafka-reassign-partitions --throttle`` does
        (:func:`~zurau.config.replication_throttle.throttle_of`), naming their topics in the
        ``zurau.balancer.throttled.topics`` mark."""
        rate = options.throttle_bytes_per_second
        if rate < 0:
            return
        by_topic: dict[str, dict[int, Move]] = {}
        for m in moves:
            t = image.get(m.topic)
            if t is not None:
                by_topic.setdefault(m.topic, {})[m.partition] = Move.between(t.partitions[m.partition].replicas, m.replicas)
        throttle = throttle_of(by_topic, rate)
        resources: list[IncrementalAlterConfigsRequestResources] = [
            {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": _set(throttle.topic_configs(topic))}
            for topic in sorted(throttle.replicas)
        ]
        owned = throttled_topics(image)
        if by_topic and not set(by_topic) <= owned:
            resources.append({"resource_type": BROKER_RESOURCE, "resource_name": "", "configs": _set(
                [(THROTTLED_TOPICS, ",".join(sorted(owned | set(by_topic))))]
            )})
        resources += [
            {"resource_type": BROKER_RESOURCE, "resource_name": str(b), "configs": _set(throttle.broker_configs())}
            for b in sorted(throttle.brokers) if b in image.brokers
        ]
        if resources:
            refused_configs(await self.channel.incremental_alter_configs(resources, False))

    async def _unthrottle(self, image: MetadataImage) -> None:
        """Remove the throttles of the topics ``zurau.balancer.throttled.topics`` names, every
        broker's throttled rates, and that mark (nothing when the balancer throttled nothing)."""
        owned = throttled_topics(image)
        if not owned:
            return
        resources: list[IncrementalAlterConfigsRequestResources] = [
            {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": [
                {"name": n, "config_operation": DELETE, "value": None} for n in THROTTLED_REPLICAS
            ]}
            for topic in sorted(owned) if image.get(topic) is not None
        ]
        resources += [
            {"resource_type": BROKER_RESOURCE, "resource_name": str(b), "configs": [
                {"name": n, "config_operation": DELETE, "value": None} for n in THROTTLED_RATES
            ]}
            for b in sorted(image.brokers)
            if any(n in image.broker_config(str(b)) for n in THROTTLED_RATES)
        ]
        resources.append({"resource_type": BROKER_RESOURCE, "resource_name": "", "configs": [
            {"name": THROTTLED_TOPICS, "config_operation": DELETE, "value": None}]})
        if resources:
            refused_configs(await self.channel.incremental_alter_configs(resources, False))


__all__ = [
    "REBALANCE_REQUESTED",
    "REMOVING",
    "THROTTLED_TOPICS",
    "BalancerService",
    "load_model",
    "refused_configs",
    "refused_moves",
    "removing_brokers",
    "throttled_topics",
]
