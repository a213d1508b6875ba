"""Record keys and values as JSON, in the embedded formats of Confluent's v2 consumer API.

* ``binary``: the bytes in base64 (standard alphabet, padded);
* ``json``: the bytes parsed as JSON (UTF-8);
* ``avro``, ``jsonschema``, ``protobuf``: Confluent's wire format (byte 0, big-endian int32 schema
  id, then the payload), decoded with the writer's schema fetched by id from the registry at
  ``schema.registry.url``. The JSON is what Confluent's deserializers' ``toJson`` gives, so that a
  client switching proxies sees the same documents: Avro in Avro's JSON encoding (a non-null union
  branch wrapped as ``{"<type name>": value}``, ``bytes``/``fixed`` as strings of code points
  0-255, logical types as their underlying type), a JSON schema's document as it is, Protobuf in
  the canonical JSON mapping with every field (lowerCamelCase names, defaults included, 64-bit
  integers as strings).

The wire format, the schema lookups and their cache, and the Protobuf payload decoding are shared
with the console (:mod:`zurau.schema_formats.record_decoding`,
:mod:`zurau.schema_formats.protobuf_decoding`): one
:class:`RecordDeserializer` per proxy shares one cache of schemas by id (ids are immutable in a
registry); a registry that cannot be reached is asked again on the next record.

Invariants: a null key or value stays null; a key or value that is not in the asked format, or
whose schema is of another type or cannot be fetched, raises :class:`RecordFormatError` (Confluent
answers it 408 with code 40801, a quirk kept for compatibility) naming the record, and never
anything else; the size returned with each document is the serialized record field's length, the
measure Confluent's ``max_bytes`` and ``fetch.min.bytes`` apply to.
"""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import Any

from zurau.rest_proxy.errors import CONSUMER_POLL_TIMEOUT, INVALID_PAYLOAD, RestProxyError
from zurau.schema_formats.protobuf_decoding import decode_message
from zurau.schema_formats.record_decoding import RecordDecoder, wire_schema_id
from zurau.schema_formats.registry_http import RegistryClient

FORMATS = ("binary", "json", "avro", "jsonschema", "protobuf")
SCHEMA_FORMATS = {"avro": "AVRO", "jsonschema": "JSON", "protobuf": "PROTOBUF"}

SERVICE = "record_deserializer"
"""Key of the proxy's :class:`RecordDeserializer` in ``ProxyApi.services``."""


class RecordFormatError(RestProxyError):
    """A record key or value that is not in the consumer's format (408/40801, as Confluent)."""

    def __init__(self, message: str) -> None:
        super().__init__(408, CONSUMER_POLL_TIMEOUT, message)


def parse_format(raw: object) -> str:
    """A format name as Confluent takes it (any case); 422 for an unknown one."""
    name = str(raw).lower() if isinstance(raw, str) else ""
    if name not in FORMATS:
        raise RestProxyError(422, 42200, f"Invalid format type: {raw!r} (one of {', '.join(FORMATS)})")
    return name


class RecordDeserializer:
    """Turns record fields into JSON (see the module docstring); :meth:`close` releases the
    registry client."""

    def __init__(self, registry_url: str | None) -> None:
        self.registry = RegistryClient(registry_url) if registry_url else None
        self._decoder = RecordDecoder(self.registry)

    async def close(self) -> None:
        if self.registry is not None:
            await self.registry.close()

    def check_format(self, fmt: str) -> None:
        """422/42206 when ``fmt`` needs a schema registry and none is configured."""
        if fmt in SCHEMA_FORMATS and self.registry is None:
            raise RestProxyError(
                422, INVALID_PAYLOAD, f"the {fmt} format needs a schema registry (schema.registry.url is not set)"
            )

    async def to_json(self, data: bytes | None, fmt: str, what: str = "record") -> tuple[Any, int]:
        """``data`` as JSON in ``fmt``, and its size in bytes; ``what`` names it in errors."""
        if data is None:
            return None, 0
        size = len(data)
        if fmt == "binary":
            return base64.b64encode(data).decode("ascii"), size
        if fmt == "json":
            try:
                return json.loads(data), size
            except (ValueError, UnicodeDecodeError) as e:
                raise RecordFormatError(f"{what} is not JSON: {e}") from None
        return await self._schema_json(data, fmt, what), size

    async def _schema_json(self, data: bytes, fmt: str, what: str) -> Any:
        sid = wire_schema_id(data)
        if sid is None:
            raise RecordFormatError(f"{what} is not in the schema registry's wire format (magic byte 0 and a schema id)")
        await self._decoder.prepare(data, "registry")
        entry = self._decoder.schema(sid)
        if entry is None or isinstance(entry, str):
            raise RecordFormatError(f"{what}: {entry or f'schema {sid} could not be fetched'}")
        stype, parsed = entry
        wanted = SCHEMA_FORMATS[fmt]
        if stype != wanted:
            raise RecordFormatError(f"{what} was written with {stype} schema {sid}, not {wanted} as the {fmt} format reads")
        body = data[5:]
        try:
            if stype == "JSON":
                return json.loads(body)
            if stype == "PROTOBUF":
                return decode_message(parsed, body, canonical_json=True)
            return _avro_json(parsed, body, sid)
        except (ValueError, EOFError, TypeError, IndexError, KeyError, AttributeError, struct.error, UnicodeDecodeError) as e:
            raise RecordFormatError(f"{what} cannot be decoded with schema {sid}: {e}") from None


def _avro_json(schema: Any, body: bytes, sid: int) -> Any:
    """An Avro binary ``body`` as Avro's JSON encoding of the same datum."""
    import fastavro

    buf = io.BytesIO(body)
    datum = fastavro.schemaless_reader(buf, schema, None)
    if buf.tell() != len(body):
        raise ValueError(f"{len(body) - buf.tell()} bytes left after the value")
    out = io.StringIO()
    fastavro.json_writer(out, schema, [datum])
    return json.loads(out.getvalue())


def deserializer(services: dict[str, Any], registry_url: str | None) -> RecordDeserializer:
    """The proxy's :class:`RecordDeserializer`, made on first use (closed with the services)."""
    found = services.get(SERVICE)
    if found is None:
        found = services[SERVICE] = RecordDeserializer(registry_url)
    assert isinstance(found, RecordDeserializer)
    return found
