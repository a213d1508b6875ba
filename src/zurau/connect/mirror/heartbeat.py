"""MirrorMaker 2's ``MirrorHeartbeatConnector``: heartbeats of a replication flow, written to the
``heartbeats`` topic of the worker's (target) cluster.

The connector of flow ``A->B`` runs on a worker of cluster ``B``; it creates ``heartbeats`` on
``B`` (one partition, compacted, ``heartbeats.topic.replication.factor``) and has one task, which
every ``emit.heartbeats.interval.seconds`` (default 1) writes a :class:`~.formats.Heartbeat`
``(A, B, now)`` there (``emit.heartbeats.enabled=false``: no task). Replication makes heartbeats
travel: flow ``B->C`` copies ``B``'s ``heartbeats`` to ``C`` as ``B.heartbeats`` (and ``A.heartbeats``
of ``B`` as ``B.A.heartbeats``), so the heartbeat topics of a cluster tell which clusters reach it
and over how many hops (:mod:`.client`), and a heartbeat's age there is the flow's latency.

Settings: ``source.cluster.alias`` (required), ``target.cluster.alias`` (``target``),
``target.cluster.bootstrap.servers`` and other ``target.cluster.*`` client settings (to create the
topic), ``emit.heartbeats.enabled`` (true), ``emit.heartbeats.interval.seconds`` (1),
``heartbeats.topic.replication.factor`` (-1: the broker's default; MM2's is 3). As in MM2 the
connector ignores ``enabled``: dedicated mode runs it for every pair of clusters unless heartbeats
are turned off, so that each flow's source has heartbeats to replicate.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from zurau.connect.api import (
    BYTES_SCHEMA,
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
from zurau.connect.mirror.bridge import AsyncBridge
from zurau.connect.mirror.config import COMMON, HEARTBEATS_TOPIC, cluster_client
from zurau.connect.mirror.formats import Heartbeat
from zurau.connect.mirror.source import validate_mirror
from zurau.connect.mirror.topics import ensure_topics

log = logging.getLogger("zurau.connect.mirror")

HEARTBEAT_DEF = COMMON.merged(
    ConfigDef()
    .define(
        "source.cluster.bootstrap.servers",
        ConfigType.STRING,
        None,
        importance=Importance.LOW,
        documentation="The source cluster's brokers (not used by this connector).",
    )
    .define(
        "emit.heartbeats.enabled",
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Whether to emit heartbeats to the target cluster.",
    )
    .define(
        "emit.heartbeats.interval.seconds",
        ConfigType.LONG,
        1,
        validator=Range.at_least(0),
        importance=Importance.LOW,
        documentation="How often to emit a heartbeat.",
    )
    .define(
        "heartbeats.topic.replication.factor",
        ConfigType.SHORT,
        -1,
        importance=Importance.LOW,
        documentation="Replication factor of the heartbeats topic (-1: the broker's default).",
    )
)


class MirrorHeartbeatConnector(SourceConnector):
    """Creates the heartbeats topic; one task (none when heartbeats are off)."""

    def start(self, config: dict[str, str]) -> None:
        self.config = dict(config)
        parsed = HEARTBEAT_DEF.parse(config)
        self.emit = bool(parsed["emit.heartbeats.enabled"])
        bridge = AsyncBridge(f"mirror-heartbeat-{parsed['source.cluster.alias']}")
        try:
            bridge.run(
                ensure_topics(
                    cluster_client(config, "target.cluster."),
                    {HEARTBEATS_TOPIC: 1},
                    parsed["heartbeats.topic.replication.factor"],
                    {"cleanup.policy": "compact"},
                )
            )
        except Exception as e:
            raise ConnectException(
                f"mirror heartbeats: cannot create the {HEARTBEATS_TOPIC} topic on "
                f"{config.get('target.cluster.bootstrap.servers')}: {e!r}"
            ) from e
        finally:
            bridge.close()

    def task_class(self) -> type[Task]:
        return MirrorHeartbeatTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)] if self.emit else []

    def stop(self) -> None:
        pass

    def config_def(self) -> ConfigDef:
        return HEARTBEAT_DEF

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_mirror(HEARTBEAT_DEF, config)


class MirrorHeartbeatTask(SourceTask):
    """Returns one heartbeat each interval (``poll`` waits at most a second, then returns None)."""

    def start(self, config: dict[str, str]) -> None:
        parsed = HEARTBEAT_DEF.parse(config)
        self.source_alias: str = parsed["source.cluster.alias"]
        self.target_alias: str = parsed["target.cluster.alias"]
        self.interval = float(parsed["emit.heartbeats.interval.seconds"])
        self.stopped = threading.Event()
        self.next_due = time.monotonic() + self.interval

    def poll(self) -> list[SourceRecord] | None:
        wait = self.next_due - time.monotonic()
        if wait > 0:
            self.stopped.wait(min(1.0, wait))
            return None
        if self.stopped.is_set():
            return None
        self.next_due = time.monotonic() + self.interval
        now = int(time.time() * 1000)
        beat = Heartbeat(self.source_alias, self.target_alias, now)
        return [
            SourceRecord(
                source_partition=beat.connect_partition(),
                source_offset={"offset": 0},
                topic=HEARTBEATS_TOPIC,
                kafka_partition=0,
                key_schema=BYTES_SCHEMA,
                key=beat.key(),
                value_schema=BYTES_SCHEMA,
                value=beat.value(),
                timestamp=now,
            )
        ]

    def stop(self) -> None:
        self.stopped.set()
