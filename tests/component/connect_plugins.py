"""Connectors used by the Connect component tests, written as a user would with zurau.connect.api."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from zurau.connect.api import (
    STRING_SCHEMA,
    ConnectRecord,
    DataException,
    RetriableException,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    Transformation,
)


class ExplodingTask(SourceTask):
    """Produces ``good`` records, then raises from poll()."""

    def start(self, config: dict[str, str]) -> None:
        self.topic = config["topic"]
        self.left = int(config.get("good", "1"))

    def poll(self) -> list[SourceRecord] | None:
        if self.left <= 0:
            raise RuntimeError("the source system is on fire")
        self.left -= 1
        return [SourceRecord(source_partition={"p": 0}, source_offset={"n": self.left}, topic=self.topic,
                             value_schema=STRING_SCHEMA, value="ok")]

    def stop(self) -> None:
        pass


class ExplodingConnector(SourceConnector):
    def start(self, config: dict[str, str]) -> None:
        self.config = config

    def task_class(self) -> type[Task]:
        return ExplodingTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]

    def stop(self) -> None:
        pass


class BrokenConnector(SourceConnector):
    """Refuses to start."""

    def start(self, config: dict[str, str]) -> None:
        raise ValueError("cannot reach the source system")

    def task_class(self) -> type[Task]:
        return ExplodingTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None:
        pass


class HangingTask(SourceTask):
    """Blocks in poll() for good and ignores stop(): the worker must still let go of it."""

    def start(self, config: dict[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        threading.Event().wait()
        return None

    def stop(self) -> None:
        pass


class HangingConnector(ExplodingConnector):
    def task_class(self) -> type[Task]:
        return HangingTask


# --------------------------------------------------------------------------- error handling
class RejectField(Transformation):
    """Fails (DataException) on a map value whose ``field`` (default ``bad``) is true."""

    def configure(self, config: Mapping[str, Any]) -> None:
        self.field = str(config.get("field", "bad"))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if isinstance(record.value, dict) and record.value.get(self.field):
            raise DataException(f"record {record.value.get('n')} is rejected")
        return record


#: How often FlakyTransform has failed per (topic, n), shared by the worker's threads in this process.
FLAKY_FAILURES: dict[tuple[str, Any], int] = {}


class FlakyTransform(Transformation):
    """Raises RetriableException the first ``failures`` (default 2) times it sees a map value with
    ``flaky`` true, then passes it on."""

    def configure(self, config: Mapping[str, Any]) -> None:
        self.failures = int(config.get("failures", "2"))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if isinstance(record.value, dict) and record.value.get("flaky"):
            key = (record.topic, record.value.get("n"))
            if FLAKY_FAILURES.get(key, 0) < self.failures:
                FLAKY_FAILURES[key] = FLAKY_FAILURES.get(key, 0) + 1
                raise RetriableException(f"record {record.value.get('n')} not yet")
        return record


#: put() calls of BusySinkTask, per file: how many raised RetriableException so far.
BUSY_PUTS: dict[str, int] = {}


class BusySinkTask(SinkTask):
    """Appends each value as a line to ``file``, but its first ``busy`` (default 1) put() calls
    raise RetriableException after asking for redelivery in 100 ms."""

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    def start(self, config: dict[str, str]) -> None:
        self.file = config["file"]
        self.busy = int(config.get("busy", "1"))

    def put(self, records: list[SinkRecord]) -> None:
        if records and BUSY_PUTS.get(self.file, 0) < self.busy:
            BUSY_PUTS[self.file] = BUSY_PUTS.get(self.file, 0) + 1
            self.context.timeout(100)
            raise RetriableException("the sink system is busy")
        with open(self.file, "a", encoding="utf-8") as f:
            for r in records:
                f.write(f"{r.value}\n")

    def stop(self) -> None:
        pass


class BusySinkConnector(SinkConnector):
    def start(self, config: dict[str, str]) -> None:
        self.config = config

    def task_class(self) -> type[Task]:
        return BusySinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]

    def stop(self) -> None:
        pass
