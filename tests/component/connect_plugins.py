"""Connectors used by the Connect component tests, written as a user would with zurau.connect.api."""

from __future__ import annotations

import threading

from zurau.connect.api import STRING_SCHEMA, SourceConnector, SourceRecord, SourceTask, Task


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
