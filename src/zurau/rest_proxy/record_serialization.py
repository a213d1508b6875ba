"""Turning the key or value of a produce request into the bytes of a Kafka record, as Confluent's
REST proxy does.

Embedded formats (``type``):

* ``BINARY``: ``data`` is a base64 string, the bytes are its decoding;
* ``JSON``: ``data`` is any JSON, the bytes are its compact UTF-8 text;
* ``STRING``: ``data`` is a string, the bytes are its UTF-8;
* ``AVRO``, ``JSONSCHEMA``, ``PROTOBUF``: ``data`` is checked against a schema of the schema
  registry (``schema.registry.url``) and written in Confluent's wire format: byte 0, the
  big-endian int32 schema id, then the Avro binary encoding (``data`` in Avro's JSON encoding:
  a non-null union branch as ``{"<type>": value}``), the JSON text, or the message indexes
  (zig-zag varints; ``[0]``, the schema's first message, as the single byte 0) and the Protobuf
  message (``data`` in Protobuf's JSON mapping).

The schema (v3's ``ProduceRequestData``) is the one with ``schema_id``; or version
``schema_version`` of the subject; or an inline ``schema`` (with its ``type``), registered
under the subject when it is not there yet; or else the subject's latest version. The subject is
``subject`` or comes from ``subject_name_strategy``: ``TOPIC_NAME`` (the default,
``<topic>-key``/``<topic>-value``), ``RECORD_NAME`` (the schema's full record name: an Avro named
type, a JSON schema's ``title``, the first Protobuf message) or ``TOPIC_RECORD_NAME``
(``<topic>-<record name>``). v2 uses the same machinery with ``TOPIC_NAME``.

Errors (Confluent's codes, :data:`KEY_SCHEMA_MISSING` ...): a malformed request is 400; data
that does not fit its schema 422/42203; an invalid schema 422/42205; schemas without a configured
registry 422/42206; a schema the registry does not have or refuses 422/42207 (a missing
``schema_version``: 400, as Confluent); a registry that cannot be reached 503.

Invariants: the registry client is synchronous and only ever called through
``asyncio.to_thread``, never on the event loop; schemas are parsed once per id (ids are
immutable) with :mod:`zurau.schema_formats.schema_types` (references resolved through the
registry); an inline schema is registered once per (subject, type, text) for the proxy's
lifetime; a subject's latest version is cached for :data:`LATEST_TTL` seconds.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import datetime
import io
import json
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from zurau.client.schema_registry import SchemaRegistryClient, SchemaRegistryError, frame
from zurau.edge_requests import INT32, kafka_int
from zurau.rest_proxy.errors import (
    CLUSTER_UNREACHABLE,
    INVALID_PAYLOAD,
    INVALID_SCHEMA,
    JSON_CONVERSION,
    KEY_SCHEMA_MISSING,
    PRODUCE_BATCH,
    SERIALIZATION,
    VALUE_SCHEMA_MISSING,
    RestProxyError,
    bad_request,
)
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.schema_formats.errors import RegistryError
from zurau.schema_formats.references import Reference
from zurau.schema_formats.schema_types import ParsedSchema, parse

REGISTRY_UNREACHABLE = CLUSTER_UNREACHABLE
__all__ = [
    "INVALID_PAYLOAD", "INVALID_SCHEMA", "JSON_CONVERSION", "KEY_SCHEMA_MISSING", "PRODUCE_BATCH",
    "SERIALIZATION", "VALUE_SCHEMA_MISSING",
]

FORMATS = ("BINARY", "JSON", "STRING", "AVRO", "JSONSCHEMA", "PROTOBUF")
SCHEMA_FORMATS = {"AVRO": "AVRO", "JSONSCHEMA": "JSON", "PROTOBUF": "PROTOBUF"}
"""Embedded format -> the registry's ``schemaType``."""
FORMAT_OF_TYPE = {v: k for k, v in SCHEMA_FORMATS.items()}
STRATEGIES = ("TOPIC_NAME", "RECORD_NAME", "TOPIC_RECORD_NAME")
LATEST_TTL = 5.0
MAX_REFERENCE_DEPTH = 16

def unprocessable(code: int, message: str) -> RestProxyError:
    return RestProxyError(422, code, message)


def conversion_error(detail: str) -> RestProxyError:
    return unprocessable(JSON_CONVERSION, f"Conversion of JSON to Object failed: {detail}")


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------- formats without schema


def encode_plain(fmt: str, data: Any) -> bytes | None:
    """``data`` in a format without schema (BINARY, JSON, STRING); None for JSON null."""
    if data is None:
        return None
    if fmt == "BINARY":
        if not isinstance(data, str):
            raise bad_request(f"data={_short(data)} is not a base64 string.")
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise bad_request(f"data={_short(data)} is not a valid base64 string.") from None
    if fmt == "JSON":
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if fmt == "STRING":
        if not isinstance(data, str):
            raise bad_request(f"data={_short(data)} is not a string.")
        return data.encode("utf-8")
    raise AssertionError(fmt)


# ---------------------------------------------------------------------------- schemas


@dataclass(frozen=True)
class RecordSchema:
    """A registry schema, parsed and ready to write data with."""

    schema_id: int
    format: str  # AVRO | JSONSCHEMA | PROTOBUF
    parsed: ParsedSchema
    writer: Any  # AVRO: fastavro's expanded schema; JSONSCHEMA: a validator; PROTOBUF: a message class
    record_name: str | None
    references: tuple[Reference, ...] = ()

    def encode(self, data: Any) -> bytes | None:
        """``data`` checked against this schema, in Confluent's wire format (None for null)."""
        if data is None:
            return None
        if self.format == "AVRO":
            return frame(self.schema_id, _avro_bytes(self.writer, data))
        if self.format == "JSONSCHEMA":
            from jsonschema.exceptions import best_match

            error = best_match(self.writer.iter_errors(data))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path)
                raise conversion_error(f"{'#/' + where + ': ' if where else ''}{error.message}")
            return frame(self.schema_id, json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
        return frame(self.schema_id, b"\x00" + _protobuf_bytes(self.writer, data))


def _avro_bytes(schema: Any, data: Any) -> bytes:
    import fastavro
    from fastavro.validation import ValidationError, validate

    try:
        datum = next(iter(fastavro.json_reader(io.StringIO(json.dumps(data)), schema)))
        validate(datum, schema, raise_errors=True, strict=True)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, datum)
    except ValidationError as e:
        problems = "; ".join(str(p) for p in e.errors) if e.errors else str(e)
        raise conversion_error(problems) from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, StopIteration, OverflowError) as e:
        text = str(e)
        hint = next((h for needle, h in _AVRO_HINTS if needle in text), None)
        raise conversion_error(f"the data does not match the Avro schema: {hint or f'{type(e).__name__}: {text}'}") from None
    return out.getvalue()


# What fastavro's JSON decoder says, in words a REST client can act on.
_AVRO_HINTS = (
    ("popitem", 'a non-null union value is written {"<branch type>": value} (Avro\'s JSON encoding)'),
    ("no value and no default", "a field that has no default is missing"),
    ("item assignment", "a record is written as a JSON object"),
    ("is not in list", "a union branch or enum symbol that the schema does not have"),
)


def _protobuf_bytes(message_class: Any, data: Any) -> bytes:
    from google.protobuf import json_format

    if not isinstance(data, dict):
        raise conversion_error(f"a Protobuf message is a JSON object, not {_short(data)}")
    try:
        message = json_format.ParseDict(data, message_class())
        return bytes(message.SerializeToString())
    except (json_format.ParseError, ValueError, TypeError) as e:
        raise conversion_error(str(e)) from None


def _avro_record_name(obj: Any) -> str | None:
    if isinstance(obj, dict) and obj.get("type") in ("record", "error", "enum", "fixed") and isinstance(obj.get("name"), str):
        name, namespace = obj["name"], obj.get("namespace")
        return name if "." in name or not namespace else f"{namespace}.{name}"
    return None


def _build(schema_id: int, parsed: ParsedSchema, references: list[ParsedSchema]) -> RecordSchema:
    fmt = FORMAT_OF_TYPE[parsed.schema_type]
    if fmt == "AVRO":
        import fastavro

        named: dict[str, Any] = {}
        for ref in references:
            named.update(ref.named)
        writer: Any = fastavro.parse_schema(parsed.obj, named_schemas=named, expand=True)
        return RecordSchema(schema_id, fmt, parsed, writer, _avro_record_name(parsed.obj))
    if fmt == "JSONSCHEMA":
        from jsonschema.validators import validator_for

        obj = parsed.obj
        title = obj.get("title") if isinstance(obj, dict) else None
        return RecordSchema(schema_id, fmt, parsed, validator_for(obj)(obj), title if isinstance(title, str) else None)
    from google.protobuf import message_factory

    fdp = parsed.parsed.fdp
    if not fdp.message_type:
        raise unprocessable(INVALID_SCHEMA, f"Invalid schema: schema {schema_id} defines no message")
    first = fdp.message_type[0].name
    full_name = f"{fdp.package}.{first}" if fdp.package else first
    descriptor = parsed.parsed.pool().FindMessageTypeByName(full_name)
    return RecordSchema(schema_id, fmt, parsed, message_factory.GetMessageClass(descriptor), full_name)


@dataclass(frozen=True)
class SchemaSpec:
    """What a request says about the schema of its key or value."""

    format: str | None = None
    subject: str | None = None
    strategy: str | None = None
    schema_id: int | None = None
    schema_version: int | None = None
    raw_schema: str | None = None

    @property
    def names_schema(self) -> bool:
        return any(x is not None for x in (self.subject, self.strategy, self.schema_id, self.schema_version, self.raw_schema))


@dataclass(frozen=True)
class Serialized:
    """A serialized key or value and what the delivery report says about it."""

    data: bytes | None
    format: str | None  # None: the request had no key/value (no report field)
    subject: str | None = None
    schema_id: int | None = None
    schema_version: int | None = None

    def report(self) -> dict[str, Any] | None:
        if self.format is None:
            return None
        out: dict[str, Any] = {"type": self.format, "size": len(self.data) if self.data is not None else 0}
        if self.format in SCHEMA_FORMATS:
            out.update(subject=self.subject, schema_id=self.schema_id, schema_version=self.schema_version)
        return out


ABSENT = Serialized(None, None)


def parse_data_spec(raw: Any, side: str) -> tuple[SchemaSpec, Any]:
    """A v3 ``ProduceRequestData`` object: its schema choice and its ``data`` (400 if malformed)."""
    if not isinstance(raw, dict):
        raise bad_request(f"'{side}' must be an object, not {_short(raw)}")

    def text(name: str) -> str | None:
        v = raw.get(name)
        if v is not None and not isinstance(v, str):
            raise bad_request(f"'{side}.{name}' must be a string, not {_short(v)}")
        return v

    def number(name: str) -> int | None:
        v = raw.get(name)
        return None if v is None else kafka_int(v, "int32", f"{side}.{name}", minimum=0)

    fmt, strategy = text("type"), text("subject_name_strategy")
    if fmt is not None and fmt not in FORMATS:
        raise bad_request(f"'{side}.type' must be one of {', '.join(FORMATS)}, not {_short(fmt)}")
    if strategy is not None and strategy not in STRATEGIES:
        raise bad_request(f"'{side}.subject_name_strategy' must be one of {', '.join(STRATEGIES)}, not {_short(strategy)}")
    spec = SchemaSpec(fmt, text("subject"), strategy, number("schema_id"), number("schema_version"), text("schema"))
    if spec.strategy is not None and spec.subject is not None:
        raise bad_request("Only one of 'subject_name_strategy' or 'subject' can be used.")
    if sum(x is not None for x in (spec.schema_id, spec.schema_version, spec.raw_schema)) > 1:
        raise bad_request("Only one of 'schema_id', 'schema_version' or 'schema' can be used.")
    if fmt in SCHEMA_FORMATS:
        if spec.schema_id is not None or spec.schema_version is not None:
            raise bad_request(f"'type={fmt}' cannot be used with 'schema_id' or 'schema_version' (the schema names its type).")
        if spec.raw_schema is None:
            raise bad_request(f"'type={fmt}' needs an inline 'schema' (or leave 'type' out to use the subject's latest schema).")
    elif fmt is not None:
        for name in ("subject_name_strategy", "subject", "schema_id", "schema_version", "schema"):
            if raw.get(name) is not None:
                raise bad_request(f"'type={fmt}' cannot be used with '{name}'.")
    return spec, raw.get("data")


# ---------------------------------------------------------------------------- the registry


class RecordSerializer:
    """Serializes keys and values, with the schemas of one registry (None: none configured)."""

    def __init__(self, registry_url: str | None) -> None:
        self.url = registry_url
        self.client = SchemaRegistryClient(registry_url) if registry_url else None
        self._by_id: dict[int, RecordSchema] = {}
        self._parsed_refs: dict[tuple[str, int], tuple[int, ParsedSchema]] = {}
        self._registered: dict[tuple[str, str, str], int] = {}
        self._versions: dict[tuple[str, int], int | None] = {}
        self._latest: dict[str, tuple[float, int, int]] = {}
        self._local: dict[tuple[str, str], RecordSchema] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    async def close(self) -> None:
        self._by_id.clear()

    # -- public API
    async def serialize(self, topic: str, raw: Any, is_key: bool) -> Serialized:
        """A v3 ``key``/``value`` (absent: :data:`ABSENT`) serialized."""
        if raw is None:
            return ABSENT
        spec, data = parse_data_spec(raw, "key" if is_key else "value")
        if spec.format is not None and spec.format not in SCHEMA_FORMATS:
            return Serialized(encode_plain(spec.format, data), spec.format)
        if data is None and spec.format is None and not spec.names_schema:
            return ABSENT  # a null with nothing to look a schema up with: a null key/value
        schema, subject, version = await self.resolve(topic, spec, is_key)
        return Serialized(schema.encode(data), schema.format, subject, schema.schema_id, version)

    async def resolve(self, topic: str, spec: SchemaSpec, is_key: bool, *, want_version: bool = True) -> tuple[RecordSchema, str, int | None]:
        """The schema ``spec`` names, its subject and (``want_version``) its version there."""
        if self.client is None:
            raise unprocessable(INVALID_PAYLOAD, "Payload error. Schema Registry must be configured when using schemas.")
        if spec.schema_id is not None:
            schema = await self.by_id(spec.schema_id)
            subject = spec.subject or self._subject(topic, is_key, spec.strategy, schema)
            version = await self._version_of(subject, schema) if want_version else None
            return schema, subject, version
        if spec.schema_version is not None:
            subject = spec.subject or self._subject(topic, is_key, spec.strategy, None)
            body = await self._call(
                "GET", f"/subjects/{_q(subject)}/versions/{spec.schema_version}",
                f"Schema does not exist for subject: {subject}, version: {spec.schema_version}", not_found_status=400,
            )
            return await self.by_id(int(body["id"])), subject, spec.schema_version
        if spec.raw_schema is not None:
            assert spec.format in SCHEMA_FORMATS
            return await self._inline(topic, spec, is_key, want_version)
        subject = spec.subject or self._subject(topic, is_key, spec.strategy, None)
        now = time.monotonic()
        hit = self._latest.get(subject)
        if hit is not None and now - hit[0] < LATEST_TTL:
            return await self.by_id(hit[1]), subject, hit[2]
        body = await self._call("GET", f"/subjects/{_q(subject)}/versions/latest", f"Error when fetching latest schema version. subject = {subject}")
        schema_id, version = int(body["id"]), int(body["version"])
        _bounded(self._latest)[subject] = (now, schema_id, version)
        return await self.by_id(schema_id), subject, version

    async def by_id(self, schema_id: int) -> RecordSchema:
        """The schema with global id ``schema_id``, parsed (cached for good)."""
        hit = self._by_id.get(schema_id)
        if hit is not None:
            return hit
        lock = self._locks.setdefault(schema_id, asyncio.Lock())
        try:
            async with lock:
                hit = self._by_id.get(schema_id)
                if hit is not None:
                    return hit
                body = await self._call("GET", f"/schemas/ids/{schema_id}", f"Error when fetching schema by id. schemaId = {schema_id}")
                stype = str(body.get("schemaType") or "AVRO")
                if stype not in FORMAT_OF_TYPE:
                    raise unprocessable(INVALID_SCHEMA, f"Invalid schema: schema {schema_id} is of type {stype}, which the proxy cannot write")
                refs, names = await self._references(body.get("references") or [], 0)
                parsed = await asyncio.to_thread(self._parse, stype, str(body["schema"]), refs, names)
                built = dataclasses.replace(self._build(schema_id, parsed, refs), references=tuple(names))
                self._by_id[schema_id] = built
                return built
        finally:
            if not lock.locked():
                self._locks.pop(schema_id, None)

    # -- internals
    def _subject(self, topic: str, is_key: bool, strategy: str | None, schema: RecordSchema | None) -> str:
        strategy = strategy or "TOPIC_NAME"
        if strategy == "TOPIC_NAME":
            return f"{topic}-{'key' if is_key else 'value'}"
        if schema is None:
            raise bad_request(f"Cannot use schema_subject_strategy={strategy} without schema_id or schema.")
        if schema.record_name is None:
            raise unprocessable(
                SERIALIZATION,
                f"Error serializing message. subject_name_strategy={strategy} needs a named schema "
                f"(an Avro record, enum or fixed; a JSON schema with a title; a Protobuf message)",
            )
        return schema.record_name if strategy == "RECORD_NAME" else f"{topic}-{schema.record_name}"

    async def _inline(self, topic: str, spec: SchemaSpec, is_key: bool, want_version: bool) -> tuple[RecordSchema, str, int | None]:
        assert spec.format is not None and spec.raw_schema is not None
        stype = SCHEMA_FORMATS[spec.format]
        local = self._local.get((stype, spec.raw_schema))
        if local is None:
            parsed = await asyncio.to_thread(self._parse, stype, spec.raw_schema, [], [])
            local = _bounded(self._local)[(stype, spec.raw_schema)] = self._build(-1, parsed, [])
        subject = spec.subject or self._subject(topic, is_key, spec.strategy, local)
        key = (subject, stype, spec.raw_schema)
        schema_id = self._registered.get(key)
        if schema_id is None:
            body: dict[str, Any] = {"schema": spec.raw_schema}
            if stype != "AVRO":
                body["schemaType"] = stype
            result = await self._call(
                "POST", f"/subjects/{_q(subject)}/versions",
                f"Error when registering schema. format = {spec.format}, subject = {subject}", body=body,
            )
            schema_id = int(result["id"])
            _bounded(self._registered)[key] = schema_id
            self._by_id.setdefault(schema_id, dataclasses.replace(local, schema_id=schema_id))
        schema = await self.by_id(schema_id)
        version = await self._version_of(subject, schema) if want_version else None
        return schema, subject, version

    async def _version_of(self, subject: str, schema: RecordSchema) -> int | None:
        """The version of ``schema`` under ``subject`` (None when it is not registered there)."""
        key = (subject, schema.schema_id)
        if key in self._versions:
            return self._versions[key]
        body: dict[str, Any] = {"schema": schema.parsed.canonical}
        if schema.parsed.schema_type != "AVRO":
            body["schemaType"] = schema.parsed.schema_type
        if schema.references:
            body["references"] = [r.to_json() for r in schema.references]
        try:
            found = await self._call("POST", f"/subjects/{_q(subject)}", "", body=body, raw_errors=True)
            version: int | None = int(found["version"]) if int(found.get("id", schema.schema_id)) == schema.schema_id else None
        except SchemaRegistryError as e:
            if e.status != 404:
                raise self._error(e, f"Error when fetching schema version. subject = {subject}") from None
            version = None
        _bounded(self._versions)[key] = version
        return version

    async def _references(self, raw: list[Any], depth: int) -> tuple[list[ParsedSchema], list[Reference]]:
        if depth > MAX_REFERENCE_DEPTH:
            raise unprocessable(INVALID_SCHEMA, f"Invalid schema: references nested more than {MAX_REFERENCE_DEPTH} deep")
        parsed: list[ParsedSchema] = []
        names: list[Reference] = []
        for ref in raw:
            name, subject, version = str(ref["name"]), str(ref["subject"]), int(ref["version"])
            hit = self._parsed_refs.get((subject, version))
            if hit is None:
                body = await self._call("GET", f"/subjects/{_q(subject)}/versions/{version}", f"Error when fetching reference {subject} version {version}")
                sub_refs, sub_names = await self._references(body.get("references") or [], depth + 1)
                stype = str(body.get("schemaType") or "AVRO")
                parsed_ref = await asyncio.to_thread(self._parse, stype, str(body["schema"]), sub_refs, sub_names)
                hit = (int(body["id"]), parsed_ref)
                self._parsed_refs[(subject, version)] = hit
            parsed.append(hit[1])
            names.append(Reference(name, subject, version))
        return parsed, names

    @staticmethod
    def _parse(stype: str, text: str, refs: list[ParsedSchema], names: list[Reference]) -> ParsedSchema:
        try:
            return parse(stype, text, refs, names)
        except RegistryError as e:
            message = e.message if e.message.startswith("Invalid schema") else f"Invalid schema: {e.message}"
            raise unprocessable(INVALID_SCHEMA, message) from None

    @staticmethod
    def _build(schema_id: int, parsed: ParsedSchema, refs: list[ParsedSchema]) -> RecordSchema:
        try:
            return _build(schema_id, parsed, refs)
        except RestProxyError:
            raise
        except Exception as e:  # noqa: BLE001 - a schema our writers cannot take is an invalid schema
            raise unprocessable(INVALID_SCHEMA, f"Invalid schema: {type(e).__name__}: {e}") from None

    async def _call(
        self, method: str, path: str, context: str, *, body: Any = None, not_found_status: int = 422, raw_errors: bool = False
    ) -> Any:
        assert self.client is not None
        client = self.client
        try:
            return await asyncio.to_thread(client.request, method, path, body)
        except SchemaRegistryError as e:
            if raw_errors:
                raise
            if e.status == 404 and not_found_status == 400:
                raise bad_request(context) from None
            raise self._error(e, context) from None

    def _error(self, e: SchemaRegistryError, context: str) -> RestProxyError:
        if e.status == 0:
            return RestProxyError(503, REGISTRY_UNREACHABLE, f"The schema registry at {self.url} is not reachable: {e}")
        if e.status in (401, 403):
            return RestProxyError(403, 40301, f"{context}: the schema registry refused access: {e}")
        if e.status == 422 and e.error_code in (42201, 44201):
            return unprocessable(INVALID_SCHEMA, f"Invalid schema: {e}")
        return unprocessable(SERIALIZATION, f"Error serializing message. {context}: {e} (registry error {e.error_code or e.status})")


CACHE_ENTRIES = 10_000
"""Most entries of each cache keyed by what clients send (subjects, inline schemas); a full
cache is emptied (the registry still has everything)."""


def _bounded(cache: dict[Any, Any]) -> dict[Any, Any]:
    if len(cache) >= CACHE_ENTRIES:
        cache.clear()
    return cache


def _q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


SERVICE = "record_serializer"


def serializer_for(api: ProxyApi) -> RecordSerializer:
    """The proxy's one :class:`RecordSerializer` (kept in ``api.services``, shared by v2 and v3)."""
    found = api.services.get(SERVICE)
    if not isinstance(found, RecordSerializer):
        found = api.services[SERVICE] = RecordSerializer(api.config.schema_registry_url)
    return found


# ---------------------------------------------------------------------------- request fields shared by v2 and v3

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def parse_timestamp(raw: Any, name: str = "timestamp") -> int | None:
    """An ISO-8601 date-time (``2024-01-02T03:04:05.678Z``; no offset means UTC) as epoch ms."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not _ISO.match(raw):
        raise bad_request(f"'{name}' must be an ISO-8601 date-time such as 2024-01-02T03:04:05.678Z, not {_short(raw)}")
    try:
        when = datetime.datetime.fromisoformat(raw)
    except ValueError:
        raise bad_request(f"'{name}' is not a valid ISO-8601 date-time: {_short(raw)}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    ms = (when - _EPOCH) // datetime.timedelta(milliseconds=1)
    if ms < 0:
        raise bad_request(f"'{name}' is before 1970: {_short(raw)}")
    return ms


def format_timestamp(ms: int) -> str | None:
    """Epoch ms as Java's ``Instant.toString`` writes it (``...:42Z``, ``...:42.123Z``)."""
    if ms < 0:
        return None
    when = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    base = when.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ms % 1000:03d}Z" if ms % 1000 else f"{base}Z"


def partition_param(raw: Any, name: str = "partition_id") -> int | None:
    if raw is None:
        return None
    lo, hi = INT32
    if isinstance(raw, bool) or not isinstance(raw, int) or not lo <= raw <= hi:
        raise bad_request(f"'{name}' must be an integer, not {_short(raw)}")
    if raw < 0:
        raise RestProxyError(404, 40402, "Partition not found.")
    return raw

