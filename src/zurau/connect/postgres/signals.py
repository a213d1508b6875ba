"""Debezium's signals: what a signal is, the actions' data, and the two channels.

A signal is ``(id, type, data)``; ``data`` is a JSON object (may be absent). Channels
(``signal.enabled.channels``):

* ``source``: rows inserted into the signaling table ``signal.data.collection`` (columns, by
  position: id, type, data -- Debezium's ``CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY
  KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)``), seen through the replication
  stream in commit order. The incremental snapshot's watermarks travel this way too
  (``snapshot-window-open``/``-close``), which is why incremental snapshots need this table even
  when they are requested through Kafka.
* ``kafka``: records of partition 0 of ``signal.kafka.topic`` (default
  ``<topic.prefix>-signal``) whose key is the connector's ``topic.prefix``, value
  ``{"id": ..., "type": "execute-snapshot", "data": {...}}`` (``id`` optional); records with
  another key are ignored. The position read is kept in the connector's source offsets as
  ``channelOffset`` (Debezium's name), so a restart continues after the last signal handled.

Actions (:func:`parse_snapshot_request`, :func:`parse_stop_request`):

* ``execute-snapshot``: ``{"type": "incremental"|"blocking" (default incremental, any case),
  "data-collections": [regex, ...], "additional-conditions": [{"data-collection": regex,
  "filter": ...}]}`` -- the filter is a condition appended to the chunk query (incremental) or a
  whole ``SELECT`` (blocking); the older ``"additional-condition": "..."`` applies to every table;
* ``stop-snapshot``: ``{"type": "incremental", "data-collections": [regex, ...]}`` (none: stop all);
* ``pause-snapshot``, ``resume-snapshot``: incremental snapshots only; data ignored;
* ``log``: ``{"message": "..."}``, logged at INFO with ``{}`` replaced by the stream position.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zurau.client.config import ClientConfig
from zurau.client.consumer import Consumer
from zurau.client.types import TopicPartition
from zurau.connect.mirror.bridge import AsyncBridge

log = logging.getLogger("zurau.connect.postgres")

EXECUTE_SNAPSHOT = "execute-snapshot"
STOP_SNAPSHOT = "stop-snapshot"
PAUSE_SNAPSHOT = "pause-snapshot"
RESUME_SNAPSHOT = "resume-snapshot"
LOG = "log"
CHANNEL_OFFSET = "channelOffset"


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    channel: str = "source"


def parse_data(raw: Any) -> dict[str, Any]:
    """A signal's data: a JSON object given as text or already parsed; {} when absent or not an
    object (logged)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        parsed = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else str(raw))
    except ValueError:
        log.warning("signal data is not JSON: %r", raw)
        return {}
    if not isinstance(parsed, dict):
        log.warning("signal data is not a JSON object: %r", raw)
        return {}
    return parsed


def signal_from_row(values: tuple[Any, ...]) -> Signal | None:
    """A signal from a signaling-table row (id, type, data by position)."""
    if len(values) < 2 or values[1] is None:
        log.warning("ignoring a signaling-table row without a type: %r", values)
        return None

    def text(v: Any) -> str:
        return v.decode("utf-8") if isinstance(v, bytes) else str(v)

    data = values[2] if len(values) > 2 else None
    return Signal(text(values[0]) if values[0] is not None else "", text(values[1]), parse_data(data))


def signal_from_kafka(key: bytes | None, value: bytes | None, topic_prefix: str) -> Signal | None:
    """A signal from a record of the kafka channel (None when not for this connector or bad)."""
    if key is None or key.decode("utf-8", "replace") != topic_prefix:
        log.info("signal key %r does not match the connector's topic.prefix %r: ignored", key, topic_prefix)
        return None
    if not value:
        return None
    try:
        document = json.loads(value)
    except ValueError:
        log.warning("skipped a kafka signal that is not JSON: %r", value)
        return None
    if not isinstance(document, dict) or not document.get("type"):
        log.warning("skipped a kafka signal without a type: %r", value)
        return None
    return Signal(
        str(document.get("id") or ""), str(document["type"]), parse_data(document.get("data")), "kafka"
    )


@dataclass(frozen=True)
class SnapshotRequest:
    """An ``execute-snapshot``: ``kind`` is ``incremental`` or ``blocking``; ``conditions`` are
    ``(table regex, filter)`` pairs, the first match wins."""

    kind: str
    patterns: tuple[str, ...]
    conditions: tuple[tuple[re.Pattern[str], str], ...] = ()
    surrogate_key: str = ""

    def condition_for(self, table: str) -> str:
        for pattern, condition in self.conditions:
            if pattern.fullmatch(table):
                return condition
        return ""

    def tables(self, captured: list[str]) -> list[str]:
        """The captured tables (``<schema>.<table>``) matching the patterns, in pattern order."""
        out: list[str] = []
        for raw in self.patterns:
            try:
                pattern = re.compile(raw.strip())
            except re.error:
                log.warning("execute-snapshot: %r is not a regular expression; ignored", raw)
                continue
            matched = [t for t in captured if pattern.fullmatch(t)]
            if not matched:
                log.warning("execute-snapshot: no captured table matches %r", raw)
            out += [t for t in matched if t not in out]
        return out


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def parse_snapshot_request(data: Mapping[str, Any]) -> SnapshotRequest | None:
    kind = str(data.get("type") or "incremental").lower()
    if kind not in ("incremental", "blocking"):
        log.warning("execute-snapshot of type %r is not supported (incremental or blocking)", kind)
        return None
    patterns = _strings(data.get("data-collections"))
    if not patterns:
        log.warning("execute-snapshot without data-collections: ignored")
        return None
    conditions: list[tuple[re.Pattern[str], str]] = []
    for entry in data.get("additional-conditions") or []:
        if isinstance(entry, Mapping) and entry.get("data-collection") and entry.get("filter"):
            conditions.append((re.compile(str(entry["data-collection"])), str(entry["filter"])))
    if data.get("additional-condition"):  # Debezium 1.x/2.0: one condition for every table
        conditions.append((re.compile(".*"), str(data["additional-condition"])))
    return SnapshotRequest(kind, patterns, tuple(conditions), str(data.get("surrogate-key") or ""))


def parse_stop_request(data: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``(type, table regexes)`` of a ``stop-snapshot`` (no regexes: stop everything)."""
    return str(data.get("type") or "incremental").lower(), _strings(data.get("data-collections"))


class KafkaSignalChannel:
    """Reads partition 0 of the signal topic from ``start_offset`` (None: the beginning)."""

    def __init__(
        self, bootstrap_servers: str, topic: str, topic_prefix: str, start_offset: int | None
    ) -> None:
        self.topic = topic
        self.topic_prefix = topic_prefix
        self.bridge = AsyncBridge(f"cdc-kafka-signals-{topic_prefix}")
        self.partition = TopicPartition(topic, 0)
        self.consumer = Consumer(
            ClientConfig.from_props({"bootstrap.servers": bootstrap_servers}),
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
        )
        try:
            self.bridge.run(self.consumer.start(), timeout=30)
        except BaseException:
            self.bridge.close()
            raise
        self.consumer.assign([self.partition])
        if start_offset is not None:
            self.consumer.seek(self.partition, start_offset)

    def read(self, timeout_ms: int) -> list[tuple[int, Signal]]:
        """The signals that arrived, with their offsets in the topic."""
        batches = self.bridge.run(self.consumer.getmany(timeout_ms=timeout_ms, max_records=100), timeout=30)
        out = []
        for records in batches.values():
            for r in records:
                signal = signal_from_kafka(r.key, r.value, self.topic_prefix)
                if signal is not None:
                    out.append((r.offset, signal))
        return out

    def close(self) -> None:
        try:
            self.bridge.run(self.consumer.close(), timeout=10)
        except Exception as e:  # closing must not fail the task's stop
            log.warning("closing the kafka signal consumer failed: %s", e)
        finally:
            self.bridge.close()


__all__ = [
    "CHANNEL_OFFSET",
    "EXECUTE_SNAPSHOT",
    "LOG",
    "PAUSE_SNAPSHOT",
    "RESUME_SNAPSHOT",
    "STOP_SNAPSHOT",
    "KafkaSignalChannel",
    "Signal",
    "SnapshotRequest",
    "parse_data",
    "parse_snapshot_request",
    "parse_stop_request",
    "signal_from_kafka",
    "signal_from_row",
]
