"""Turning record keys, values and headers into something to show and to filter on.

Decodings (``mode``):

* ``string``: UTF-8 text (invalid bytes replaced);
* ``json``: parsed JSON (fails if the bytes are not JSON);
* ``hex``: lowercase hex of the bytes;
* ``registry`` (also called ``avro``): Confluent's wire format (byte 0x00, big-endian int32
  schema id, body) decoded with the writer's schema fetched from the schema registry by id: an
  AVRO schema's body is Avro binary, a JSON schema's a JSON document, a PROTOBUF schema's the
  message indexes and the message (:mod:`~zurau.schema_formats.protobuf_decoding`);
* ``auto`` (the default): ``registry`` when a registry is configured and the bytes start with the
  wire format's magic byte and a schema id the registry knows, else ``json`` when the bytes parse
  as a JSON object or array, else ``string`` when they are valid UTF-8, else ``hex``.

A decoded field is ``Decoded(encoding, data, schema_id, error)``: ``data`` is JSON-safe (Avro
bytes become hex strings, decimals and dates strings) so that the HTTP API can send it, and is
what the filter sees. A requested decoding that fails falls back to hex and carries ``error``.
Null keys and values stay ``None`` (encoding ``null``).
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
import uuid
from dataclasses import dataclass
from typing import Any

from zurau.schema_formats.registry_http import RegistryClient, ServiceError

MODES = ("auto", "string", "json", "hex", "registry", "avro")
REGISTRY_MODES = ("auto", "registry", "avro")
MAGIC = 0


@dataclass(frozen=True)
class Decoded:
    encoding: str  # null | string | json | hex | avro | jsonschema | protobuf
    data: Any
    schema_id: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"encoding": self.encoding, "data": self.data}
        if self.schema_id is not None:
            out["schema_id"] = self.schema_id
        if self.error:
            out["error"] = self.error
        return out


NULL = Decoded("null", None)


def json_safe(x: Any) -> Any:
    """Avro-decoded values as JSON-compatible ones."""
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x).hex()
    if isinstance(x, decimal.Decimal):
        return str(x)
    if isinstance(x, (datetime.datetime, datetime.date, datetime.time)):
        return x.isoformat()
    if isinstance(x, uuid.UUID):
        return str(x)
    return x


def wire_schema_id(data: bytes) -> int | None:
    """The schema id of a Confluent wire-format payload, or None."""
    if len(data) >= 5 and data[0] == MAGIC:
        return int(struct.unpack_from(">i", data, 1)[0])
    return None


class RecordDecoder:
    """Decodes with the registry's schemas; :meth:`prepare` fetches a payload's schema first
    (async), after which :meth:`decode` is synchronous. Schemas are cached by id for the
    decoder's lifetime (ids are immutable in a registry)."""

    def __init__(self, registry: RegistryClient | None) -> None:
        self.registry = registry
        self._schemas: dict[int, tuple[str, Any] | str] = {}  # id -> (type, parsed) | error
        self._unavailable: dict[int, str] = {}  # id -> why the registry could not be asked (not cached)

    async def prepare(self, data: bytes | None, mode: str) -> None:
        if data is None or self.registry is None or mode not in REGISTRY_MODES:
            return
        sid = wire_schema_id(data)
        if sid is None or sid in self._schemas:
            return
        self._unavailable.pop(sid, None)
        try:
            doc = await self.registry.get_json(f"/schemas/ids/{sid}")
            stype = str(doc.get("schemaType", "AVRO")).upper()
            if stype == "AVRO":
                import fastavro

                self._schemas[sid] = ("AVRO", fastavro.parse_schema(json.loads(doc["schema"])))
            elif stype == "JSON":
                self._schemas[sid] = ("JSON", None)
            elif stype == "PROTOBUF":
                from zurau.schema_formats.protobuf_decoding import load_schema

                serialized = await self.registry.get_json(f"/schemas/ids/{sid}", params={"format": "serialized"})
                self._schemas[sid] = ("PROTOBUF", await load_schema(self.registry, serialized))
            else:
                self._schemas[sid] = f"schema {sid} is {stype}, which the console cannot decode"
        except ServiceError as e:
            if e.status < 500:  # the registry's answer; an unreachable registry is asked again next time
                self._schemas[sid] = f"schema {sid}: {e}"
            else:
                self._unavailable[sid] = f"schema {sid}: {e}"
        except (ValueError, KeyError, TypeError, ImportError) as e:
            self._schemas[sid] = f"schema {sid} cannot be parsed: {e}"

    def schema(self, sid: int) -> tuple[str, Any] | str | None:
        """What :meth:`prepare` found for schema ``sid``: ``(type, parsed)`` (type ``AVRO`` with a
        fastavro schema, ``JSON`` with None, ``PROTOBUF`` with a ``FileDescriptor``), why it cannot be
        used, or None when it was not fetched."""
        return self._schemas.get(sid) or self._unavailable.get(sid)

    def _avro(self, data: bytes) -> Decoded | str:
        sid = wire_schema_id(data)
        if sid is None:
            return "not in the schema registry's wire format (magic byte 0 and a schema id)"
        if self.registry is None:
            return "no schema registry is configured (--registry-url)"
        entry = self.schema(sid)
        if entry is None:
            return f"schema {sid} was not fetched"
        if isinstance(entry, str):
            return entry
        stype, parsed = entry
        body = data[5:]
        try:
            if stype == "JSON":
                return Decoded("jsonschema", json.loads(body), sid)
            if stype == "PROTOBUF":
                from zurau.schema_formats.protobuf_decoding import decode_message

                return Decoded("protobuf", decode_message(parsed, body), sid)
            import fastavro

            buf = io.BytesIO(body)
            value = fastavro.schemaless_reader(buf, parsed, None)
            if buf.tell() != len(body):
                return f"{len(body) - buf.tell()} bytes left after the Avro value of schema {sid}"
            return Decoded("avro", json_safe(value), sid)
        except (ValueError, EOFError, TypeError, IndexError, KeyError, struct.error, UnicodeDecodeError) as e:
            return f"cannot decode with schema {sid}: {type(e).__name__}: {e}"

    def decode(self, data: bytes | None, mode: str = "auto") -> Decoded:
        if data is None:
            return NULL
        if mode == "hex":
            return Decoded("hex", data.hex())
        if mode == "string":
            return Decoded("string", data.decode("utf-8", "replace"))
        if mode == "json":
            try:
                return Decoded("json", json.loads(data))
            except (ValueError, UnicodeDecodeError) as e:
                return Decoded("hex", data.hex(), error=f"not JSON: {e}")
        if mode in ("registry", "avro"):
            got = self._avro(data)
            return got if isinstance(got, Decoded) else Decoded("hex", data.hex(), error=got)
        # auto
        first = data[:1]
        if first == b"\x00" and self.registry is not None and wire_schema_id(data) is not None:
            got = self._avro(data)
            if isinstance(got, Decoded):
                return got
        if first in (b"{", b"[") or (first == b" " and data.lstrip()[:1] in (b"{", b"[")):
            try:
                return Decoded("json", json.loads(data))
            except (ValueError, UnicodeDecodeError):
                pass
        try:
            return Decoded("string", data.decode("utf-8"))
        except UnicodeDecodeError:
            return Decoded("hex", data.hex())


def header_text(value: bytes | None) -> str | None:
    """A header value as text (UTF-8 with invalid bytes replaced), None for a null header."""
    return None if value is None else value.decode("utf-8", "replace")


__all__ = ["MODES", "NULL", "Decoded", "RecordDecoder", "header_text", "json_safe", "wire_schema_id"]
