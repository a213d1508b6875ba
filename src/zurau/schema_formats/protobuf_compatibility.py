"""Protobuf compatibility, after Confluent's Protobuf schema diff.

``check(reader, writer)`` compares the writer's schema (Confluent's "original") with the reader's
(the "update") and returns the incompatible differences as ``"TYPE #/path"`` strings (empty:
compatible). BACKWARD checks (new reads old), FORWARD (old reads new), as for the other types.
Messages, fields and enums are matched by name and field number on compiled descriptors, so type
names compare fully resolved (``Status`` and ``.pkg.Msg.Status`` are the same type).

Differences, and whether Confluent accepts them:

* compatible: PACKAGE_CHANGED, MESSAGE_ADDED, MESSAGE_MOVED (reordered), ENUM_ADDED,
  ENUM_REMOVED, enum constants added, renamed or removed, FIELD_ADDED, FIELD_REMOVED,
  FIELD_NAME_CHANGED, FIELD_STRING_OR_BYTES_LABEL_CHANGED (optional <-> repeated string/bytes),
  ONEOF_ADDED, ONEOF_REMOVED, ONEOF_FIELD_ADDED, one field moved into a new oneof;
* incompatible: MESSAGE_REMOVED, REQUIRED_FIELD_ADDED, REQUIRED_FIELD_REMOVED (proto2),
  FIELD_KIND_CHANGED (scalar/enum vs message vs map), FIELD_SCALAR_KIND_CHANGED (outside one
  wire-compatible group: int32/int64/uint32/uint64/bool/enums; sint32/sint64; string/bytes;
  fixed32/sfixed32; fixed64/sfixed64; float; double), FIELD_NAMED_TYPE_CHANGED (a message-typed
  field's type renamed, or its message changed incompatibly), FIELD_NUMERIC_LABEL_CHANGED
  (a number field between optional and repeated), ONEOF_FIELD_REMOVED,
  MULTIPLE_FIELDS_MOVED_TO_ONEOF, FIELD_MOVED_TO_EXISTING_ONEOF.

A field's label is Wire's view: ``repeated``, ``required``, ``optional`` when written (proto2,
proto3 ``optional``), none for plain proto3 fields, oneof members and maps; label changes count
only when both sides have one. A message type reached through a reference is compared only when
the two sides name different subject/versions (or one is local).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2

from zurau.schema_formats.protobuf_schema import ProtobufFile

FDP = descriptor_pb2.FieldDescriptorProto

INCOMPATIBLE = {
    "MESSAGE_REMOVED",
    "REQUIRED_FIELD_ADDED",
    "REQUIRED_FIELD_REMOVED",
    "FIELD_KIND_CHANGED",
    "FIELD_SCALAR_KIND_CHANGED",
    "FIELD_NAMED_TYPE_CHANGED",
    "FIELD_NUMERIC_LABEL_CHANGED",
    "ONEOF_FIELD_REMOVED",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
    "FIELD_MOVED_TO_EXISTING_ONEOF",
}

_SCALAR_GROUPS = {
    FDP.TYPE_INT32: "GENERAL_NUMBER",
    FDP.TYPE_INT64: "GENERAL_NUMBER",
    FDP.TYPE_UINT32: "GENERAL_NUMBER",
    FDP.TYPE_UINT64: "GENERAL_NUMBER",
    FDP.TYPE_BOOL: "GENERAL_NUMBER",
    FDP.TYPE_ENUM: "GENERAL_NUMBER",
    FDP.TYPE_SINT32: "SIGNED_NUMBER",
    FDP.TYPE_SINT64: "SIGNED_NUMBER",
    FDP.TYPE_STRING: "STRING_OR_BYTES",
    FDP.TYPE_BYTES: "STRING_OR_BYTES",
    FDP.TYPE_FIXED32: "FIXED32",
    FDP.TYPE_SFIXED32: "FIXED32",
    FDP.TYPE_FIXED64: "FIXED64",
    FDP.TYPE_SFIXED64: "FIXED64",
    FDP.TYPE_FLOAT: "FLOAT",
    FDP.TYPE_DOUBLE: "DOUBLE",
}


@dataclass(frozen=True)
class TypeInfo:
    proto: Any  # DescriptorProto or EnumDescriptorProto
    is_enum: bool
    package: str
    origin: tuple[str, int] | None  # the (subject, version) of the referenced file, None if local

    @property
    def is_map(self) -> bool:
        return not self.is_enum and self.proto.options.map_entry


def _type_table(schema: ProtobufFile) -> dict[str, TypeInfo]:
    table: dict[str, TypeInfo] = {}

    def walk(msgs: Any, enums: Any, prefix: str, package: str, origin: tuple[str, int] | None) -> None:
        for e in enums:
            table[f"{prefix}.{e.name}"] = TypeInfo(e, True, package, origin)
        for m in msgs:
            full = f"{prefix}.{m.name}"
            table[full] = TypeInfo(m, False, package, origin)
            walk(m.nested_type, m.enum_type, full, package, origin)

    for name, fdp in schema.files.items():
        walk(fdp.message_type, fdp.enum_type, f".{fdp.package}" if fdp.package else "", fdp.package, schema.origin.get(name))
    main = schema.fdp
    walk(main.message_type, main.enum_type, f".{main.package}" if main.package else "", main.package, None)
    return table


@dataclass
class _Context:
    original: dict[str, TypeInfo]
    update: dict[str, TypeInfo]
    original_syntax3: bool
    update_syntax3: bool
    out: list[str] = field(default_factory=list)
    hits: int = 0  # incompatible differences found, repeats included
    verdicts: dict[tuple[str, str], bool] = field(default_factory=dict)  # message pair -> incompatible

    def add(self, kind: str, path: list[str]) -> None:
        if kind in INCOMPATIBLE:
            self.hits += 1
            entry = f"{kind} #/{'/'.join(path)}"
            if entry not in self.out:
                self.out.append(entry)


def check(reader: ProtobufFile, writer: ProtobufFile) -> list[str]:
    """Incompatible differences from ``writer`` (original) to ``reader`` (update); empty if none."""
    ctx = _Context(_type_table(writer), _type_table(reader), writer.fdp.syntax == "proto3", reader.fdp.syntax == "proto3")
    o_prefix = f".{writer.fdp.package}" if writer.fdp.package else ""
    u_prefix = f".{reader.fdp.package}" if reader.fdp.package else ""
    _compare_types(ctx, writer.fdp.message_type, reader.fdp.message_type, o_prefix, u_prefix, [])
    return ctx.out


def _compare_types(ctx: _Context, original: Any, update: Any, o_prefix: str, u_prefix: str, path: list[str]) -> None:
    o_msgs = {m.name: (i, m) for i, m in enumerate(original)}
    u_msgs = {m.name: (i, m) for i, m in enumerate(update)}
    for name in sorted(o_msgs.keys() | u_msgs.keys()):
        if (name in o_msgs and o_msgs[name][1].options.map_entry) or (name in u_msgs and u_msgs[name][1].options.map_entry):
            continue  # a map field's entry type: compared through the map field
        if name not in u_msgs:
            ctx.add("MESSAGE_REMOVED", [*path, name])
        elif name in o_msgs:
            _compare_message(ctx, o_msgs[name][1], u_msgs[name][1], f"{o_prefix}.{name}", f"{u_prefix}.{name}", [*path, name])
    # enums: added, removed and constant changes are all compatible in Confluent's rules


def _label(field: Any, proto3: bool, in_oneof: bool) -> str | None:
    if in_oneof:
        return None
    if field.label == FDP.LABEL_REPEATED:
        return "REPEATED"
    if field.label == FDP.LABEL_REQUIRED:
        return "REQUIRED"
    if proto3 and not field.proto3_optional:
        return None
    return "OPTIONAL"


def _compare_message(ctx: _Context, original: Any, update: Any, o_full: str, u_full: str, path: list[str]) -> bool:
    """Compare two messages once (recursive types end at the pair in progress); True if incompatible."""
    pair = (o_full, u_full)
    if pair in ctx.verdicts:
        return ctx.verdicts[pair]
    ctx.verdicts[pair] = False
    before = ctx.hits
    _compare_message_body(ctx, original, update, o_full, u_full, path)
    ctx.verdicts[pair] = ctx.hits > before
    return ctx.verdicts[pair]


def _compare_message_body(ctx: _Context, original: Any, update: Any, o_full: str, u_full: str, path: list[str]) -> None:

    def split(msg: Any) -> tuple[dict[int, Any], dict[str, dict[int, Any]]]:
        synthetic = {f.oneof_index for f in msg.field if f.proto3_optional}
        plain: dict[int, Any] = {}
        oneofs: dict[str, dict[int, Any]] = {}
        for f in msg.field:
            if f.HasField("oneof_index") and f.oneof_index not in synthetic:
                oneofs.setdefault(msg.oneof_decl[f.oneof_index].name, {})[f.number] = f
            else:
                plain[f.number] = f
        return plain, oneofs

    o_plain, o_oneofs = split(original)
    u_plain, u_oneofs = split(update)
    o_oneof_of = {tag: name for name, fs in o_oneofs.items() for tag in fs}
    u_oneof_of = {tag: name for name, fs in u_oneofs.items() for tag in fs}
    o_all = {**o_plain, **{t: f for fs in o_oneofs.values() for t, f in fs.items()}}
    u_all = {**u_plain, **{t: f for fs in u_oneofs.values() for t, f in fs.items()}}
    remaining = dict(o_plain)
    for name, fields in u_oneofs.items():
        moved = sum(1 for tag in fields if remaining.pop(tag, None) is not None)
        existing = sum(1 for tag in fields if tag not in o_plain and tag in o_oneof_of)
        if moved > 1:
            ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF", [*path, name])
        elif moved == 1 and existing > 0:
            ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF", [*path, name])
    for name in sorted(o_oneofs.keys() & u_oneofs.keys()):
        for tag in sorted(o_oneofs[name].keys() | u_oneofs[name].keys()):
            of, uf = o_oneofs[name].get(tag), u_oneofs[name].get(tag)
            if uf is None:
                if tag not in u_all:
                    ctx.add("ONEOF_FIELD_REMOVED", [*path, name, str(tag)])
            elif of is not None:
                _compare_field(ctx, of, uf, True, True, [*path, name, str(tag)])
    for tag in sorted(remaining.keys() | u_plain.keys()):
        of, uf = remaining.get(tag), u_plain.get(tag)
        if of is not None and uf is None:
            if of.label == FDP.LABEL_REQUIRED:
                ctx.add("REQUIRED_FIELD_REMOVED", [*path, str(tag)])
        elif of is None and uf is not None:
            if uf.label == FDP.LABEL_REQUIRED:
                ctx.add("REQUIRED_FIELD_ADDED", [*path, str(tag)])
        else:
            _compare_field(ctx, of, uf, False, False, [*path, str(tag)])
    for tag in sorted(o_all.keys() & u_all.keys()):
        o_in, u_in = o_oneof_of.get(tag), u_oneof_of.get(tag)
        if (o_in is None and u_in is None) or (o_in is not None and o_in == u_in):
            continue
        _compare_field(ctx, o_all[tag], u_all[tag], o_in is not None, u_in is not None, [*path, str(tag)])
    _compare_types(ctx, original.nested_type, update.nested_type, o_full, u_full, path)


_Type = tuple[str, Any, Any]  # ("scalar", type enum, None) | ("enum"|"message", full name, None) | ("map", key, value)


def _field_type(field: Any, table: dict[str, TypeInfo]) -> _Type:
    if field.type in (FDP.TYPE_MESSAGE, FDP.TYPE_GROUP):
        info = table.get(field.type_name)
        if info is not None and info.is_map:
            key, value = info.proto.field[0], info.proto.field[1]
            return ("map", _field_type(key, table), _field_type(value, table))
        return ("message", field.type_name, None)
    if field.type == FDP.TYPE_ENUM:
        return ("enum", field.type_name, None)
    return ("scalar", field.type, None)


def _kind(t: _Type) -> str:
    return {"scalar": "SCALAR", "enum": "SCALAR", "map": "MAP", "message": "MESSAGE"}[t[0]]


def _compare_field(ctx: _Context, of: Any, uf: Any, o_oneof: bool, u_oneof: bool, path: list[str]) -> None:
    o_type, u_type = _field_type(of, ctx.original), _field_type(uf, ctx.update)
    o_label = None if o_type[0] == "map" else _label(of, ctx.original_syntax3, o_oneof)
    u_label = None if u_type[0] == "map" else _label(uf, ctx.update_syntax3, u_oneof)
    _compare_types_of(ctx, o_label, u_label, o_type, u_type, path)


def _compare_types_of(ctx: _Context, o_label: str | None, u_label: str | None, o: _Type, u: _Type, path: list[str]) -> None:
    if _kind(o) != _kind(u):
        ctx.add("FIELD_KIND_CHANGED", path)
        return
    kind = _kind(o)
    if kind == "SCALAR":
        o_group = _SCALAR_GROUPS[FDP.TYPE_ENUM if o[0] == "enum" else o[1]]
        u_group = _SCALAR_GROUPS[FDP.TYPE_ENUM if u[0] == "enum" else u[1]]
        if o_group != u_group:
            ctx.add("FIELD_SCALAR_KIND_CHANGED", path)
        elif o_label is not None and u_label is not None and o_label != u_label:
            ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if o_group == "STRING_OR_BYTES" else "FIELD_NUMERIC_LABEL_CHANGED", path)
    elif kind == "MAP":
        _compare_types_of(ctx, None, None, o[1], u[1], path)
        _compare_types_of(ctx, None, None, o[2], u[2], path)
    else:
        _compare_message_types(ctx, o[1], u[1], path)


def _local_name(full: str, info: TypeInfo | None) -> str:
    full = full.lstrip(".")
    if info is not None and info.package and full.startswith(info.package + "."):
        return full[len(info.package) + 1 :]
    return full


def _compare_message_types(ctx: _Context, o_full: str, u_full: str, path: list[str]) -> None:
    o_info, u_info = ctx.original.get(o_full), ctx.update.get(u_full)
    if o_info is None or u_info is None:  # well-known or unresolvable: compare by name
        if o_full != u_full:
            ctx.add("FIELD_NAMED_TYPE_CHANGED", path)
        return
    o_local, u_local = _local_name(o_full, o_info), _local_name(u_full, u_info)
    if o_local != u_local:
        ctx.add("FIELD_NAMED_TYPE_CHANGED", path)
        return
    if o_info.origin is not None and o_info.origin == u_info.origin:
        return  # the same subject/version on both sides
    if _compare_message(ctx, o_info.proto, u_info.proto, o_full, u_full, o_local.split(".")):
        ctx.add("FIELD_NAMED_TYPE_CHANGED", path)
