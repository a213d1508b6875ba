"""Print a ``FileDescriptorProto`` back as ``.proto`` source text.

The registry stores Protobuf schemas as text (as Confluent's does), whether a client sent text or
a base64 ``FileDescriptorProto`` (confluent-kafka's ProtobufSerializer sends the latter). The text
printed here is the schema's canonical form: comments and formatting are gone, type names are
fully qualified (``.pkg.Msg``, which is all a descriptor keeps), members appear in a fixed order
(options, fields with each oneof at its first field, nested messages, nested enums, extensions,
extension ranges, reserved ranges and names). Invariant, tested: compiling the printed text with
protoc gives back a descriptor that prints to the same text.

``normalize=True`` also sorts imports and options, Confluent's normal form for ``normalize=true``.

Options are printed from the options messages' set fields; custom options (extensions of
``google.protobuf.*Options`` declared in the schema or its imports) are found in the descriptor
pool the schema was built in and printed as ``(full.name) = value``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.descriptor_pool import DescriptorPool

FDP = descriptor_pb2.FieldDescriptorProto

SCALAR_NAMES = {
    FDP.TYPE_DOUBLE: "double",
    FDP.TYPE_FLOAT: "float",
    FDP.TYPE_INT64: "int64",
    FDP.TYPE_UINT64: "uint64",
    FDP.TYPE_INT32: "int32",
    FDP.TYPE_FIXED64: "fixed64",
    FDP.TYPE_FIXED32: "fixed32",
    FDP.TYPE_BOOL: "bool",
    FDP.TYPE_STRING: "string",
    FDP.TYPE_BYTES: "bytes",
    FDP.TYPE_UINT32: "uint32",
    FDP.TYPE_SFIXED32: "sfixed32",
    FDP.TYPE_SFIXED64: "sfixed64",
    FDP.TYPE_SINT32: "sint32",
    FDP.TYPE_SINT64: "sint64",
}
_MAX_FIELD_NUMBER = 536870911  # 2^29 - 1: "max" in a range
_MAX_ENUM_NUMBER = 2147483647


def quote(text: str | bytes) -> str:
    """A proto string literal: printable ASCII as is, UTF-8 bytes of other text as octal escapes."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    out = []
    for b in raw:
        c = chr(b)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def default_json_name(name: str) -> str:
    """protoc's json_name for a field name: underscores dropped, the next letter upper-cased."""
    out: list[str] = []
    upper = False
    for c in name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out)


class ProtoPrinter:
    def __init__(self, pool: DescriptorPool | None, normalize: bool = False) -> None:
        self.pool = pool
        self.normalize = normalize
        self.lines: list[str] = []

    # ------------------------------------------------------------------ options
    def _value(self, fd: Any, value: Any) -> str:
        if fd.type == fd.TYPE_MESSAGE or fd.type == fd.TYPE_GROUP:
            return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
        if fd.type == fd.TYPE_ENUM:
            ev = fd.enum_type.values_by_number.get(value)
            return ev.name if ev is not None else str(value)
        if fd.type == fd.TYPE_BOOL:
            return "true" if value else "false"
        if fd.type == fd.TYPE_STRING:
            return quote(value)
        if fd.type == fd.TYPE_BYTES:
            return quote(bytes(value))
        if isinstance(value, float):
            if math.isnan(value):
                return "nan"
            if math.isinf(value):
                return "inf" if value > 0 else "-inf"
            return repr(value)
        return str(value)

    def _options(self, opts: Any, skip: Iterable[str] = ()) -> list[tuple[str, str]]:
        """``(name, value)`` pairs for the set fields of an options message, custom ones included."""
        skip = set(skip)
        if self.pool is not None and opts.ByteSize():
            try:  # re-read the options in the schema's pool, where its custom options are known
                desc = self.pool.FindMessageTypeByName(opts.DESCRIPTOR.full_name)
                from google.protobuf.message_factory import GetMessageClass

                rich = GetMessageClass(desc)()
                rich.ParseFromString(opts.SerializeToString())
                opts = rich
            except KeyError:
                pass
        pairs: list[tuple[str, str]] = []
        for fd, value in opts.ListFields():
            if fd.name in skip and not fd.is_extension:
                continue
            name = f"({fd.full_name})" if fd.is_extension else fd.name
            values = list(value) if fd.is_repeated else [value]
            pairs.extend((name, self._value(fd, v)) for v in values)
        if self.normalize:
            pairs.sort()
        return pairs

    def _option_lines(self, opts: Any, indent: str, skip: Iterable[str] = ()) -> None:
        for name, value in self._options(opts, skip):
            self.lines.append(f"{indent}option {name} = {value};")

    # ------------------------------------------------------------------ file
    def file(self, fdp: descriptor_pb2.FileDescriptorProto) -> str:
        syntax = fdp.syntax or "proto2"
        self.proto3 = syntax == "proto3"
        self.lines.append(f'syntax = "{syntax}";')
        if fdp.package:
            self.lines.append(f"package {fdp.package};")
        imports = []
        for i, dep in enumerate(fdp.dependency):
            kind = "public " if i in fdp.public_dependency else "weak " if i in fdp.weak_dependency else ""
            imports.append(f"import {kind}{quote(dep)};")
        if imports:
            self.lines.append("")
            self.lines.extend(sorted(imports) if self.normalize else imports)
        if fdp.HasField("options"):
            self.lines.append("")
            self._option_lines(fdp.options, "")
        for msg in fdp.message_type:
            self.lines.append("")
            self._message(msg, "")
        for enum in fdp.enum_type:
            self.lines.append("")
            self._enum(enum, "")
        self._extends(fdp.extension, "", blank=True)
        for svc in fdp.service:
            self.lines.append("")
            self._service(svc)
        return "\n".join(self.lines) + "\n"

    # ------------------------------------------------------------------ messages
    def _message(self, msg: descriptor_pb2.DescriptorProto, indent: str, group_header: str | None = None) -> None:
        inner = indent + "  "
        self.lines.append(f"{indent}{group_header or 'message ' + msg.name} {{")
        if msg.HasField("options"):
            self._option_lines(msg.options, inner)
        nested = {n.name: n for n in msg.nested_type}
        groups = {f.type_name.rsplit(".", 1)[-1] for f in msg.field if f.type == FDP.TYPE_GROUP}
        synthetic = {f.oneof_index for f in msg.field if f.proto3_optional}
        printed_oneofs: set[int] = set()
        for field in msg.field:
            if field.HasField("oneof_index") and field.oneof_index not in synthetic:
                idx = field.oneof_index
                if idx in printed_oneofs:
                    continue
                printed_oneofs.add(idx)
                decl = msg.oneof_decl[idx]
                self.lines.append(f"{inner}oneof {decl.name} {{")
                if decl.HasField("options"):
                    self._option_lines(decl.options, inner + "  ")
                for member in msg.field:
                    if member.HasField("oneof_index") and member.oneof_index == idx:
                        self._field(member, inner + "  ", nested, in_oneof=True)
                self.lines.append(f"{inner}}}")
            else:
                self._field(field, inner, nested)
        for sub in msg.nested_type:
            if sub.options.map_entry or sub.name in groups:
                continue
            self._message(sub, inner)
        for enum in msg.enum_type:
            self._enum(enum, inner)
        self._extends(msg.extension, inner, blank=False)
        for rng in msg.extension_range:
            line = f"{inner}extensions {self._range(rng.start, rng.end - 1, _MAX_FIELD_NUMBER)}"
            opts = self._options(rng.options) if rng.HasField("options") else []
            suffix = " [" + ", ".join(f"{k} = {v}" for k, v in opts) + "]" if opts else ""
            self.lines.append(line + suffix + ";")
        self._reserved(msg.reserved_range, msg.reserved_name, inner, exclusive_end=True, max_value=_MAX_FIELD_NUMBER)
        self.lines.append(f"{indent}}}")

    @staticmethod
    def _range(start: int, end_inclusive: int, max_value: int) -> str:
        if start == end_inclusive:
            return str(start)
        return f"{start} to {'max' if end_inclusive >= max_value else end_inclusive}"

    def _reserved(self, ranges: Any, names: Any, indent: str, exclusive_end: bool, max_value: int) -> None:
        if len(ranges):
            parts = [self._range(r.start, r.end - 1 if exclusive_end else r.end, max_value) for r in ranges]
            self.lines.append(f"{indent}reserved {', '.join(parts)};")
        if len(names):
            self.lines.append(f"{indent}reserved {', '.join(quote(n) for n in names)};")

    def _type_name(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        if field.type_name:
            return field.type_name
        return SCALAR_NAMES[field.type]

    def _field(
        self,
        field: descriptor_pb2.FieldDescriptorProto,
        indent: str,
        nested: dict[str, descriptor_pb2.DescriptorProto],
        in_oneof: bool = False,
    ) -> None:
        entry = nested.get(field.type_name.rsplit(".", 1)[-1]) if field.type == FDP.TYPE_MESSAGE else None
        if entry is not None and entry.options.map_entry and field.label == FDP.LABEL_REPEATED:
            key, value = entry.field[0], entry.field[1]
            head = f"map<{self._type_name(key)}, {self._type_name(value)}> {field.name} = {field.number}"
        else:
            label = ""
            if not in_oneof:
                if field.label == FDP.LABEL_REPEATED:
                    label = "repeated "
                elif field.label == FDP.LABEL_REQUIRED:
                    label = "required "
                elif not self.proto3 or field.proto3_optional:
                    label = "optional "
            if field.type == FDP.TYPE_GROUP:
                group = nested[field.type_name.rsplit(".", 1)[-1]]
                self._message(group, indent, group_header=f"{label}group {group.name} = {field.number}")
                return
            head = f"{label}{self._type_name(field)} {field.name} = {field.number}"
        opts: list[tuple[str, str]] = []
        if field.HasField("default_value"):
            opts.append(("default", self._default(field)))
        if field.HasField("json_name") and field.json_name != default_json_name(field.name):
            opts.append(("json_name", quote(field.json_name)))
        if field.HasField("options"):
            opts.extend(self._options(field.options))
        if self.normalize:
            opts.sort()
        suffix = " [" + ", ".join(f"{k} = {v}" for k, v in opts) + "]" if opts else ""
        self.lines.append(f"{indent}{head}{suffix};")

    @staticmethod
    def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
        value = field.default_value
        if field.type == FDP.TYPE_STRING:
            return quote(value)
        if field.type == FDP.TYPE_BYTES:
            return '"' + value + '"'  # already C-escaped in the descriptor
        return value  # numbers, true/false, inf/nan and enum value names print as stored

    def _extends(self, fields: Any, indent: str, blank: bool) -> None:
        by_extendee: dict[str, list[descriptor_pb2.FieldDescriptorProto]] = {}
        for f in fields:
            by_extendee.setdefault(f.extendee, []).append(f)
        for extendee, members in by_extendee.items():
            if blank:
                self.lines.append("")
            self.lines.append(f"{indent}extend {extendee} {{")
            for f in members:
                self._field(f, indent + "  ", {})
            self.lines.append(f"{indent}}}")

    # ------------------------------------------------------------------ enums and services
    def _enum(self, enum: descriptor_pb2.EnumDescriptorProto, indent: str) -> None:
        inner = indent + "  "
        self.lines.append(f"{indent}enum {enum.name} {{")
        if enum.HasField("options"):
            self._option_lines(enum.options, inner)
        for value in enum.value:
            opts = self._options(value.options) if value.HasField("options") else []
            suffix = " [" + ", ".join(f"{k} = {v}" for k, v in opts) + "]" if opts else ""
            self.lines.append(f"{inner}{value.name} = {value.number}{suffix};")
        self._reserved(enum.reserved_range, enum.reserved_name, inner, exclusive_end=False, max_value=_MAX_ENUM_NUMBER)
        self.lines.append(f"{indent}}}")

    def _service(self, svc: descriptor_pb2.ServiceDescriptorProto) -> None:
        self.lines.append(f"service {svc.name} {{")
        if svc.HasField("options"):
            self._option_lines(svc.options, "  ")
        for m in svc.method:
            cs = "stream " if m.client_streaming else ""
            ss = "stream " if m.server_streaming else ""
            head = f"  rpc {m.name}({cs}{m.input_type}) returns ({ss}{m.output_type})"
            opts = self._options(m.options) if m.HasField("options") else []
            if opts:
                self.lines.append(head + " {")
                self.lines.extend(f"    option {k} = {v};" for k, v in opts)
                self.lines.append("  }")
            else:
                self.lines.append(head + ";")
        self.lines.append("}")


def print_proto(
    fdp: descriptor_pb2.FileDescriptorProto, pool: DescriptorPool | None = None, normalize: bool = False
) -> str:
    """The ``.proto`` text of ``fdp`` (``pool``: where its custom options can be resolved)."""
    return ProtoPrinter(pool, normalize).file(fdp)
