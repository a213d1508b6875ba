"""MirrorMaker 2's ``MirrorSourceConnector``: copies source topics into the worker's cluster.

Each replicated source topic ``t`` (``topics`` minus ``topics.exclude``, plus heartbeats topics,
never an internal topic nor a remote topic of the target itself: see :mod:`.config`) goes to ``<source alias><separator>t`` (DefaultReplicationPolicy) with the same
partition count; record ``(t, p, offset)`` goes to partition ``p`` with its key, value, headers and
timestamp unchanged. Run it with ``key.converter``/``value.converter`` set to
``org.apache.kafka.connect.converters.ByteArrayConverter`` (as MM2 on Connect needs): then the
bytes are copied as they are.

Source offsets are MM2's: partition ``{"cluster": alias, "topic": t, "partition": p}``, offset
``{"offset": last copied upstream offset}``; a restarted task resumes after it. Delivery is at
least once: records copied after the last offset flush are copied again after a crash (not after
a clean stop, which flushes).

Offset syncs (for the checkpoint connector's translation) go to ``mm2-offset-syncs.<target
alias>.internal`` (on the source cluster unless ``offset-syncs.topic.location=target``). A sync is
written for the first record of a partition a task copies, whenever a record's downstream offset
is not its upstream offset plus the last sync's difference (a gap: compaction, transaction markers,
a re-copy), when ``offset.lag.max`` records passed since the last sync, and at each offset flush
for the last copied record. Between two consecutive syncs upstream and downstream offsets thus
advance together, which makes translation exact there.

In the background the connector looks for new topics and partitions every
``refresh.topics.interval.seconds`` (creating the remote topics with the source topics' configs),
syncs topic configs every ``sync.topic.configs.interval.seconds`` (:mod:`.topic_configs`) and
topic ACLs every ``sync.topic.acls.interval.seconds`` (:mod:`.topic_acls`). With
``enabled=false`` it runs nothing and has no tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zurau.client.acl_admin import AclAdmin
from zurau.client.admin import AdminClient
from zurau.client.consumer import Consumer
from zurau.client.producer import Producer
from zurau.client.types import TopicPartition
from zurau.connect.api import (
    OPTIONAL_BYTES_SCHEMA,
    ConfigDef,
    ConfigType,
    ConfigValue,
    ConnectException,
    Importance,
    Range,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from zurau.connect.mirror.bridge import AsyncBridge, BridgedTask
from zurau.connect.mirror.config import COMMON, MirrorSettings
from zurau.connect.mirror.formats import OffsetSync
from zurau.connect.mirror.scheduler import Scheduler
from zurau.connect.mirror.topic_acls import TopicAclSync
from zurau.connect.mirror.topic_configs import (
    SYNC_DEF,
    ConfigPropertyFilter,
    describe_topic_configs,
    sync_topic_configs,
)
from zurau.connect.mirror.topics import decode_partitions, encode_partitions, ensure_topics, source_partitions

log = logging.getLogger("zurau.connect.mirror")

BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
ASSIGNED = "task.assigned.partitions"

SOURCE_DEF = COMMON.merged(
    ConfigDef()
    .define("refresh.topics.enabled", ConfigType.BOOLEAN, True, importance=Importance.LOW,
            documentation="Look for new topics and partitions periodically.")
    .define("refresh.topics.interval.seconds", ConfigType.LONG, 600, validator=Range.at_least(1),
            importance=Importance.LOW, documentation="How often to look for new topics and partitions.")
    .define("emit.offset-syncs.enabled", ConfigType.BOOLEAN, True, importance=Importance.LOW,
            documentation="Write offset syncs (needed by MirrorCheckpointConnector).")
    .define("offset.lag.max", ConfigType.LONG, 100, validator=Range.at_least(0), importance=Importance.LOW,
            documentation="Most records between two offset syncs of a partition.")
    .define("replication.factor", ConfigType.INT, -1, importance=Importance.LOW,
            documentation="Replication factor of created remote topics (-1: the broker's default).")
    .define("offset-syncs.topic.replication.factor", ConfigType.INT, -1, importance=Importance.LOW,
            documentation="Replication factor of the offset-syncs topic (-1: the broker's default).")
).merged(SYNC_DEF)


def validate_mirror(definition: ConfigDef, config: Mapping[str, Any]) -> list[ConfigValue]:
    """Per-setting validation, plus converters that would not copy bytes unchanged."""
    values = definition.validate(config)
    for name in ("key.converter", "value.converter"):
        given = config.get(name)
        if given is not None and str(given).strip() not in (BYTE_ARRAY_CONVERTER, "zurau.connect.converters.ByteArrayConverter"):
            values.append(ConfigValue(name, given, errors=[
                f"MirrorMaker connectors copy bytes unchanged: set {name}={BYTE_ARRAY_CONVERTER}"]))
    return values


class MirrorSourceConnector(SourceConnector):
    """Spreads the replicated source partitions over the tasks, round robin; in the background
    looks for new topics and partitions, and syncs topic configs and ACLs (:class:`Scheduler`)."""

    def start(self, config: dict[str, str]) -> None:
        self.config = dict(config)
        self.partitions: list[TopicPartition] = []
        self.scheduler: Scheduler | None = None
        self.settings, parsed = MirrorSettings.from_props(config, SOURCE_DEF)
        if not self.settings.enabled:
            return
        self.replication_factor: int = parsed["replication.factor"]
        self.config_filter = ConfigPropertyFilter.from_parsed(parsed, config)
        self.acl_sync = TopicAclSync(self.settings.replicates, self.settings.remote_topic)
        self.bridge = AsyncBridge(f"mirror-source-{self.settings.source_alias}")
        try:
            self.partitions = self._refresh()
            if parsed["emit.offset-syncs.enabled"]:
                self.bridge.run(ensure_topics(self.settings.offset_syncs_cluster, {self.settings.offset_syncs_topic: 1},
                                              parsed["offset-syncs.topic.replication.factor"],
                                              {"cleanup.policy": "compact"}))
        except Exception as e:
            self.bridge.close()
            raise ConnectException(f"mirror {self.settings.source_alias}: cannot list or create topics "
                                   f"(source {config.get('source.cluster.bootstrap.servers')}, target "
                                   f"{config.get('target.cluster.bootstrap.servers')}): {e!r}") from e
        self.scheduler = Scheduler(f"mirror-source-{self.settings.source_alias}->{self.settings.target_alias}")
        if parsed["sync.topic.acls.enabled"]:
            self.scheduler.every(float(parsed["sync.topic.acls.interval.seconds"]), "syncing topic ACLs",
                                 self.sync_topic_acls)
        if parsed["sync.topic.configs.enabled"]:
            self.scheduler.every(float(parsed["sync.topic.configs.interval.seconds"]), "syncing topic configs",
                                 self.sync_topic_configs)
        if parsed["refresh.topics.enabled"]:
            self.scheduler.every(float(parsed["refresh.topics.interval.seconds"]), "refreshing topics",
                                 self.refresh_topic_partitions, delayed=True)
        self.scheduler.start()

    def _refresh(self) -> list[TopicPartition]:
        """Create the remote topics (with their source topics' configs) and return every
        replicated source partition."""
        return self.bridge.run(self._refresh_async())

    async def _refresh_async(self) -> list[TopicPartition]:
        settings = self.settings
        counts = await source_partitions(settings)
        remote = {settings.remote_topic(t): n for t, n in counts.items()}
        async with AdminClient(settings.target) as target:
            existing = set(await target.list_topics())
        new = [t for t in counts if settings.remote_topic(t) not in existing]
        configs: dict[str, dict[str, str]] = {}
        if new:
            async with AdminClient(settings.source) as source:
                described = await describe_topic_configs(source, new)
            configs = {settings.remote_topic(t): self.config_filter.creation_configs(entries)
                       for t, entries in described.items()}
        await ensure_topics(settings.target, remote, self.replication_factor, topic_configs=configs)
        return sorted(TopicPartition(t, p) for t, n in counts.items() for p in range(n))

    def refresh_topic_partitions(self) -> None:
        now = self._refresh()
        if now != self.partitions:
            log.info("mirror %s: replicated partitions changed (%d -> %d)", self.settings.source_alias,
                     len(self.partitions), len(now))
            self.partitions = now
            self.context.request_task_reconfiguration()

    def sync_topic_configs(self) -> None:
        """One config sync of every replicated topic (MM2's ``syncTopicConfigs``)."""
        remote = {t: self.settings.remote_topic(t) for t in sorted({tp.topic for tp in self.partitions})}
        if not remote:
            return

        async def sync() -> None:
            async with AdminClient(self.settings.source) as source, AdminClient(self.settings.target) as target:
                await sync_topic_configs(source, target, remote, self.config_filter)
        self.bridge.run(sync())

    def sync_topic_acls(self) -> None:
        """One ACL sync (MM2's ``syncTopicAcls``)."""
        async def sync() -> None:
            async with AclAdmin(self.settings.source) as source, AclAdmin(self.settings.target) as target:
                await self.acl_sync.run(source, target)
        self.bridge.run(sync())

    def task_class(self) -> type[Task]:
        return MirrorSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        n = min(max_tasks, len(self.partitions))
        return [dict(self.config, **{ASSIGNED: encode_partitions(self.partitions[i::n])}) for i in range(n)]

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
        bridge = getattr(self, "bridge", None)
        if bridge is not None:
            bridge.close()

    def config_def(self) -> ConfigDef:
        return SOURCE_DEF

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_mirror(SOURCE_DEF, config)


@dataclass
class _SyncState:
    """The last offset sync written for one source partition, and the last record copied."""

    upstream: int
    downstream: int
    last_upstream: int
    last_downstream: int


class MirrorSourceTask(BridgedTask, SourceTask):
    """Consumes its assigned source partitions and returns their records, renamed."""

    def start(self, config: dict[str, str]) -> None:
        self.settings, parsed = MirrorSettings.from_props(config, SOURCE_DEF)
        self.emit_syncs: bool = parsed["emit.offset-syncs.enabled"]
        self.lag_max: int = parsed["offset.lag.max"]
        self.assigned = decode_partitions(config.get(ASSIGNED, ""))
        self.remote = {tp.topic: self.settings.remote_topic(tp.topic) for tp in self.assigned}
        self.syncs: dict[TopicPartition, _SyncState] = {}
        self.pending: list[OffsetSync] = []
        self.bridge = AsyncBridge(f"mirror-source-task-{self.settings.source_alias}")
        self.consumer: Consumer | None = None
        self.producer: Producer | None = None
        starts: dict[TopicPartition, int] = {}
        for tp in self.assigned:
            last = self.context.offset_storage_reader.offset(self._partition(tp))
            if last is not None and isinstance(last.get("offset"), int):
                starts[tp] = int(last["offset"]) + 1
        try:
            self.bridge.run(self._open(starts))
        except BaseException:
            self.bridge.run(self._close_clients(), timeout=10)
            self.bridge.close()
            raise
        if self._started():
            self._close()

    def _partition(self, tp: TopicPartition) -> dict[str, Any]:
        return {"cluster": self.settings.source_alias, "topic": tp.topic, "partition": tp.partition}

    async def _open(self, starts: dict[TopicPartition, int]) -> None:
        self.consumer = Consumer(self.settings.source, auto_offset_reset="earliest", fetch_max_wait_ms=500)
        await self.consumer.start()
        self.consumer.assign(self.assigned)
        for tp, offset in starts.items():
            self.consumer.seek(tp, offset)
        if self.emit_syncs:
            self.producer = Producer(self.settings.offset_syncs_cluster, acks=-1)
            await self.producer.start()

    def poll(self) -> list[SourceRecord] | None:
        if not self.assigned or self.consumer is None:
            return None
        batches = self.bridge.run(self.consumer.getmany(timeout_ms=500, max_records=2000))
        records: list[SourceRecord] = []
        for tp, recs in batches.items():
            partition = self._partition(tp)
            topic = self.remote[tp.topic]
            for r in recs:
                records.append(SourceRecord(
                    source_partition=partition, source_offset={"offset": r.offset}, topic=topic,
                    kafka_partition=r.partition, key_schema=OPTIONAL_BYTES_SCHEMA, key=r.key,
                    value_schema=OPTIONAL_BYTES_SCHEMA, value=r.value,
                    timestamp=r.timestamp if r.timestamp >= 0 else None, headers=tuple(r.headers)))
        return records

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        if not self.emit_syncs or metadata is None or record.source_partition is None or record.source_offset is None:
            return
        tp = TopicPartition(str(record.source_partition["topic"]), int(record.source_partition["partition"]))
        upstream, downstream = int(record.source_offset["offset"]), int(metadata.offset)
        state = self.syncs.get(tp)
        if (state is None or upstream - state.upstream != downstream - state.downstream
                or upstream - state.upstream >= self.lag_max):
            self.pending.append(OffsetSync(tp.topic, tp.partition, upstream, downstream))
            self.syncs[tp] = _SyncState(upstream, downstream, upstream, downstream)
        else:
            state.last_upstream, state.last_downstream = upstream, downstream

    def commit(self) -> None:
        """After each offset flush: a sync for the last copied record of every partition, then
        every pending sync is written (not after stop(): its clients are closed; the next start
        writes syncs again)."""
        if not self.emit_syncs or self._stop_requested:
            return
        for tp, state in self.syncs.items():
            if state.last_upstream != state.upstream:
                self.pending.append(OffsetSync(tp.topic, tp.partition, state.last_upstream, state.last_downstream))
                state.upstream, state.downstream = state.last_upstream, state.last_downstream
        if self.pending:
            syncs, self.pending = self.pending, []
            self.bridge.run(self._send_syncs(syncs))

    async def _send_syncs(self, syncs: list[OffsetSync]) -> None:
        if self.producer is None:
            raise ConnectException("the offset-syncs producer is not running")
        topic = self.settings.offset_syncs_topic
        for sync in syncs:
            await self.producer.send(topic, sync.value(), sync.key(), partition=0)
        await self.producer.flush()

    async def _close_clients(self) -> None:
        # The producer first and on its own: the consumer may be in the middle of a fetch that
        # poll() started on another thread.
        for client in (self.producer, self.consumer):
            if client is not None:
                try:
                    await client.close()
                except Exception as e:
                    log.info("mirror task: closing %s failed: %s", type(client).__name__, e)

    def _close(self) -> None:
        try:
            self.bridge.run(self._close_clients(), timeout=10)
        except Exception as e:
            log.warning("mirror task: closing the clients failed: %s", e)
        finally:
            self.bridge.close()

    def stop(self) -> None:
        if self._stopping():
            self._close()
