"""Protobuf payloads of the schema registry's wire format, decoded for the console's message
browser and the REST proxy's consumers.

Confluent's Protobuf wire format is byte 0x00, a big-endian int32 schema id, then the *message
indexes* (a zigzag varint count followed by that many zigzag varints: the path to the message
type, top-level index first then nested ones; the single byte 0x00 means ``[0]``, the file's
first message), then the serialized message.

The schema comes from the registry's REST API as a serialized ``FileDescriptorProto``
(``GET /schemas/ids/{id}?format=serialized``, base64), with its references fetched the same way
(``/subjects/{s}/versions/{v}?format=serialized``) and Google's well-known types taken from the
``protobuf`` package, all added to a private ``DescriptorPool``. Decoded messages become JSON
with the ``.proto`` field names (``json_format.MessageToDict``).
"""

from __future__ import annotations

import base64
import importlib
from typing import Any
from urllib.parse import quote

from google.protobuf import descriptor_pb2, json_format, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.descriptor_pool import DescriptorPool
from google.protobuf.message import DecodeError

from zurau.schema_formats.registry_http import RegistryClient

MAX_REFERENCE_DEPTH = 16


def _file_proto(schema: str) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.b64decode(schema))
    return fdp


def _well_known(name: str) -> bytes | None:
    """The serialized descriptor of ``google/protobuf/<x>.proto`` from the protobuf package."""
    if not name.startswith("google/protobuf/") or not name.endswith(".proto"):
        return None
    module = "google.protobuf." + name[len("google/protobuf/") : -len(".proto")].replace("/", ".") + "_pb2"
    try:
        serialized: bytes = importlib.import_module(module).DESCRIPTOR.serialized_pb
        return serialized
    except (ImportError, AttributeError):
        return None


async def load_schema(registry: RegistryClient, doc: dict[str, Any]) -> FileDescriptor:
    """The file a registry schema document (asked with ``format=serialized``) describes, with its
    references loaded into the same private pool."""
    pool = DescriptorPool()
    added: set[str] = set()

    def add(fdp: descriptor_pb2.FileDescriptorProto) -> None:
        for dep in fdp.dependency:
            if dep not in added:
                wk = _well_known(dep)
                if wk is not None:
                    pool.AddSerializedFile(wk)
                    added.add(dep)
        if fdp.name not in added:
            pool.Add(fdp)
            added.add(fdp.name)

    async def with_references(d: dict[str, Any], name: str | None, depth: int) -> str:
        """Add ``d``'s references, then ``d`` as ``name`` (a reference is imported by its
        reference name, whatever name the registry gave the file); returns the name used."""
        if depth > MAX_REFERENCE_DEPTH:
            raise ValueError(f"schema references nest deeper than {MAX_REFERENCE_DEPTH}")
        for ref in d.get("references") or []:
            if ref["name"] in added:
                continue
            sub = await registry.get_json(
                f"/subjects/{quote(ref['subject'], safe='')}/versions/{ref['version']}",
                params={"format": "serialized"},
            )
            await with_references(sub, ref["name"], depth + 1)
        fdp = _file_proto(d["schema"])
        if name is None:  # the schema itself: its own name unless a reference took it
            name = fdp.name if fdp.name and fdp.name not in added else "zurau-console-schema.proto"
        fdp.name = name
        add(fdp)
        return name

    return pool.FindFileByName(await with_references(doc, None, 0))


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data):
            raise ValueError("the message indexes end early")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("a message index varint is too long")
    return (value >> 1) ^ -(value & 1), pos


def message_indexes(body: bytes) -> tuple[list[int], int]:
    """The message-index path after the schema id, and where the message starts."""
    count, pos = _zigzag_varint(body, 0)
    if count == 0:
        return [0], pos
    if not 0 < count <= 100:
        raise ValueError(f"{count} message indexes")
    path = []
    for _ in range(count):
        i, pos = _zigzag_varint(body, pos)
        path.append(i)
    return path, pos


def decode_message(fd: FileDescriptor, body: bytes, *, canonical_json: bool = False) -> dict[str, Any]:
    """``body`` (everything after the schema id) as JSON: with the ``.proto`` field names, or with
    ``canonical_json`` as Protobuf's canonical JSON mapping prints it with every field (lowerCamelCase
    names, fields at their default value included: what Confluent's serializers' ``toJson`` gives)."""
    path, pos = message_indexes(body)
    types: list[Descriptor] = list(fd.message_types_by_name.values())
    desc: Descriptor | None = None
    for i in path:
        if not 0 <= i < len(types):
            raise ValueError(f"message index {i} is not in the schema")
        desc = types[i]
        types = list(desc.nested_types)
    assert desc is not None
    msg = message_factory.GetMessageClass(desc)()
    try:
        msg.ParseFromString(body[pos:])
    except DecodeError as e:
        raise ValueError(f"not a {desc.full_name}: {e}") from None
    out: dict[str, Any] = json_format.MessageToDict(
        msg, preserving_proto_field_name=not canonical_json, always_print_fields_with_no_presence=canonical_json
    )
    return out


__all__ = ["decode_message", "load_schema", "message_indexes"]
