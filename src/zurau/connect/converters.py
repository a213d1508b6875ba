"""Converters between Connect data and record bytes: JSON (with or without schemas), string, bytes.

:class:`JsonConverter` writes Kafka's JSON envelope ``{"schema":{...},"payload":...}`` when
``schemas.enable`` is true (the default) and the bare payload otherwise, byte for byte as Kafka's
``org.apache.kafka.connect.json.JsonConverter`` does (see :mod:`zurau.connect.json_text`):

* schema objects list ``type`` first (``float32``/``float64`` are named ``float``/``double``),
  then ``items`` (arrays), ``keys``/``values`` (maps) or ``fields`` (structs, each field's schema
  followed by ``"field":name``), then ``optional``, and ``name``, ``version``, ``doc``,
  ``parameters``, ``default`` when set;
* bytes are base64; Decimal is base64 of the unscaled two's-complement value (``decimal.format``
  BASE64, the default) or a plain number (NUMERIC); Date/Time/Timestamp are their int forms;
* a map whose key schema is not ``string`` is an array of ``[key, value]`` pairs;
* a null value with no schema is a null record (a tombstone); with a schema it is an envelope with
  a null payload, as in Kafka.

Reading, schemaless JSON becomes int (integral numbers), float, str, bool, list, dict.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal as pydecimal
import json
from collections.abc import Mapping
from typing import Any

from zurau.config import ConfigDef, ConfigType, Importance, valid_string
from zurau.connect.api import Converter, SchemaAndValue
from zurau.connect.data import (
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
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
from zurau.connect.json_text import Float32, Numeric, dumps

_JSON_TYPE_NAMES = {Type.FLOAT32: "float", Type.FLOAT64: "double"}
_TYPES_BY_JSON_NAME = {**{t.value: t for t in Type}, "float": Type.FLOAT32, "double": Type.FLOAT64}
_TYPES_BY_JSON_NAME.pop("float32")
_TYPES_BY_JSON_NAME.pop("float64")


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() == "true"


# --------------------------------------------------------------------------- schemas


def schema_to_json(schema: Schema, decimal_numeric: bool = False) -> dict[str, Any]:
    """``schema`` as the JSON converter's schema object (insertion order is the output order)."""
    node: dict[str, Any] = {"type": _JSON_TYPE_NAMES.get(schema.type, schema.type.value)}
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        node["items"] = schema_to_json(schema.value_schema, decimal_numeric)
    elif schema.type is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        node["keys"] = schema_to_json(schema.key_schema, decimal_numeric)
        node["values"] = schema_to_json(schema.value_schema, decimal_numeric)
    elif schema.type is Type.STRUCT:
        fields = []
        for f in schema.fields:
            field_node = dict(schema_to_json(f.schema, decimal_numeric))
            field_node["field"] = f.name
            fields.append(field_node)
        node["fields"] = fields
    node["optional"] = schema.optional
    if schema.name is not None:
        node["name"] = schema.name
    if schema.version is not None:
        node["version"] = schema.version
    if schema.doc is not None:
        node["doc"] = schema.doc
    if schema.parameters is not None:
        node["parameters"] = dict(schema.parameters)
    if schema.default_value is not None:
        node["default"] = value_to_json(schema, schema.default_value, decimal_numeric)
    return node


def schema_from_json(node: Any) -> Schema | None:
    """A Connect schema from the JSON converter's schema object (None for JSON null)."""
    if node is None:
        return None
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise DataException("Schema must contain 'type' field")
    t = _TYPES_BY_JSON_NAME.get(node["type"])
    if t is None:
        raise DataException(f"Unknown schema type: {node['type']}")
    if t is Type.ARRAY:
        items = schema_from_json(node.get("items"))
        if items is None:
            raise DataException("Array schema did not specify the element type")
        b = SchemaBuilder.array(items)
    elif t is Type.MAP:
        if "keys" not in node or "values" not in node:
            raise DataException("Map schema did not specify the key and value types")
        keys, values = schema_from_json(node["keys"]), schema_from_json(node["values"])
        if keys is None or values is None:
            raise DataException("Map schema did not specify the key and value types")
        b = SchemaBuilder.map(keys, values)
    elif t is Type.STRUCT:
        b = SchemaBuilder.struct()
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise DataException("Struct schema's \"fields\" argument is not an array.")
        for f in fields:
            if not isinstance(f, dict) or not isinstance(f.get("field"), str):
                raise DataException("Struct schema's field name not specified properly")
            fs = schema_from_json(f)
            assert fs is not None
            b.field(f["field"], fs)
    else:
        b = SchemaBuilder(t)
    if node.get("optional") is True:
        b.optional()
    if isinstance(node.get("name"), str):
        b.name(node["name"])
    if isinstance(node.get("version"), int) and not isinstance(node.get("version"), bool):
        b.version(node["version"])
    if isinstance(node.get("doc"), str):
        b.doc(node["doc"])
    params = node.get("parameters")
    if isinstance(params, dict):
        for k, v in params.items():
            if not isinstance(v, str):
                raise DataException("Schema parameters must have string values.")
            b.parameter(k, v)
    if node.get("default") is not None:
        b.default_value(value_from_json(b.build(), node["default"]))
    return b.build()


# --------------------------------------------------------------------------- values


def value_to_json(schema: Schema | None, value: Any, decimal_numeric: bool = False) -> Any:
    """A Connect value as a JSON tree for :func:`zurau.connect.json_text.dumps`."""
    if value is None:
        if schema is None:
            return None
        if schema.default_value is not None:
            return value_to_json(schema, schema.default_value, decimal_numeric)
        if schema.optional:
            return None
        raise DataException("Conversion error: null value for field that is required and has no default value")
    if schema is not None and schema.name is not None:
        if schema.name == Decimal.LOGICAL_NAME:
            if not isinstance(value, pydecimal.Decimal):
                raise DataException(f"Invalid type for Decimal, expected Decimal but was {type(value).__name__}")
            if decimal_numeric:
                return Numeric(value.quantize(pydecimal.Decimal(1).scaleb(-Decimal.scale(schema))))
            value = Decimal.from_logical(schema, value)
        elif schema.name == Date.LOGICAL_NAME:
            if not isinstance(value, dt.date):
                raise DataException(f"Invalid type for Date, expected date but was {type(value).__name__}")
            value = Date.from_logical(value)
        elif schema.name == Time.LOGICAL_NAME:
            if not isinstance(value, dt.time):
                raise DataException(f"Invalid type for Time, expected time but was {type(value).__name__}")
            value = Time.from_logical(value)
        elif schema.name == Timestamp.LOGICAL_NAME:
            if not isinstance(value, dt.datetime):
                raise DataException(f"Invalid type for Timestamp, expected datetime but was {type(value).__name__}")
            value = Timestamp.from_logical(value)
    t = schema.type if schema is not None else _infer_type(value)
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataException(f"Invalid type for {t.name}: {type(value).__name__}")
        return value
    if t in (Type.FLOAT32, Type.FLOAT64):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataException(f"Invalid type for {t.name}: {type(value).__name__}")
        return Float32(value) if t is Type.FLOAT32 else float(value)
    if t is Type.BOOLEAN:
        if not isinstance(value, bool):
            raise DataException(f"Invalid type for BOOLEAN: {type(value).__name__}")
        return value
    if t is Type.STRING:
        if not isinstance(value, str):
            raise DataException(f"Invalid type for STRING: {type(value).__name__}")
        return value
    if t is Type.BYTES:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise DataException(f"Invalid type for bytes type: {type(value).__name__}")
        return base64.b64encode(bytes(value)).decode("ascii")
    if t is Type.ARRAY:
        if not isinstance(value, (list, tuple)):
            raise DataException(f"Invalid type for ARRAY: {type(value).__name__}")
        elem = schema.value_schema if schema is not None else None
        return [value_to_json(elem, v, decimal_numeric) for v in value]
    if t is Type.MAP:
        if not isinstance(value, Mapping):
            raise DataException(f"Invalid type for MAP: {type(value).__name__}")
        ks = schema.key_schema if schema is not None else None
        vs = schema.value_schema if schema is not None else None
        object_mode = (ks.type is Type.STRING) if ks is not None else all(isinstance(k, str) for k in value)
        if object_mode:
            return {str(value_to_json(ks, k)): value_to_json(vs, v, decimal_numeric) for k, v in value.items()}
        return [[value_to_json(ks, k, decimal_numeric), value_to_json(vs, v, decimal_numeric)] for k, v in value.items()]
    if t is Type.STRUCT:
        if not isinstance(value, Struct):
            raise DataException(f"Invalid type for STRUCT: {type(value).__name__}")
        if schema is not None and value.schema != schema:
            raise DataException("Mismatching schema.")
        return {f.name: value_to_json(f.schema, value.get(f.name), decimal_numeric) for f in value.schema.fields}
    raise DataException(f"Couldn't convert {value!r} to JSON.")


def _infer_type(value: Any) -> Type:
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Type.BYTES
    if isinstance(value, (list, tuple)):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    raise DataException(f"Python type {type(value).__name__} does not have a corresponding schema type.")


def value_from_json(schema: Schema | None, node: Any) -> Any:
    """A JSON tree (as parsed with decimals for fractions) as a Connect value of ``schema``."""
    if schema is not None and node is None:
        if schema.default_value is not None:
            return schema.default_value
        if schema.optional:
            return None
        raise DataException(f"Invalid null value for required {schema.type.name} field")
    if schema is None:
        return _schemaless(node)
    name = schema.name
    if name == Decimal.LOGICAL_NAME and isinstance(node, (int, pydecimal.Decimal)) and not isinstance(node, bool):
        return pydecimal.Decimal(node).quantize(pydecimal.Decimal(1).scaleb(-Decimal.scale(schema)))
    t = schema.type
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        if isinstance(node, bool) or not isinstance(node, (int, pydecimal.Decimal)):
            raise DataException(f"Invalid value for {t.name}: {node!r}")
        value: Any = int(node)
    elif t in (Type.FLOAT32, Type.FLOAT64):
        if isinstance(node, bool) or not isinstance(node, (int, pydecimal.Decimal)):
            raise DataException(f"Invalid value for {t.name}: {node!r}")
        value = float(node)
    elif t is Type.BOOLEAN:
        if not isinstance(node, bool):
            raise DataException(f"Invalid value for BOOLEAN: {node!r}")
        value = node
    elif t is Type.STRING:
        if not isinstance(node, str):
            raise DataException(f"Invalid value for STRING: {node!r}")
        value = node
    elif t is Type.BYTES:
        if not isinstance(node, str):
            raise DataException("Invalid bytes field")
        try:
            value = base64.b64decode(node, validate=True)
        except (binascii.Error, ValueError) as e:
            raise DataException("Invalid bytes field") from e
    elif t is Type.ARRAY:
        if not isinstance(node, list):
            raise DataException(f"Invalid value for ARRAY: {node!r}")
        value = [value_from_json(schema.value_schema, v) for v in node]
    elif t is Type.MAP:
        assert schema.key_schema is not None
        if schema.key_schema.type is Type.STRING:
            if not isinstance(node, dict):
                raise DataException("Maps with string fields should be encoded as JSON objects")
            value = {k: value_from_json(schema.value_schema, v) for k, v in node.items()}
        else:
            if not isinstance(node, list):
                raise DataException("Maps with non-string fields should be encoded as JSON array of tuples")
            value = {}
            for entry in node:
                if not isinstance(entry, list) or len(entry) != 2:
                    raise DataException("Found invalid map entry, expected an array of length 2")
                value[value_from_json(schema.key_schema, entry[0])] = value_from_json(schema.value_schema, entry[1])
    elif t is Type.STRUCT:
        if not isinstance(node, dict):
            raise DataException("Structs should be encoded as JSON objects")
        struct = Struct(schema)
        for f in schema.fields:
            struct.put(f.name, value_from_json(f.schema, node.get(f.name)))
        value = struct
    else:  # pragma: no cover - every Type is handled above
        raise DataException(f"Unknown schema type: {t}")
    if name == Decimal.LOGICAL_NAME:
        return Decimal.to_logical(schema, value)
    if name == Date.LOGICAL_NAME:
        return Date.to_logical(value)
    if name == Time.LOGICAL_NAME:
        return Time.to_logical(value)
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(value)
    return value


def _schemaless(node: Any) -> Any:
    if isinstance(node, pydecimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [_schemaless(v) for v in node]
    if isinstance(node, dict):
        return {k: _schemaless(v) for k, v in node.items()}
    return node


def parse_json(data: bytes) -> Any:
    """Parse JSON bytes, keeping fractional numbers exact (``decimal.Decimal``)."""
    try:
        return json.loads(data, parse_float=pydecimal.Decimal)
    except (ValueError, UnicodeDecodeError) as e:
        raise DataException(f"Converting byte[] to Kafka Connect data failed due to serialization error: {e}") from e


# --------------------------------------------------------------------------- converters


class JsonConverter(Converter):
    """Kafka's JsonConverter (``schemas.enable``, ``decimal.format``)."""

    CONFIG = (ConfigDef()
              .define("schemas.enable", ConfigType.BOOLEAN, True, importance=Importance.HIGH,
                      documentation="Include schemas within each of the serialized values and keys.")
              .define("decimal.format", ConfigType.STRING, "BASE64", validator=valid_string("BASE64", "NUMERIC"),
                      importance=Importance.LOW,
                      documentation="Serialize Connect decimals as base64 bytes (BASE64) or JSON numbers (NUMERIC)."))

    def __init__(self) -> None:
        self.schemas_enable = True
        self.decimal_numeric = False

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        parsed = self.CONFIG.parse({k: v for k, v in config.items() if k in self.CONFIG.names()})
        self.schemas_enable = bool(parsed["schemas.enable"])
        self.decimal_numeric = str(parsed["decimal.format"]).upper() == "NUMERIC"

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        payload = value_to_json(schema, value, self.decimal_numeric)
        if self.schemas_enable:
            envelope = {"schema": schema_to_json(schema, self.decimal_numeric) if schema is not None else None,
                        "payload": payload}
            return dumps(envelope).encode("utf-8")
        try:
            return dumps(payload).encode("utf-8")
        except ValueError as e:
            raise DataException(str(e)) from e

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(None, None)
        node = parse_json(data)
        if not self.schemas_enable:
            return SchemaAndValue(None, value_from_json(None, node))
        if not isinstance(node, dict) or set(node) != {"schema", "payload"}:
            raise DataException(
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
                "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
                "in your converter configuration.")
        schema = schema_from_json(node["schema"])
        return SchemaAndValue(schema, value_from_json(schema, node["payload"]))


class StringConverter(Converter):
    """Kafka's StringConverter: values as their string form in ``converter.encoding`` (UTF-8)."""

    CONFIG = ConfigDef().define("converter.encoding", ConfigType.STRING, "UTF8", importance=Importance.HIGH,
                                documentation="The name of the Java-style character set for strings.")

    def __init__(self) -> None:
        self.encoding = "utf-8"

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        name = str(config.get("converter.encoding", "UTF8"))
        self.encoding = {"UTF8": "utf-8", "UTF-8": "utf-8"}.get(name.upper(), name)
        try:
            "".encode(self.encoding)
        except LookupError as e:
            raise DataException(f"Unknown converter.encoding {name}") from e

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode(self.encoding, errors="replace")
        else:
            text = str(value)
        return text.encode(self.encoding)

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, data.decode(self.encoding))
        except UnicodeDecodeError as e:
            raise DataException(f"Failed to deserialize string: {e}") from e


class ByteArrayConverter(Converter):
    """Kafka's ByteArrayConverter: bytes pass through unchanged."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type.value}")
        if value is None:
            return None
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise DataException(f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")
        return bytes(value)

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, data)


CONVERTER_ALIASES: dict[str, type[Converter]] = {
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "JsonConverter": JsonConverter,
    "StringConverter": StringConverter,
    "ByteArrayConverter": ByteArrayConverter,
}
