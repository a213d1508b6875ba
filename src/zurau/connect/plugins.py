"""Finding connector, converter, transform and predicate classes by the names users write.

A name resolves, in order, through:

1. the built-in aliases: Kafka's and Debezium's class names (``org.apache.kafka.connect.file.
   FileStreamSourceConnector``, ``org.apache.kafka.connect.json.JsonConverter``,
   ``io.debezium.transforms.ExtractNewRecordState`` ...) and, for connectors, the short forms
   Kafka accepts (``FileStreamSource``, ``FileStreamSourceConnector``);
2. Python entry points in the group ``zurau.connect.plugins``: the entry point's name is an alias,
   and its target's ``module.Class`` path is a name too;
3. a Python class path, ``package.module.Class`` or ``package.module:Class``.

Built-in plugins whose module is not importable (an optional dependency missing) are left out of
listings, and resolving them gives a :class:`PluginNotFound` naming the import error.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from zurau.connect.api import Connector, Converter, Predicate, SinkConnector, SourceConnector, Transformation

log = logging.getLogger("zurau.connect.plugins")

ENTRY_POINT_GROUP = "zurau.connect.plugins"

# Kafka/Debezium class name -> "module:attribute" of ours (imported on first use).
BUILTIN: dict[str, str] = {
    "org.apache.kafka.connect.file.FileStreamSourceConnector": "zurau.connect.file_stream:FileStreamSourceConnector",
    "org.apache.kafka.connect.file.FileStreamSinkConnector": "zurau.connect.file_stream:FileStreamSinkConnector",
    # The PostgreSQL change data capture source exports PostgresConnector from its package.
    "io.debezium.connector.postgresql.PostgresConnector": "zurau.connect.postgres:PostgresConnector",
    "io.debezium.connector.jdbc.JdbcSinkConnector": "zurau.connect.jdbc_sink:PostgresSinkConnector",
    "io.confluent.connect.jdbc.JdbcSinkConnector": "zurau.connect.jdbc_sink:PostgresSinkConnector",
    "org.apache.kafka.connect.mirror.MirrorSourceConnector": "zurau.connect.mirror:MirrorSourceConnector",
    "org.apache.kafka.connect.mirror.MirrorCheckpointConnector": "zurau.connect.mirror:MirrorCheckpointConnector",
    "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector": "zurau.connect.mirror:MirrorHeartbeatConnector",
    "org.apache.kafka.connect.json.JsonConverter": "zurau.connect.converters:JsonConverter",
    "org.apache.kafka.connect.storage.StringConverter": "zurau.connect.converters:StringConverter",
    "org.apache.kafka.connect.converters.ByteArrayConverter": "zurau.connect.converters:ByteArrayConverter",
    "io.confluent.connect.avro.AvroConverter": "zurau.connect.avro_converter:AvroConverter",
    "io.debezium.transforms.ExtractNewRecordState": "zurau.connect.transforms:ExtractNewRecordState",
    "io.debezium.transforms.outbox.EventRouter": "zurau.connect.outbox_event_router:EventRouter",
    "org.apache.kafka.connect.transforms.RegexRouter": "zurau.connect.transforms:RegexRouter",
    "org.apache.kafka.connect.transforms.InsertField$Value": "zurau.connect.transforms:InsertFieldValue",
    "org.apache.kafka.connect.transforms.InsertField$Key": "zurau.connect.transforms:InsertFieldKey",
    "org.apache.kafka.connect.transforms.ReplaceField$Value": "zurau.connect.transforms:ReplaceFieldValue",
    "org.apache.kafka.connect.transforms.ReplaceField$Key": "zurau.connect.transforms:ReplaceFieldKey",
    "org.apache.kafka.connect.transforms.Filter": "zurau.connect.transforms:Filter",
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": "zurau.connect.transforms:TopicNameMatches",
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": "zurau.connect.transforms:HasHeaderKey",
    "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone": "zurau.connect.transforms:RecordIsTombstone",
}


class PluginNotFound(LookupError):
    """No plugin of the wanted kind has this name."""


KIND_CONNECTOR, KIND_CONVERTER, KIND_TRANSFORM, KIND_PREDICATE = "connector", "converter", "transformation", "predicate"
_BASES: dict[str, type] = {KIND_CONNECTOR: Connector, KIND_CONVERTER: Converter,
                           KIND_TRANSFORM: Transformation, KIND_PREDICATE: Predicate}


@dataclass(frozen=True)
class PluginInfo:
    """One listed plugin: the name shown to users (``class``), its type and version."""

    name: str
    plugin_type: str  # source, sink, converter, transformation, predicate
    version: str
    cls: type


def _load(target: str) -> type:
    module_name, _, attr = target.partition(":")
    if not attr:
        module_name, _, attr = target.rpartition(".")
    module = importlib.import_module(module_name)
    obj = getattr(module, attr)
    if not isinstance(obj, type):
        raise TypeError(f"{target} is not a class")
    return obj


def _python_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _type_of(cls: type) -> str:
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    if issubclass(cls, Converter):
        return "converter"
    if issubclass(cls, Transformation):
        return "transformation"
    if issubclass(cls, Predicate):
        return "predicate"
    return "unknown"


def _version(cls: type) -> str:
    try:
        if issubclass(cls, Connector):
            return str(cls().version())
    except Exception:  # a connector whose constructor needs more
        pass
    return zurau_version()


def zurau_version() -> str:
    """Zurau's version (read from the installed distribution: importing the ``zurau`` package root
    would pull the broker stack into this edge package's import graph)."""
    try:
        return metadata.version("zurau")
    except metadata.PackageNotFoundError:
        return "unknown"


class PluginRegistry:
    """Resolves names to classes; built once per worker (entry points are read at construction)."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        self._targets: dict[str, str] = dict(BUILTIN)
        if extra:
            self._targets.update(extra)
        try:
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                self._targets.setdefault(ep.name, ep.value)
        except Exception as e:  # broken distribution metadata must not stop the worker
            log.warning("cannot read entry points %s: %s", ENTRY_POINT_GROUP, e)
        self._cache: dict[str, type] = {}
        self._errors: dict[str, str] = {}

    def _resolve(self, name: str) -> type:
        if name in self._cache:
            return self._cache[name]
        target = self._targets.get(name)
        if target is None:
            for known, t in self._targets.items():
                simple = known.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
                if name in (simple, simple.removesuffix("Connector")) and simple.endswith("Connector"):
                    target = t
                    break
        cls: type
        try:
            cls = _load(target or name)
        except (ImportError, AttributeError, ValueError, TypeError) as e:
            raise PluginNotFound(f"Failed to find any class that implements {name}: {e}") from None
        self._cache[name] = cls
        return cls

    def resolve(self, name: str, kind: str) -> type[Any]:
        """The class called ``name`` that is a ``kind`` (connector, converter, transformation,
        predicate); raises :class:`PluginNotFound`."""
        name = name.strip()
        if not name:
            raise PluginNotFound(f"Empty {kind} class name")
        cls = self._resolve(name)
        if not issubclass(cls, _BASES[kind]):
            raise PluginNotFound(f"Class {name} is not a {kind}")
        return cls

    def display_name(self, cls: type) -> str:
        """Kafka's class name for a built-in that has one, else the Python class path."""
        for known in self._targets:
            if "." in known and not known.startswith("zurau."):
                try:
                    if self._resolve(known) is cls:
                        return known
                except PluginNotFound:
                    continue
        return _python_name(cls)

    def plugins(self, kinds: tuple[str, ...] = (KIND_CONNECTOR,)) -> list[PluginInfo]:
        """Every loadable plugin of the given kinds, sorted by name."""
        out: dict[str, PluginInfo] = {}
        for name in self._targets:
            try:
                cls = self._resolve(name)
            except PluginNotFound as e:
                self._errors[name] = str(e)
                continue
            if not any(issubclass(cls, _BASES[k]) for k in kinds):
                continue
            shown = self.display_name(cls)
            out[shown] = PluginInfo(shown, _type_of(cls), _version(cls), cls)
        return sorted(out.values(), key=lambda p: p.name)
