"""Where a worker keeps connector configs, source offsets and statuses.

Record formats are Kafka Connect's, so its tools and a Kafka Connect cluster read the same topics
(values are schemaless JSON, as Kafka writes them with ``schemas.enable=false``):

* config topic (1 partition, compacted): ``connector-<c>`` → ``{"properties":{...}}`` (null:
  deleted), ``task-<c>-<n>`` → ``{"properties":{...}}``, ``commit-<c>`` → ``{"tasks":N}`` (the task
  configs written before it become current), ``target-state-<c>`` →
  ``{"state":"STARTED|PAUSED","state.v2":"STARTED|PAUSED|STOPPED"}``, ``restart-connector-<c>`` →
  ``{"include-tasks":bool,"only-failed":bool}``; and Zurau's own ``restart-task-<c>-<n>`` → ``{}``
  for a single task restart (Kafka forwards that request between workers instead).
* offset topic (25 partitions, compacted): key ``["<c>",{source partition}]``, value the offset
  dict (null: reset).
* status topic (5 partitions, compacted): ``status-connector-<c>`` / ``status-task-<c>-<n>`` →
  ``{"state":..,"trace":..,"worker_id":..,"generation":N}``; ``status-topic-<t>:connector-<c>`` →
  ``{"topic":{"name":t,"connector":c,"task":n,"discoverTimestamp":ms}}`` for active topics.

Standalone mode keeps configs and statuses in memory and offsets in ``offset.storage.file.filename``
(a JSON object from the key above, as text, to the offset; written atomically).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zurau.client.admin import NewTopic
from zurau.client.cluster import Cluster
from zurau.client.kafka_based_log import COMPACT, KafkaBasedLog
from zurau.client.types import ConsumerRecord
from zurau.connect.json_text import dumps
from zurau.protocol.errors import KafkaError

log = logging.getLogger("zurau.connect.stores")

STARTED, PAUSED, STOPPED = "STARTED", "PAUSED", "STOPPED"
_TASK_KEY = re.compile(r"^task-(.+)-(\d+)$")
_RESTART_TASK_KEY = re.compile(r"^restart-task-(.+)-(\d+)$")


def _json(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class RestartRequest:
    connector: str
    task: int | None = None  # None: the connector (and its tasks when include_tasks)
    include_tasks: bool = False
    only_failed: bool = False


@dataclass
class ConfigState:
    """Everything the config topic says, after applying its records in order."""

    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    pending_tasks: dict[str, dict[int, dict[str, str]]] = field(default_factory=dict)
    offset: int = -1

    def target_state(self, connector: str) -> str:
        return self.target_states.get(connector, STARTED)

    def apply(self, key: str, value: Any) -> RestartRequest | None:
        """Apply one record; returns the restart it asks for, if it is one."""
        if key.startswith("connector-"):
            name = key[len("connector-"):]
            if value is None:
                self.connectors.pop(name, None)
                self.target_states.pop(name, None)
                self.tasks.pop(name, None)
                self.pending_tasks.pop(name, None)
            elif isinstance(value, dict) and isinstance(value.get("properties"), dict):
                self.connectors[name] = {str(k): str(v) for k, v in value["properties"].items()}
        elif key.startswith("target-state-"):
            name = key[len("target-state-"):]
            if value is None:
                self.target_states.pop(name, None)
            elif isinstance(value, dict):
                state = value.get("state.v2") or value.get("state")
                if state in (STARTED, PAUSED, STOPPED):
                    self.target_states[name] = state
        elif key.startswith("commit-"):
            name = key[len("commit-"):]
            if isinstance(value, dict) and isinstance(value.get("tasks"), int):
                pending = self.pending_tasks.pop(name, {})
                n = value["tasks"]
                if all(i in pending for i in range(n)):
                    self.tasks[name] = [pending[i] for i in range(n)]
                else:
                    log.warning("commit of %d tasks for %s without all their configs; ignored", n, name)
        elif key.startswith("restart-connector-"):
            name = key[len("restart-connector-"):]
            v = value if isinstance(value, dict) else {}
            return RestartRequest(name, None, bool(v.get("include-tasks")), bool(v.get("only-failed")))
        elif m := _RESTART_TASK_KEY.match(key):
            return RestartRequest(m.group(1), int(m.group(2)))
        elif m := _TASK_KEY.match(key):
            if isinstance(value, dict) and isinstance(value.get("properties"), dict):
                self.pending_tasks.setdefault(m.group(1), {})[int(m.group(2))] = {
                    str(k): str(v) for k, v in value["properties"].items()}
        return None


def connector_record(name: str, config: Mapping[str, str] | None) -> tuple[str, bytes | None]:
    return f"connector-{name}", None if config is None else dumps({"properties": dict(config)}).encode()


def task_records(name: str, configs: list[dict[str, str]]) -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = [
        (f"task-{name}-{i}", dumps({"properties": c}).encode()) for i, c in enumerate(configs)]
    out.append((f"commit-{name}", dumps({"tasks": len(configs)}).encode()))
    return out


def target_state_record(name: str, state: str | None) -> tuple[str, bytes | None]:
    if state is None:
        return f"target-state-{name}", None
    legacy = PAUSED if state == STOPPED else state
    return f"target-state-{name}", dumps({"state": legacy, "state.v2": state}).encode()


def restart_record(req: RestartRequest) -> tuple[str, bytes | None]:
    if req.task is not None:
        return f"restart-task-{req.connector}-{req.task}", b"{}"
    return (f"restart-connector-{req.connector}",
            dumps({"include-tasks": req.include_tasks, "only-failed": req.only_failed}).encode())


def offset_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    return dumps([connector, dict(partition)]).encode()


def parse_offset_key(key: bytes | None) -> tuple[str, dict[str, Any]] | None:
    k = _json(key)
    if isinstance(k, list) and len(k) == 2 and isinstance(k[0], str) and isinstance(k[1], dict):
        return k[0], k[1]
    return None


# --------------------------------------------------------------------------- Kafka topics


def topic_log(cluster: Cluster, topic: str, partitions: int, replication_factor: int,
              on_record: Callable[[ConsumerRecord], None], *, read_committed: bool = False) -> KafkaBasedLog:
    """A store's compacted topic; a record the store cannot apply is logged and skipped."""

    def apply(record: ConsumerRecord) -> None:
        try:
            on_record(record)
        except Exception:
            log.exception("cannot apply a record of %s at offset %d", topic, record.offset)

    return KafkaBasedLog(cluster, NewTopic(topic, partitions, replication_factor, COMPACT), apply,
                         name=f"zurau-connect-{topic}", read_committed=read_committed)


async def start_log(topic_log: KafkaBasedLog) -> None:
    """Start a store's log; a topic that cannot be created or read is a RuntimeError naming it."""
    try:
        await topic_log.start()
    except KafkaError as e:
        raise RuntimeError(f"cannot create the Connect topic {topic_log.topic}: {e}") from e
    except TimeoutError as e:
        raise RuntimeError(f"the Connect topic {topic_log.topic} is not ready: {e}") from e


# --------------------------------------------------------------------------- config store


class ConfigStore:
    """Connector configs and target states; in memory (standalone) or on the config topic."""

    def __init__(self) -> None:
        self.state = ConfigState()
        self.listeners: list[Callable[[str, RestartRequest | None], None]] = []

    def _apply(self, key: str, value: Any) -> None:
        restart = self.state.apply(key, value)
        for listener in self.listeners:
            listener(key, restart)

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def write(self, records: list[tuple[str, bytes | None]]) -> None:
        for key, value in records:
            self.state.offset += 1
            self._apply(key, _json(value))

    async def refresh(self) -> None:
        """Read every record written so far (by any worker)."""


class KafkaConfigStore(ConfigStore):
    def __init__(self, cluster: Cluster, topic: str, replication_factor: int) -> None:
        super().__init__()
        self.log = topic_log(cluster, topic, 1, replication_factor, self._on_record)

    def _on_record(self, record: ConsumerRecord) -> None:
        if record.key is None:
            return
        self.state.offset = record.offset
        self._apply(record.key.decode("utf-8", errors="replace"), _json(record.value))

    async def start(self) -> None:
        await start_log(self.log)

    async def close(self) -> None:
        await self.log.close()

    async def write(self, records: list[tuple[str, bytes | None]]) -> None:
        written = [await self.log.send(key.encode(), value, partition=0) for key, value in records]
        await self.log.wait_for(written[-1:])

    async def refresh(self) -> None:
        await self.log.read_to_end()


# --------------------------------------------------------------------------- offset store


class OffsetStore:
    """Source offsets by (connector, source partition); ``data`` maps the key bytes to the offset."""

    def __init__(self) -> None:
        self.data: dict[bytes, dict[str, Any]] = {}

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.data.get(offset_key(connector, partition))

    def offsets_of(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        out = []
        for key, value in self.data.items():
            parsed = parse_offset_key(key)
            if parsed is not None and parsed[0] == connector:
                out.append((parsed[1], value))
        return out

    def _apply(self, key: bytes, value: Any) -> None:
        if value is None:
            self.data.pop(key, None)
        elif isinstance(value, dict):
            self.data[key] = value

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def refresh(self) -> None:
        """Read offsets written by other workers so far."""

    async def put(self, connector: str, offsets: Mapping[bytes, dict[str, Any] | None]) -> None:
        """Store ``{offset_key: offset or None}`` durably."""
        for key, value in offsets.items():
            self._apply(key, value)


class FileOffsetStore(OffsetStore):
    """Standalone mode's offsets: one JSON file, replaced atomically (write a temporary file,
    fsync, rename). Several tasks flush concurrently: each write holds a lock, and a snapshot
    older than one already written is skipped, so the file only moves forward."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._write_lock = threading.Lock()
        self._snapshots = itertools.count(1)
        self._written = 0  # the newest snapshot on disk (guarded by _write_lock)

    async def start(self) -> None:
        if self.path.exists():
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            except ValueError as e:
                raise RuntimeError(f"the offsets file {self.path} is not valid JSON: {e}") from e
            for key, value in raw.items():
                self._apply(key.encode(), value)

    async def put(self, connector: str, offsets: Mapping[bytes, dict[str, Any] | None]) -> None:
        await super().put(connector, offsets)
        text = dumps({k.decode(): v for k, v in self.data.items()})
        snapshot = next(self._snapshots)
        tmp = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)

        def write() -> None:
            with self._write_lock:
                if snapshot < self._written:
                    return  # a newer snapshot (which includes this one's offsets) is on disk
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
                self._written = snapshot

        await asyncio.to_thread(write)


class KafkaOffsetStore(OffsetStore):
    """Offsets in a compacted topic; ``read_committed`` with exactly-once sources, whose tasks
    write their offsets in their transactions (:mod:`zurau.connect.exactly_once`)."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int, replication_factor: int,
                 *, read_committed: bool = False) -> None:
        super().__init__()
        self.topic = topic
        self.log = topic_log(cluster, topic, partitions, replication_factor, self._on_record,
                             read_committed=read_committed)

    def _on_record(self, record: ConsumerRecord) -> None:
        if record.key is not None:
            self._apply(record.key, _json(record.value))

    async def start(self) -> None:
        await start_log(self.log)

    async def close(self) -> None:
        await self.log.close()

    async def refresh(self) -> None:
        await self.log.read_to_end()

    async def put(self, connector: str, offsets: Mapping[bytes, dict[str, Any] | None]) -> None:
        records = [(key, None if value is None else dumps(value).encode()) for key, value in offsets.items()]
        if records:
            await self.log.write_many(records)


# --------------------------------------------------------------------------- status store


@dataclass
class Status:
    state: str
    worker_id: str
    trace: str | None = None
    generation: int = 0


class StatusStore:
    """Connector and task statuses and active topics; in memory or on the status topic."""

    def __init__(self) -> None:
        self.connectors: dict[str, Status] = {}
        self.tasks: dict[tuple[str, int], Status] = {}
        self.topics: dict[str, set[str]] = {}

    def _apply(self, key: str, value: Any) -> None:
        if key.startswith("status-connector-"):
            name = key[len("status-connector-"):]
            if value is None:
                self.connectors.pop(name, None)
            elif isinstance(value, dict):
                self.connectors[name] = Status(str(value.get("state")), str(value.get("worker_id")),
                                               value.get("trace"), int(value.get("generation") or 0))
        elif key.startswith("status-task-"):
            m = re.match(r"^status-task-(.+)-(\d+)$", key)
            if m is None:
                return
            tid = (m.group(1), int(m.group(2)))
            if value is None:
                self.tasks.pop(tid, None)
            elif isinstance(value, dict):
                self.tasks[tid] = Status(str(value.get("state")), str(value.get("worker_id")),
                                         value.get("trace"), int(value.get("generation") or 0))
        elif key.startswith("status-topic-"):
            topic, sep, rest = key[len("status-topic-"):].rpartition(":connector-")
            if not sep:
                return
            if value is None:
                self.topics.get(rest, set()).discard(topic)
            else:
                self.topics.setdefault(rest, set()).add(topic)

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def _write(self, key: str, value: bytes | None) -> None:
        self._apply(key, _json(value))

    async def put_connector(self, name: str, status: Status | None) -> None:
        await self._write(f"status-connector-{name}", None if status is None else _status_bytes(status))

    async def put_task(self, name: str, task: int, status: Status | None) -> None:
        await self._write(f"status-task-{name}-{task}", None if status is None else _status_bytes(status))

    async def put_topic(self, connector: str, topic: str, task: int, timestamp_ms: int) -> None:
        if topic in self.topics.get(connector, set()):
            return
        value = dumps({"topic": {"name": topic, "connector": connector, "task": task,
                                 "discoverTimestamp": timestamp_ms}}).encode()
        await self._write(f"status-topic-{topic}:connector-{connector}", value)

    async def reset_topics(self, connector: str) -> None:
        for topic in sorted(self.topics.get(connector, set())):
            await self._write(f"status-topic-{topic}:connector-{connector}", None)


def _status_bytes(s: Status) -> bytes:
    return dumps({"state": s.state, "trace": s.trace, "worker_id": s.worker_id, "generation": s.generation}).encode()


class KafkaStatusStore(StatusStore):
    def __init__(self, cluster: Cluster, topic: str, partitions: int, replication_factor: int) -> None:
        super().__init__()
        self.log = topic_log(cluster, topic, partitions, replication_factor, self._on_record)

    def _on_record(self, record: ConsumerRecord) -> None:
        if record.key is not None:
            self._apply(record.key.decode("utf-8", errors="replace"), _json(record.value))

    async def start(self) -> None:
        await start_log(self.log)

    async def close(self) -> None:
        await self.log.close()

    async def _write(self, key: str, value: bytes | None) -> None:
        self._apply(key, _json(value))
        await self.log.send(key.encode(), value)

