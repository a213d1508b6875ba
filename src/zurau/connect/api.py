"""The Python connector API: what a connector, converter or transform implements.

A source connector in a few lines::

    from zurau.connect.api import (ConfigDef, ConfigType, SourceConnector, SourceRecord, SourceTask,
                                   STRING_SCHEMA)

    class CounterTask(SourceTask):
        def start(self, config):
            self.topic = config["topic"]
            last = self.context.offset_storage_reader.offset({"counter": "main"})
            self.n = last["n"] if last else 0

        def poll(self):
            self.n += 1
            return [SourceRecord(source_partition={"counter": "main"}, source_offset={"n": self.n},
                                 topic=self.topic, value_schema=STRING_SCHEMA, value=str(self.n))]

        def stop(self):
            pass

    class CounterConnector(SourceConnector):
        CONFIG = ConfigDef().define("topic", ConfigType.STRING, documentation="Target topic")

        def start(self, config):
            self.config = config

        def task_class(self):
            return CounterTask

        def task_configs(self, max_tasks):
            return [dict(self.config)]

        def stop(self):
            pass

        def config_def(self):
            return self.CONFIG

Register it under the entry point group ``zurau.connect.plugins`` (``counter = "pkg.mod:CounterConnector"``)
or post its full class path (``"connector.class": "pkg.mod.CounterConnector"``).

Threading: the worker runs its event loop in one thread and every task in its own thread, so task
methods may block (``poll()`` should return within about a second, with ``[]`` or None when there is
nothing new, so that stop and pause requests are seen). Connector methods run on a worker thread
as well. An exception from any task method marks the task FAILED with its trace; the worker goes on.

Offsets: ``source_offset`` of a record is stored once Kafka acknowledged the record and the worker's
periodic flush (``offset.flush.interval.ms``) ran; on restart a task reads it with
``context.offset_storage_reader``. Delivery is therefore at least once: records after the last
flushed offset are produced again after a crash. After each flush the worker calls
:meth:`SourceTask.commit` (for example to acknowledge up to the flushed position upstream).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from zurau.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    Width,
    non_empty_string,
    valid_string,
)
from zurau.connect.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT8_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    DataException,
    Date,
    Decimal,
    Field,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)
from zurau.connect.records import ConnectRecord, Header, SinkRecord, SourceRecord
from zurau.types import TopicPartition

__all__ = [
    "BOOLEAN_SCHEMA", "BYTES_SCHEMA", "FLOAT32_SCHEMA", "FLOAT64_SCHEMA", "INT8_SCHEMA", "INT16_SCHEMA",
    "INT32_SCHEMA", "INT64_SCHEMA", "NO_DEFAULT", "OPTIONAL_BOOLEAN_SCHEMA", "OPTIONAL_BYTES_SCHEMA",
    "OPTIONAL_FLOAT32_SCHEMA", "OPTIONAL_FLOAT64_SCHEMA", "OPTIONAL_INT8_SCHEMA", "OPTIONAL_INT16_SCHEMA",
    "OPTIONAL_INT32_SCHEMA", "OPTIONAL_INT64_SCHEMA", "OPTIONAL_STRING_SCHEMA", "STRING_SCHEMA",
    "ConfigDef", "ConfigException", "ConfigKey", "ConfigType", "ConfigValue", "ConnectException",
    "ConnectRecord", "Connector", "ConnectorContext", "Converter", "DataException", "Date", "Decimal",
    "Field", "Header", "Importance", "OffsetStorageReader", "Predicate", "Range", "RetriableException",
    "Schema", "SchemaAndValue", "SchemaBuilder", "SinkConnector", "SinkRecord", "SinkTask",
    "SinkTaskContext", "SourceConnector", "SourceRecord", "SourceTask", "SourceTaskContext", "Struct",
    "Task", "Time", "Timestamp", "TopicPartition", "Transformation", "Type", "Width", "non_empty_string",
    "valid_string",
]


class ConnectException(RuntimeError):
    """A connector or task failed; the message (and cause) show in the status trace."""


class RetriableException(ConnectException):
    """A transient failure: the worker retries the operation instead of failing the task."""


# --------------------------------------------------------------------------- contexts


class OffsetStorageReader(ABC):
    """Read access to committed source offsets, keyed by source partition dicts."""

    @abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The last committed offset for ``partition``, or None when there is none."""

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """``(partition, offset or None)`` for each of ``partitions``, in order."""
        return [(dict(p), self.offset(p)) for p in partitions]


class ConnectorContext(ABC):
    """What a connector may ask of its worker."""

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the worker to call :meth:`Connector.task_configs` again (the task set changed)."""

    @abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Mark the connector FAILED with ``error`` (from a background thread of the connector)."""


class SourceConnectorContext(ConnectorContext):
    offset_storage_reader: OffsetStorageReader


class SourceTaskContext:
    """Handed to a source task before ``start``: its configuration and committed offsets."""

    def __init__(self, config: Mapping[str, str], offset_storage_reader: OffsetStorageReader) -> None:
        self.config = dict(config)
        self.offset_storage_reader = offset_storage_reader


class SinkTaskContext:
    """Handed to a sink task before ``start``; the task may ask for offset resets and commits."""

    def __init__(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        self._assignment: list[TopicPartition] = []
        self.requested_offsets: dict[TopicPartition, int] = {}
        self.commit_requested = False
        self.timeout_ms = -1

    def timeout(self, timeout_ms: int) -> None:
        """After ``put`` raised RetriableException, hand the batch again in ``timeout_ms`` (instead
        of at the next offset flush)."""
        self.timeout_ms = timeout_ms

    def assignment(self) -> list[TopicPartition]:
        """The partitions the task currently consumes."""
        return list(self._assignment)

    def offset(self, tp: TopicPartition, offset: int) -> None:
        """Rewind or skip ``tp`` to ``offset`` before the next ``put`` (for example from the sink's own
        record of what it has written)."""
        self.requested_offsets[tp] = offset

    def request_commit(self) -> None:
        """Ask for a flush and offset commit as soon as possible."""
        self.commit_requested = True


# --------------------------------------------------------------------------- connectors and tasks


class Task(ABC):
    """Common to source and sink tasks."""

    def version(self) -> str:
        return "1.0"

    @abstractmethod
    def start(self, config: dict[str, str]) -> None:
        """Begin with this task's configuration (one of the connector's ``task_configs``)."""

    @abstractmethod
    def stop(self) -> None:
        """Release resources; no further calls follow. May be called from another thread than poll."""


class SourceTask(Task):
    """Reads from an external system; the worker converts and produces what ``poll`` returns."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None:
        """New records (``[]`` or None when there are none yet; block at most about a second)."""

    def commit(self) -> None:
        """Called after the worker flushed the offsets of every record returned so far that Kafka
        acknowledged."""

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        """Called per record once Kafka acknowledged it (``metadata`` is the client's RecordMetadata,
        None when a transform dropped the record)."""


class SinkTask(Task):
    """Writes records consumed from Kafka to an external system."""

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None:
        """Write (or buffer) ``records``; raise :class:`RetriableException` to get them again later."""

    def flush(self, current_offsets: dict[TopicPartition, int]) -> None:
        """Make everything ``put`` so far durable; ``current_offsets`` are the next offsets to read."""

    def pre_commit(self, current_offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The offsets safe to commit (default: flush, then everything put)."""
        self.flush(current_offsets)
        return current_offsets

    def open(self, partitions: list[TopicPartition]) -> None:
        """Partitions newly assigned to this task."""

    def close(self, partitions: list[TopicPartition]) -> None:
        """Partitions taken away from this task (after a final flush)."""


class Connector(ABC):
    """Configures tasks: the worker calls ``start``, then ``task_configs(tasks.max)``, and ``stop``."""

    context: ConnectorContext
    TYPE: ClassVar[str] = ""

    def version(self) -> str:
        return "1.0"

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    @abstractmethod
    def start(self, config: dict[str, str]) -> None:
        """Begin with the connector's configuration (validated against :meth:`config_def`)."""

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The task implementation."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """At most ``max_tasks`` task configurations; one task runs per entry."""

    @abstractmethod
    def stop(self) -> None:
        """Release resources."""

    def config_def(self) -> ConfigDef:
        """The connector's own settings (shown by ``/connector-plugins/{p}/config``)."""
        return ConfigDef()

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """Check ``config``; the default validates against :meth:`config_def`. Override to add
        cross-setting checks (append to a value's ``errors``)."""
        return self.config_def().validate(config)


class SourceConnector(Connector):
    TYPE: ClassVar[str] = "source"

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        """KIP-618's ``exactlyOnceSupport``: ``"SUPPORTED"``, ``"UNSUPPORTED"`` or None (unknown);
        ``exactly.once.support=required`` needs SUPPORTED."""
        return None

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> bool:
        """KIP-618's ``canDefineTransactionBoundaries`` (``transaction.boundary=connector``)."""
        return False


class SinkConnector(Connector):
    TYPE: ClassVar[str] = "sink"


# --------------------------------------------------------------------------- converters and transforms


class SchemaAndValue:
    """A converted key or value: its Connect schema (None when schemaless) and value."""

    __slots__ = ("schema", "value")

    def __init__(self, schema: Schema | None, value: Any) -> None:
        self.schema = schema
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchemaAndValue) and (self.schema, self.value) == (other.schema, other.value)

    def __hash__(self) -> int:
        return hash(self.schema)

    def __repr__(self) -> str:
        return f"SchemaAndValue({self.schema!r}, {self.value!r})"


class Converter(ABC):
    """Turns Connect data into the bytes stored in Kafka and back (one instance per key or value)."""

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:  # noqa: B027 (optional hook)
        """Settings with the ``key.converter.``/``value.converter.`` prefix stripped."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialize ``value`` (None gives None: a tombstone stays a tombstone)."""

    @abstractmethod
    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        """Deserialize ``data``; raise :class:`DataException` when it is not in this format."""


class Transformation(ABC):
    """A single message transform: one record in, one record (or None to drop it) out."""

    def configure(self, config: Mapping[str, Any]) -> None:  # noqa: B027 (optional hook)
        """Settings with the ``transforms.<alias>.`` prefix stripped."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """The transformed record, or None to drop it."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release resources."""


class Predicate(ABC):
    """A condition on records, for a transform's ``predicate``/``negate`` settings."""

    def configure(self, config: Mapping[str, Any]) -> None:  # noqa: B027 (optional hook)
        """Settings with the ``predicates.<alias>.`` prefix stripped."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    @abstractmethod
    def test(self, record: ConnectRecord) -> bool:
        """Whether ``record`` matches."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release resources."""
