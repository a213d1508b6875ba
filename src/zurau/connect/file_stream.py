"""Kafka's FileStream connectors: lines of a file to a topic, and records of topics to a file.

Source (``org.apache.kafka.connect.file.FileStreamSourceConnector``): ``file`` (standard input
when unset), ``topic`` (one topic), ``batch.size`` (most lines per poll, default 2000). Each
complete line (ending in ``\\n``) becomes a record with a ``string`` value and no key. The source
partition is ``{"filename": file}`` and the offset ``{"position": bytes read}``, both as Kafka's,
so a restarted task continues after the last committed line. A trailing line without its newline
waits for the rest.

Sink (``org.apache.kafka.connect.file.FileStreamSinkConnector``): ``file`` (standard output when
unset) and the usual ``topics``/``topics.regex``; each record value is appended as its string form
plus a newline, written as Kafka's sink writes it (Java's ``toString``: ``{a=1}``, ``Struct{id=1}``);
``flush`` makes the file durable before offsets are committed.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import IO, Any

from zurau.connect.api import (
    STRING_SCHEMA,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TopicPartition,
)
from zurau.connect.data import java_text

_SOURCE_CONFIG = (ConfigDef()
                  .define("file", ConfigType.STRING, None, importance=Importance.HIGH,
                          documentation="Source filename. If not specified, the standard input will be used")
                  .define("topic", ConfigType.LIST, importance=Importance.HIGH,
                          documentation="The topic to publish data to")
                  .define("batch.size", ConfigType.INT, 2000, validator=Range.at_least(1), importance=Importance.LOW,
                          documentation="The maximum number of records the source task can read from the file "
                                        "each time it is polled"))

_SINK_CONFIG = ConfigDef().define("file", ConfigType.STRING, None, importance=Importance.HIGH,
                                  documentation="Destination filename. If not specified, the standard output will be used")


class FileStreamSourceTask(SourceTask):
    """Reads complete lines from the file, from the committed position on."""

    def start(self, config: dict[str, str]) -> None:
        parsed = _SOURCE_CONFIG.parse(config)
        self.filename: str | None = parsed["file"] or None
        self.topic: str = parsed["topic"][0]
        self.batch_size: int = parsed["batch.size"]
        self.position = 0
        self.stream: IO[bytes] | None = None
        self.buffer = b""
        if self.filename is not None:
            last = self.context.offset_storage_reader.offset({"filename": self.filename})
            if last is not None:
                position = last.get("position")
                if not isinstance(position, int) or position < 0:
                    raise ConfigException(f"Offset position is the incorrect type: {position!r}")
                self.position = position

    def _open(self) -> IO[bytes] | None:
        if self.stream is not None:
            return self.stream
        if self.filename is None:
            self.stream = sys.stdin.buffer
            return self.stream
        try:
            f = open(self.filename, "rb")  # noqa: SIM115 - kept open across polls, closed in stop
        except FileNotFoundError:
            return None  # Kafka's task waits for the file to appear
        f.seek(self.position)
        self.stream = f
        return f

    def poll(self) -> list[SourceRecord] | None:
        stream = self._open()
        if stream is None:
            time.sleep(0.2)
            return None
        if b"\n" not in self.buffer:
            chunk = stream.read(1 << 16) if self.filename is not None else stream.readline()
            if not chunk:
                time.sleep(0.1)
                return None
            self.buffer += chunk
        records: list[SourceRecord] = []
        partition = {"filename": self.filename} if self.filename is not None else None
        while len(records) < self.batch_size:
            end = self.buffer.find(b"\n")
            if end < 0:
                break
            line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
            self.position += end + 1
            text = line.decode("utf-8", errors="replace").removesuffix("\r")
            offset = {"position": self.position} if partition is not None else None
            records.append(SourceRecord(source_partition=partition, source_offset=offset, topic=self.topic,
                                        value_schema=STRING_SCHEMA, value=text))
        return records

    def stop(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None and self.filename is not None:
            stream.close()


class FileStreamSourceConnector(SourceConnector):
    """One task reading ``file`` into ``topic``."""

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        return "SUPPORTED"  # positions are offsets: records and positions commit together

    def version(self) -> str:
        return "1.0"

    def start(self, config: dict[str, str]) -> None:
        parsed = _SOURCE_CONFIG.parse(config)
        if len(parsed["topic"]) != 1:
            raise ConfigException("'topic' in FileStreamSourceConnector configuration requires definition of a single topic")
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]  # one file, one reader

    def stop(self) -> None:
        pass

    def config_def(self) -> ConfigDef:
        return _SOURCE_CONFIG

    def validate(self, config: Any) -> list[ConfigValue]:
        values = super().validate(config)
        for cv in values:
            if cv.name == "topic" and not cv.errors and cv.value is not None and "," in str(cv.value):
                cv.errors.append("'topic' in FileStreamSourceConnector configuration requires definition of a single topic")
        return values


class FileStreamSinkTask(SinkTask):
    """Appends each record's value and a newline."""

    def start(self, config: dict[str, str]) -> None:
        self.filename: str | None = _SINK_CONFIG.parse(config)["file"] or None
        self.out: IO[str] = open(self.filename, "a", encoding="utf-8") if self.filename else sys.stdout  # noqa: SIM115

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            self.out.write(java_text(r.value) + "\n")

    def flush(self, current_offsets: dict[TopicPartition, int]) -> None:
        self.out.flush()
        if self.filename is not None:
            os.fsync(self.out.fileno())

    def stop(self) -> None:
        if self.filename is not None and not self.out.closed:
            self.out.close()


class FileStreamSinkConnector(SinkConnector):
    """One task per ``tasks.max``, all appending to ``file``."""

    def start(self, config: dict[str, str]) -> None:
        _SINK_CONFIG.parse(config)
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config_def(self) -> ConfigDef:
        return _SINK_CONFIG
