"""Decode record values in the schema registry wire format for ``zurau consume --value-format``.

A framed value is magic byte ``0``, a 4-byte big-endian schema id, then the payload; Protobuf
payloads start with the message indexes (a zigzag varint count, then that many zigzag varint
indexes; a count of 0 means the first message, ``[0]``), as Confluent's serializers write them.
Each value becomes one line of compact JSON:

* ``avro``: the payload read with the writer schema (fastavro), references resolved;
* ``json-schema``: the payload is JSON already (re-emitted compactly);
* ``protobuf``: the message the indexes name, from the writer's descriptors (``format=serialized``
  with its references, well-known types from the protobuf package), as protobuf's JSON mapping.

Schemas are fetched once per id (:meth:`ValueDecoder.fetch` does the blocking HTTP, so callers
run it in a thread); an unframed value or an id the registry lacks is a :class:`CommandError`.
Bytes (Avro ``bytes``/``fixed``) print as base64 strings, decimals and dates as strings.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterable
from typing import Any

from zurau.cli.common import CommandError
from zurau.cli.registry_client import RegistryClient
from zurau.client.schema_registry import FramingError, unframe

FORMATS = ("avro", "json-schema", "protobuf")


def split_frame(value: bytes) -> tuple[int, bytes]:
    """``(schema id, payload)`` of a framed value; CommandError if it is not framed."""
    try:
        return unframe(value)
    except FramingError as e:
        raise CommandError(f"the value is not in the schema registry wire format ({e})") from None


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise CommandError("truncated message indexes in a protobuf value")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def message_indexes(payload: bytes) -> tuple[list[int], bytes]:
    count, pos = _zigzag_varint(payload, 0)
    if count == 0:
        return [0], payload[pos:]
    indexes = []
    for _ in range(count):
        index, pos = _zigzag_varint(payload, pos)
        indexes.append(index)
    return indexes, payload[pos:]


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray):
        return base64.b64encode(bytes(obj)).decode("ascii")
    return str(obj)


class ValueDecoder:
    def __init__(self, fmt: str, registry: RegistryClient) -> None:
        if fmt not in FORMATS:
            raise CommandError(f"--value-format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        needs = {"avro": "fastavro", "protobuf": "google.protobuf"}.get(fmt)
        if needs is not None:
            import importlib.util

            if importlib.util.find_spec(needs.split(".")[0]) is None:
                raise CommandError(f"--value-format {fmt} needs {needs}: pip install 'zurau[registry]'")
        self.fmt = fmt
        self.registry = registry
        self._readers: dict[int, Any] = {}

    def missing(self, values: Iterable[bytes | None]) -> set[int]:
        """Schema ids among framed ``values`` not fetched yet (unframed values are left to decode)."""
        out = set()
        for v in values:
            if v is not None and len(v) >= 5 and v[0] == 0:
                schema_id = int.from_bytes(v[1:5], "big")
                if schema_id not in self._readers:
                    out.add(schema_id)
        return out

    def fetch(self, ids: Iterable[int]) -> None:
        """Fetch and prepare the writer schemas of ``ids`` (blocking HTTP)."""
        for schema_id in ids:
            if self.fmt == "avro":
                self._readers[schema_id] = self._avro_reader(schema_id)
            elif self.fmt == "protobuf":
                self._readers[schema_id] = self._protobuf_pool(schema_id)
            else:
                self.registry.schema_by_id(schema_id)  # an unknown id is an error here too
                self._readers[schema_id] = None

    def decode(self, value: bytes | None) -> bytes | None:
        if value is None:
            return None
        schema_id, payload = split_frame(value)
        if schema_id not in self._readers:
            self.fetch([schema_id])
        reader = self._readers[schema_id]
        if self.fmt == "json-schema":
            try:
                doc = json.loads(payload)
            except ValueError as e:
                raise CommandError(f"a JSON Schema value (schema id {schema_id}) is not JSON: {e}") from None
        elif self.fmt == "avro":
            import fastavro

            doc = fastavro.schemaless_reader(io.BytesIO(payload), reader, None)
        else:
            doc = self._protobuf_decode(reader, payload, schema_id)
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=_json_default).encode()

    # ------------------------------------------------------------------ avro
    def _avro_named(self, references: list[dict[str, Any]], named: dict[str, Any], seen: set[tuple[str, int]]) -> None:
        import fastavro

        for ref in references:
            key = (ref["subject"], ref["version"])
            if key in seen:
                continue
            seen.add(key)
            found = self.registry.version(ref["subject"], ref["version"])
            self._avro_named(found.get("references", []), named, seen)
            fastavro.parse_schema(json.loads(found["schema"]), named_schemas=named)

    def _avro_reader(self, schema_id: int) -> Any:
        import fastavro

        found = self.registry.schema_by_id(schema_id)
        if found.get("schemaType", "AVRO") != "AVRO":
            raise CommandError(f"schema {schema_id} is {found['schemaType']}, not AVRO")
        named: dict[str, Any] = {}
        self._avro_named(found.get("references", []), named, set())
        return fastavro.parse_schema(json.loads(found["schema"]), named_schemas=named)

    # ------------------------------------------------------------------ protobuf
    def _protobuf_pool(self, schema_id: int) -> Any:
        import importlib

        from google.protobuf import descriptor_pb2
        from google.protobuf.descriptor_pool import DescriptorPool

        pool = DescriptorPool()
        added: set[str] = set()
        files: dict[str, Any] = {}

        def add(name: str, found: dict[str, Any]) -> None:
            fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(found["schema"]))
            fdp.name = name
            refs = {r["name"]: r for r in found.get("references", [])}
            for dep in fdp.dependency:
                if dep in added:
                    continue
                if dep in refs:
                    add(dep, self.registry.version(refs[dep]["subject"], refs[dep]["version"], fmt="serialized"))
                elif dep.startswith("google/protobuf/"):
                    module = importlib.import_module("google.protobuf." + dep.rsplit("/", 1)[1].removesuffix(".proto") + "_pb2")
                    pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
                    added.add(dep)
                else:
                    raise CommandError(f"schema {schema_id} imports {dep}, which none of its references provides")
            pool.Add(fdp)
            added.add(name)
            files[name] = fdp

        found = self.registry.schema_by_id(schema_id, fmt="serialized")
        if found.get("schemaType") != "PROTOBUF":
            raise CommandError(f"schema {schema_id} is {found.get('schemaType', 'AVRO')}, not PROTOBUF")
        add(f"schema-{schema_id}.proto", found)
        return pool, files[f"schema-{schema_id}.proto"]

    @staticmethod
    def _protobuf_decode(reader: Any, payload: bytes, schema_id: int) -> Any:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError
        from google.protobuf.message_factory import GetMessageClass

        pool, fdp = reader
        indexes, body = message_indexes(payload)
        try:  # the indexes walk the file's messages, then nested messages, in declaration order
            msg = fdp.message_type[indexes[0]]
            name = f"{fdp.package}.{msg.name}" if fdp.package else msg.name
            for i in indexes[1:]:
                msg = msg.nested_type[i]
                name = f"{name}.{msg.name}"
        except IndexError:
            raise CommandError(f"schema {schema_id} has no message at indexes {indexes}") from None
        message = GetMessageClass(pool.FindMessageTypeByName(name))()
        try:
            message.ParseFromString(body)
        except DecodeError as e:
            raise CommandError(f"a protobuf value (schema id {schema_id}) does not decode: {e}") from None
        return json_format.MessageToDict(message, preserving_proto_field_name=True)
