"""MirrorMaker 2's ``MirrorCheckpointConnector``: consumer group offsets of the source, translated
to the remote topics, as checkpoints in ``<source alias>.checkpoints.internal`` on the worker's
cluster and, with ``sync.group.offsets.enabled``, committed to the same groups there.

Groups: those of the source matching ``groups`` and not ``groups.exclude`` (regexes), looked up
again every ``refresh.groups.interval.seconds``, spread over the tasks (``task.assigned.groups``).
Every ``emit.checkpoints.interval.seconds`` a task reads the new offset syncs written by
:class:`~zurau.connect.mirror.source.MirrorSourceConnector`, fetches its groups' committed offsets
of replicated topics on the source and translates each (see :meth:`OffsetTranslator.translate`);
a checkpoint is emitted when a translation changed. Every ``sync.group.offsets.interval.seconds``
the translated offsets are committed to the target group, only while that group has no active
member and only forward (a target offset is never moved back), as MM2 does. With
``enabled=false`` the connector has no tasks.
"""

from __future__ import annotations

import bisect
import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from zurau.client.admin import AdminClient
from zurau.client.consumer import Consumer
from zurau.client.groups_admin import GroupAdmin, GroupDescription
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
from zurau.connect.mirror.config import COMMON, GROUPS_EXCLUDE_DEFAULT, MirrorSettings, regex_list
from zurau.connect.mirror.formats import Checkpoint, FormatError, OffsetSync
from zurau.connect.mirror.source import validate_mirror
from zurau.connect.mirror.topics import ensure_topics

log = logging.getLogger("zurau.connect.mirror")

ASSIGNED = "task.assigned.groups"


CHECKPOINT_DEF = COMMON.merged(
    ConfigDef()
    .define("groups", ConfigType.LIST, ".*", validator=regex_list, importance=Importance.HIGH,
            documentation="Consumer groups to checkpoint (regexes).")
    .define("groups.exclude", ConfigType.LIST, GROUPS_EXCLUDE_DEFAULT, validator=regex_list,
            importance=Importance.HIGH, documentation="Consumer groups not to checkpoint (regexes).")
    .define("emit.checkpoints.enabled", ConfigType.BOOLEAN, True, importance=Importance.LOW,
            documentation="Write checkpoints to the checkpoints topic.")
    .define("emit.checkpoints.interval.seconds", ConfigType.LONG, 60, validator=Range.at_least(0),
            importance=Importance.LOW, documentation="How often to translate and emit checkpoints.")
    .define("sync.group.offsets.enabled", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
            documentation="Commit translated offsets to the groups on the target cluster.")
    .define("sync.group.offsets.interval.seconds", ConfigType.LONG, 60, validator=Range.at_least(0),
            importance=Importance.LOW, documentation="How often to commit translated group offsets.")
    .define("refresh.groups.interval.seconds", ConfigType.LONG, 600, validator=Range.at_least(1),
            importance=Importance.LOW, documentation="How often to look for new consumer groups.")
    .define("checkpoints.topic.replication.factor", ConfigType.INT, -1, importance=Importance.LOW,
            documentation="Replication factor of the checkpoints topic (-1: the broker's default).")
)


class OffsetTranslator:
    """The offset syncs of each upstream partition, ordered by upstream offset.

    A sync for upstream offset ``u`` replaces every sync of that partition at ``u`` or later (they
    came from an earlier copy that a restarted task superseded).
    """

    def __init__(self) -> None:
        self.syncs: dict[TopicPartition, list[tuple[int, int]]] = {}

    def add(self, sync: OffsetSync) -> None:
        entries = self.syncs.setdefault(TopicPartition(sync.topic, sync.partition), [])
        cut = bisect.bisect_left(entries, (sync.upstream_offset, -(2**63)))
        del entries[cut:]
        entries.append((sync.upstream_offset, sync.downstream_offset))

    def translate(self, tp: TopicPartition, offset: int) -> int | None:
        """The downstream offset for a group positioned at upstream ``offset`` (the next record to
        read), or None before the first sync. Exact at a sync and between two syncs (the offsets
        advance together there); past the last sync the record after it (MM2's conservative
        answer: the group may read a few records again, never skip one)."""
        entries = self.syncs.get(tp)
        if not entries:
            return None
        i = bisect.bisect_right(entries, (offset, 2**63)) - 1
        if i < 0:
            return None
        upstream, downstream = entries[i]
        if offset == upstream:
            return downstream
        if i + 1 < len(entries):
            return downstream + (offset - upstream)
        return downstream + 1


class MirrorCheckpointConnector(SourceConnector):
    """One task per group slice (no tasks while the source has no matching group)."""

    def start(self, config: dict[str, str]) -> None:
        self.config = dict(config)
        self.stopping = threading.Event()
        self.refresher: threading.Thread | None = None
        self.settings, parsed = MirrorSettings.from_props(config, CHECKPOINT_DEF)
        self.groups: list[str] = []
        if not self.settings.enabled:
            return  # no tasks
        self.include = [re.compile(p) for p in parsed["groups"] if p]
        self.exclude = [re.compile(p) for p in parsed["groups.exclude"] if p]
        self.bridge = AsyncBridge(f"mirror-checkpoint-{self.settings.source_alias}")
        try:
            self.bridge.run(ensure_topics(self.settings.target,
                                          {self.settings.policy.checkpoints_topic(self.settings.source_alias): 1},
                                          parsed["checkpoints.topic.replication.factor"], {"cleanup.policy": "compact"}))
            self.groups = self._groups()
        except Exception as e:
            self.bridge.close()
            raise ConnectException(f"mirror checkpoints {self.settings.source_alias}: cannot create the checkpoints "
                                   f"topic or list groups (source {config.get('source.cluster.bootstrap.servers')}, "
                                   f"target {config.get('target.cluster.bootstrap.servers')}): {e!r}") from e
        self.refresher = threading.Thread(target=self._refresh_loop, args=(float(parsed["refresh.groups.interval.seconds"]),),
                                          daemon=True, name="mirror-checkpoint-refresh")
        self.refresher.start()

    def _groups(self) -> list[str]:
        async def listing() -> list[str]:
            async with AdminClient(self.settings.source) as admin:
                return [g.group_id for g in await GroupAdmin(admin).list_groups()]
        return sorted(g for g in self.bridge.run(listing())
                      if any(p.fullmatch(g) for p in self.include) and not any(p.fullmatch(g) for p in self.exclude))

    def _refresh_loop(self, interval: float) -> None:
        while not self.stopping.wait(interval):
            try:
                now = self._groups()
            except Exception as e:
                log.warning("mirror %s: cannot list consumer groups: %s", self.settings.source_alias, e)
                continue
            if now != self.groups:
                self.groups = now
                self.context.request_task_reconfiguration()

    def task_class(self) -> type[Task]:
        return MirrorCheckpointTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        n = min(max_tasks, len(self.groups))
        return [dict(self.config, **{ASSIGNED: ",".join(self.groups[i::n])}) for i in range(n)]

    def stop(self) -> None:
        self.stopping.set()
        if self.refresher is not None:
            self.refresher.join(5)
        bridge = getattr(self, "bridge", None)
        if bridge is not None:
            bridge.close()

    def config_def(self) -> ConfigDef:
        return CHECKPOINT_DEF

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_mirror(CHECKPOINT_DEF, config)


class MirrorCheckpointTask(BridgedTask, SourceTask):
    def start(self, config: dict[str, str]) -> None:
        self.settings, parsed = MirrorSettings.from_props(config, CHECKPOINT_DEF)
        self.groups = [g for g in config.get(ASSIGNED, "").split(",") if g]
        self.emit = bool(parsed["emit.checkpoints.enabled"])
        self.emit_interval = float(parsed["emit.checkpoints.interval.seconds"])
        self.sync_groups = bool(parsed["sync.group.offsets.enabled"])
        self.sync_interval = float(parsed["sync.group.offsets.interval.seconds"])
        self.checkpoints_topic = self.settings.policy.checkpoints_topic(self.settings.source_alias)
        self.translator = OffsetTranslator()
        self.emitted: dict[tuple[str, TopicPartition], Checkpoint] = {}
        self.next_emit = self.next_sync = time.monotonic()
        self.bridge = AsyncBridge(f"mirror-checkpoint-task-{self.settings.source_alias}")
        self._clients: list[Consumer | AdminClient] = []  # what _open() made, to close
        try:
            self.bridge.run(self._open())
        except BaseException:
            self.bridge.run(self._close_clients(), timeout=10)
            self.bridge.close()
            raise
        if self._started():
            self._close()

    async def _open(self) -> None:
        self.syncs_consumer = Consumer(self.settings.offset_syncs_cluster, auto_offset_reset="earliest",
                                       fetch_max_wait_ms=100)
        self._clients.append(self.syncs_consumer)
        await self.syncs_consumer.start()
        self.syncs_consumer.assign([TopicPartition(self.settings.offset_syncs_topic, 0)])
        self.source_admin = AdminClient(self.settings.source)
        self.target_admin = AdminClient(self.settings.target)
        self._clients += [self.source_admin, self.target_admin]

    async def _read_syncs(self) -> None:
        while True:
            batches = await self.syncs_consumer.getmany(timeout_ms=100, max_records=10_000)
            if not any(batches.values()):
                return
            for recs in batches.values():
                for r in recs:
                    try:
                        self.translator.add(OffsetSync.decode(r.key, r.value))
                    except FormatError as e:
                        log.warning("skipping a malformed offset sync at offset %d: %s", r.offset, e)

    async def _translated(self) -> dict[str, dict[TopicPartition, Checkpoint]]:
        """Per group, a checkpoint for every committed offset of a replicated topic that translates."""
        await self._read_syncs()
        source_groups = GroupAdmin(self.source_admin)
        out: dict[str, dict[TopicPartition, Checkpoint]] = {}
        for group in self.groups:
            try:
                committed = await source_groups.committed_offsets(group)
            except Exception as e:  # a group deleted meanwhile
                log.info("mirror checkpoint: no offsets for group %s: %s", group, e)
                continue
            for tp, offset in committed.items():
                if not self.settings.replicates(tp.topic):
                    continue
                downstream = self.translator.translate(tp, offset)
                if downstream is None:
                    continue
                remote = TopicPartition(self.settings.policy.format_remote_topic(self.settings.source_alias, tp.topic),
                                        tp.partition)
                out.setdefault(group, {})[remote] = Checkpoint(group, remote.topic, remote.partition, offset, downstream)
        return out

    async def _sync_group_offsets(self, checkpoints: dict[str, dict[TopicPartition, Checkpoint]]) -> None:
        target_groups = GroupAdmin(self.target_admin)
        described = await target_groups.describe_groups(list(checkpoints))
        for group, by_tp in checkpoints.items():
            description = described.get(group)
            if isinstance(description, GroupDescription) and not description.is_inactive:
                continue  # consumers are active on the target: their positions win
            try:
                current = await target_groups.committed_offsets(group, list(by_tp))
            except Exception:
                current = {}
            forward = {tp: c.downstream_offset for tp, c in by_tp.items() if current.get(tp, -1) < c.downstream_offset}
            if forward:
                results = await target_groups.commit_offsets(group, forward)
                failed = {tp: e for tp, e in results.items() if e is not None}
                if failed:
                    log.warning("mirror checkpoint: committing %s offsets on the target failed: %s", group, failed)

    def poll(self) -> list[SourceRecord] | None:
        now = time.monotonic()
        due = min(self.next_emit, self.next_sync if self.sync_groups else self.next_emit)
        if now < due:
            time.sleep(min(1.0, due - now))
            return None
        checkpoints = self.bridge.run(self._translated())
        records: list[SourceRecord] = []
        if now >= self.next_emit:
            self.next_emit = now + self.emit_interval
            if self.emit:
                for by_tp in checkpoints.values():
                    for tp, cp in by_tp.items():
                        if self.emitted.get((cp.group, tp)) == cp:
                            continue
                        self.emitted[(cp.group, tp)] = cp
                        records.append(SourceRecord(
                            source_partition=cp.connect_partition(), source_offset={"offset": 0},
                            topic=self.checkpoints_topic, kafka_partition=0, key_schema=OPTIONAL_BYTES_SCHEMA,
                            key=cp.key(), value_schema=OPTIONAL_BYTES_SCHEMA, value=cp.value()))
        if self.sync_groups and now >= self.next_sync:
            self.next_sync = now + self.sync_interval
            if checkpoints:
                self.bridge.run(self._sync_group_offsets(checkpoints))
        if not records and self.emit_interval > 0:
            time.sleep(min(0.2, self.emit_interval))
        return records

    async def _close_clients(self) -> None:
        for client in self._clients:
            try:
                await client.close()
            except Exception as e:
                log.info("mirror checkpoint task: closing %s failed: %s", type(client).__name__, e)

    def _close(self) -> None:
        try:
            self.bridge.run(self._close_clients(), timeout=10)
        except Exception as e:
            log.warning("mirror checkpoint task: closing the clients failed: %s", e)
        finally:
            self.bridge.close()

    def stop(self) -> None:
        if self._stopping():
            self._close()
