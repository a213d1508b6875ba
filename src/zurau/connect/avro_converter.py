"""Confluent's AvroConverter (``io.confluent.connect.avro.AvroConverter``) over a schema registry.

Bytes are Confluent's wire format: ``0x00``, the big-endian int32 schema id, then the Avro binary
encoding. Writing, the Connect schema becomes an Avro schema as Confluent's AvroData builds it
(``connect.meta.data=true``):

* ``int8``/``int16`` → ``int`` with ``"connect.type"``; ``int32`` ``int``; ``int64`` ``long``;
  ``float32`` ``float``; ``float64`` ``double``; ``boolean``, ``string``, ``bytes`` as named;
* optional → a union ``["null", T]`` (and a struct field of it gets ``"default": null``);
* struct → record named after the Connect schema (``ConnectDefault`` in ``io.confluent.connect.avro``
  when unnamed); map with string keys → Avro map, other maps → an array of ``MapEntry`` records;
* Decimal → ``bytes`` with ``logicalType`` ``decimal`` (``precision`` from
  ``connect.decimal.precision``, default 64), Date → ``int`` ``date``, Time → ``int``
  ``time-millis``, Timestamp → ``long`` ``timestamp-millis``;
* a schema's name, version, doc and parameters ride along as ``connect.name``,
  ``connect.version``, ``connect.doc``, ``connect.parameters``.

The schema is registered under the subject of ``key.subject.name.strategy`` /
``value.subject.name.strategy`` (TopicNameStrategy ``<topic>-key|value`` by default,
RecordNameStrategy, TopicRecordNameStrategy) unless ``auto.register.schemas=false``, in which case
it must already be registered (looked up). Reading, any Avro writer schema is accepted (records
from confluent-kafka's AvroSerializer included): records become structs, ``["null", T]`` optional
``T``, enums strings, fixed bytes, the logical types Connect's. Settings: ``schema.registry.url``
(required; the first of a comma-separated list is used), ``auto.register.schemas`` (true),
``connect.meta.data`` (true).

Registry calls are synchronous HTTP made on the worker's event loop, once per new schema (cached).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping
from typing import Any

from zurau.config import ConfigDef, ConfigException, ConfigType, Importance
from zurau.connect.api import Converter, SchemaAndValue
from zurau.connect.data import (
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)

AVRO_NAMESPACE = "io.confluent.connect.avro"
_STRATEGIES = {
    "io.confluent.kafka.serializers.subject.TopicNameStrategy": "topic",
    "io.confluent.kafka.serializers.subject.RecordNameStrategy": "record",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy": "topic_record",
}
_PRIMITIVES = {Type.INT32: "int", Type.INT64: "long", Type.FLOAT32: "float", Type.FLOAT64: "double",
               Type.BOOLEAN: "boolean", Type.STRING: "string", Type.BYTES: "bytes"}


def _split(name: str) -> tuple[str | None, str]:
    ns, _, simple = name.rpartition(".")
    return (ns or None), simple


class AvroSchemaMapper:
    """Connect schema ↔ Avro schema (JSON form), as Confluent's AvroData."""

    def __init__(self, meta: bool = True, decimal_precision: int = 64) -> None:
        self.meta = meta
        self.decimal_precision = decimal_precision

    # ------------------------------------------------------------------ Connect → Avro
    def to_avro(self, schema: Schema) -> Any:
        avro = self._non_optional(schema)
        if schema.optional:
            return ["null", avro]
        return avro

    def _non_optional(self, schema: Schema) -> Any:
        name = schema.name
        if name == Decimal.LOGICAL_NAME:
            node: dict[str, Any] = {"type": "bytes", "scale": Decimal.scale(schema),
                                    "precision": int((schema.parameters or {}).get("connect.decimal.precision",
                                                                                  self.decimal_precision))}
            node["logicalType"] = "decimal"
        elif name == Date.LOGICAL_NAME:
            node = {"type": "int", "logicalType": "date"}
        elif name == Time.LOGICAL_NAME:
            node = {"type": "int", "logicalType": "time-millis"}
        elif name == Timestamp.LOGICAL_NAME:
            node = {"type": "long", "logicalType": "timestamp-millis"}
        elif schema.type in (Type.INT8, Type.INT16):
            node = {"type": "int", "connect.type": schema.type.value}
        elif schema.type in _PRIMITIVES:
            node = {"type": _PRIMITIVES[schema.type]}
        elif schema.type is Type.ARRAY:
            assert schema.value_schema is not None
            node = {"type": "array", "items": self.to_avro(schema.value_schema)}
        elif schema.type is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
                node = {"type": "map", "values": self.to_avro(schema.value_schema)}
            else:
                node = {"type": "array", "items": {
                    "type": "record", "name": "MapEntry", "namespace": AVRO_NAMESPACE,
                    "fields": [{"name": "key", "type": self.to_avro(schema.key_schema)},
                               {"name": "value", "type": self.to_avro(schema.value_schema)}]}}
        else:
            ns, simple = _split(name) if name else (AVRO_NAMESPACE, "ConnectDefault")
            node = {"type": "record", "name": simple}
            if ns:
                node["namespace"] = ns
            fields = []
            for f in schema.fields:
                field: dict[str, Any] = {"name": f.name, "type": self.to_avro(f.schema)}
                if f.schema.optional and f.schema.default_value is None:
                    field["default"] = None
                fields.append(field)
            node["fields"] = fields
        if self.meta:
            if schema.doc is not None:
                node["connect.doc"] = schema.doc
            if schema.version is not None:
                node["connect.version"] = schema.version
            if schema.parameters:
                node["connect.parameters"] = dict(schema.parameters)
            if name is not None:
                node["connect.name"] = name
        if len(node) == 1:
            return node["type"]
        return node

    def to_avro_value(self, schema: Schema | None, value: Any) -> Any:
        """A Connect value as fastavro writes it (structs as dicts, non-string maps as entries)."""
        if value is None or schema is None:
            return value
        if schema.type is Type.STRUCT:
            if not isinstance(value, Struct):
                raise DataException(f"a struct schema needs a Struct, not {type(value).__name__}")
            return {f.name: self.to_avro_value(f.schema, value.get(f.name)) for f in schema.fields}
        if schema.type is Type.ARRAY:
            return [self.to_avro_value(schema.value_schema, v) for v in value]
        if schema.type is Type.MAP:
            assert schema.key_schema is not None
            if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
                return {k: self.to_avro_value(schema.value_schema, v) for k, v in value.items()}
            return [{"key": self.to_avro_value(schema.key_schema, k), "value": self.to_avro_value(schema.value_schema, v)}
                    for k, v in value.items()]
        if schema.type is Type.BYTES and isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        return value

    # ------------------------------------------------------------------ Avro → Connect
    def to_connect(self, avro: Any) -> Schema:
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null"]
            if len(branches) != 1:
                raise DataException("only unions of null and one type map to Connect schemas")
            inner = self.to_connect(branches[0])
            return Schema(**{**inner.__dict__, "optional": True})
        node: dict[str, Any] = {"type": avro} if isinstance(avro, str) else dict(avro)
        t = node["type"]
        if isinstance(t, (dict, list)):
            return self.to_connect(t)
        logical = node.get("logicalType")
        b: SchemaBuilder
        if logical == "decimal":
            b = Decimal.builder(int(node.get("scale", 0)))
            b.parameter("connect.decimal.precision", str(node.get("precision", self.decimal_precision)))
        elif logical == "date":
            b = Date.builder()
        elif logical == "time-millis":
            b = Time.builder()
        elif logical == "timestamp-millis":
            b = Timestamp.builder()
        elif t == "int":
            b = SchemaBuilder(Type(node["connect.type"]) if node.get("connect.type") in ("int8", "int16") else Type.INT32)
        elif t in ("long", "float", "double", "boolean", "string", "bytes"):
            b = SchemaBuilder({"long": Type.INT64, "float": Type.FLOAT32, "double": Type.FLOAT64,
                               "boolean": Type.BOOLEAN, "string": Type.STRING, "bytes": Type.BYTES}[t])
        elif t == "enum":
            b = SchemaBuilder.string()
        elif t == "fixed":
            b = SchemaBuilder.bytes()
        elif t == "array":
            items = node["items"]
            if isinstance(items, dict) and items.get("type") == "record" and items.get("name") == "MapEntry":
                fields = {f["name"]: f["type"] for f in items["fields"]}
                b = SchemaBuilder.map(self.to_connect(fields["key"]), self.to_connect(fields["value"]))
            else:
                b = SchemaBuilder.array(self.to_connect(items))
        elif t == "map":
            b = SchemaBuilder.map(Schema(Type.STRING), self.to_connect(node["values"]))
        elif t == "record":
            b = SchemaBuilder.struct()
            ns = node.get("namespace")
            full = node["name"] if "." in node["name"] or not ns else f"{ns}.{node['name']}"
            if full != f"{AVRO_NAMESPACE}.ConnectDefault":
                b.name(full)
            for f in node["fields"]:
                b.field(f["name"], self.to_connect(f["type"]))
        else:
            raise DataException(f"unsupported Avro type {t!r}")
        if isinstance(node.get("connect.name"), str):
            b.name(node["connect.name"])
        if isinstance(node.get("connect.version"), int):
            b.version(node["connect.version"])
        if isinstance(node.get("connect.doc"), str):
            b.doc(node["connect.doc"])
        for k, v in (node.get("connect.parameters") or {}).items():
            b.parameter(k, str(v))
        return b.build()

    def to_connect_value(self, schema: Schema, value: Any) -> Any:
        if value is None:
            return None
        if schema.type is Type.STRUCT:
            out = Struct(schema)
            for f in schema.fields:
                out.put(f.name, self.to_connect_value(f.schema, value.get(f.name)))
            return out
        if schema.type is Type.ARRAY:
            return [self.to_connect_value(schema.value_schema, v) for v in value]  # type: ignore[arg-type]
        if schema.type is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            if isinstance(value, list):
                return {self.to_connect_value(schema.key_schema, e["key"]): self.to_connect_value(schema.value_schema,
                                                                                                 e["value"])
                        for e in value}
            return {k: self.to_connect_value(schema.value_schema, v) for k, v in value.items()}
        if schema.name == Timestamp.LOGICAL_NAME and isinstance(value, int):
            return Timestamp.to_logical(value)
        return value


class AvroConverter(Converter):
    CONFIG = (ConfigDef()
              .define("schema.registry.url", ConfigType.LIST, importance=Importance.HIGH,
                      documentation="Schema registry URL(s); the first is used.")
              .define("auto.register.schemas", ConfigType.BOOLEAN, True, importance=Importance.MEDIUM,
                      documentation="Register new schemas; when false the schema must already be registered.")
              .define("connect.meta.data", ConfigType.BOOLEAN, True, importance=Importance.LOW,
                      documentation="Carry Connect schema metadata (connect.* properties) in Avro schemas.")
              .define("key.subject.name.strategy", ConfigType.STRING,
                      "io.confluent.kafka.serializers.subject.TopicNameStrategy", importance=Importance.LOW,
                      documentation="Subject naming for keys.")
              .define("value.subject.name.strategy", ConfigType.STRING,
                      "io.confluent.kafka.serializers.subject.TopicNameStrategy", importance=Importance.LOW,
                      documentation="Subject naming for values."))

    def __init__(self) -> None:
        self.url = ""
        self.is_key = False
        self.auto_register = True
        self.strategy = "topic"
        self.mapper = AvroSchemaMapper()
        self._ids: dict[tuple[str, str], int] = {}
        self._by_id: dict[int, tuple[Any, Schema]] = {}

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        c = self.CONFIG.parse({k: v for k, v in config.items() if k in self.CONFIG.names()})
        if not c["schema.registry.url"]:
            raise ConfigException('Missing required configuration "schema.registry.url" which has no default value.')
        self.url = c["schema.registry.url"][0].rstrip("/")
        self.is_key = is_key
        self.auto_register = bool(c["auto.register.schemas"])
        strategy = c["key.subject.name.strategy" if is_key else "value.subject.name.strategy"]
        if strategy not in _STRATEGIES:
            raise ConfigException(f"Unsupported subject name strategy {strategy}")
        self.strategy = _STRATEGIES[strategy]
        self.mapper = AvroSchemaMapper(meta=bool(c["connect.meta.data"]))

    def _subject(self, topic: str, avro: Any) -> str:
        record = avro if isinstance(avro, dict) and avro.get("type") == "record" else None
        full = (f"{record['namespace']}.{record['name']}" if record and record.get("namespace")
                else record["name"] if record else None)
        if self.strategy == "topic" or full is None:
            return f"{topic}-{'key' if self.is_key else 'value'}"
        return full if self.strategy == "record" else f"{topic}-{full}"

    def _registry(self, method: str, path: str, body: Any = None) -> Any:
        import httpx

        try:
            r = httpx.request(method, f"{self.url}{path}", json=body, timeout=30,
                              headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        except httpx.HTTPError as e:
            raise DataException(f"schema registry {self.url} unreachable: {e}") from e
        if r.status_code >= 400:
            raise DataException(f"schema registry answered {r.status_code} to {method} {path}: {r.text}")
        return r.json()

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        import fastavro

        if value is None and (schema is None or schema.optional):
            return None
        if schema is None:
            raise DataException("the AvroConverter needs a schema")
        avro = self.mapper.to_avro(schema)
        text = json.dumps(avro, separators=(",", ":"))
        subject = self._subject(topic, avro)
        key = (subject, text)
        schema_id = self._ids.get(key)
        if schema_id is None:
            path = f"/subjects/{subject}/versions" if self.auto_register else f"/subjects/{subject}"
            schema_id = int(self._registry("POST", path, {"schema": text})["id"])
            self._ids[key] = schema_id
        parsed = fastavro.parse_schema(avro)
        out = io.BytesIO()
        out.write(struct.pack(">bI", 0, schema_id))
        try:
            fastavro.schemaless_writer(out, parsed, self.mapper.to_avro_value(schema, value))
        except (ValueError, TypeError, AttributeError) as e:
            raise DataException(f"cannot write the value as Avro: {e}") from e
        return out.getvalue()

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        import fastavro

        if data is None:
            return SchemaAndValue(None, None)
        if len(data) < 5 or data[0] != 0:
            raise DataException("Unknown magic byte!")
        (schema_id,) = struct.unpack(">I", data[1:5])
        cached = self._by_id.get(schema_id)
        if cached is None:
            avro = json.loads(self._registry("GET", f"/schemas/ids/{schema_id}")["schema"])
            cached = (fastavro.parse_schema(avro), self.mapper.to_connect(avro))
            self._by_id[schema_id] = cached
        parsed, connect_schema = cached
        try:
            raw = fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed, None)
        except (ValueError, EOFError, struct.error) as e:
            raise DataException(f"cannot read Avro data with schema {schema_id}: {e}") from e
        return SchemaAndValue(connect_schema, self.mapper.to_connect_value(connect_schema, raw))
