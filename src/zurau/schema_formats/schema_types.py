"""Parsing, canonical forms and compatibility of the registry's schema types.

Each supported type turns a schema string (plus its resolved references) into a
:class:`ParsedSchema` or raises :class:`~zurau.schema_formats.errors.RegistryError` 42201.
``canonical`` is the string the registry stores and serves: compact JSON (no insignificant
whitespace) for AVRO and JSON, so the same schema sent with different formatting is recognised
as the same schema; for PROTOBUF it is the ``.proto`` text printed from the compiled descriptor
(:mod:`~zurau.schema_formats.protobuf_schema`), whether text or a base64 descriptor was sent.
``normalized()`` (``normalize=true``) is a semantic normal form: AVRO drops docs and resolves
names to full names with Avro's canonical key order; JSON sorts keys; PROTOBUF sorts imports
and options.

Compatibility: ``is_compatible(new, old, mode_direction)`` runs the type's checker
(:mod:`~zurau.schema_formats.avro_compatibility`, :mod:`~zurau.schema_formats.json_compatibility`,
:mod:`~zurau.schema_formats.protobuf_compatibility`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zurau.edge_requests import BadInput, nesting_exceeds, parse_json
from zurau.schema_formats import avro_compatibility, avro_spec_rules, json_compatibility
from zurau.schema_formats.errors import RegistryError, invalid_schema
from zurau.schema_formats.references import Reference

AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"
SUPPORTED_TYPES = (AVRO, JSON, PROTOBUF)


@dataclass
class ParsedSchema:
    schema_type: str
    canonical: str
    obj: Any  # the parsed JSON document
    parsed: Any = None  # AVRO: fastavro's parsed form; PROTOBUF: the compiled ProtobufFile
    named: dict[str, Any] = field(default_factory=dict)  # AVRO: named types, references included

    def normalized(self) -> str:
        if self.schema_type == AVRO:
            return _compact(_avro_normal_form(self.parsed, self.named, set()))
        if self.schema_type == PROTOBUF:
            return str(self.parsed.text(normalize=True))
        return json.dumps(self.obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    def can_read(self, writer: ParsedSchema) -> list[str]:
        """Reasons data written with ``writer`` cannot be read with this schema (empty: it can)."""
        if writer.schema_type != self.schema_type:
            return [f"SCHEMA_TYPE_CHANGED: {writer.schema_type} -> {self.schema_type}"]
        if self.schema_type == AVRO:
            return avro_compatibility.check(self.parsed, writer.parsed, self.named, writer.named)
        if self.schema_type == PROTOBUF:
            from zurau.schema_formats import protobuf_compatibility

            return protobuf_compatibility.check(self.parsed, writer.parsed)
        return json_compatibility.check(self.obj, writer.obj)


MAX_SCHEMA_DEPTH = 100
"""A schema nested deeper than this (JSON arrays/objects for AVRO and JSON, braces for PROTOBUF)
is refused with 42201 before it is parsed: about 50 nested records or JSON Schema objects, far
beyond real schemas, and shallow enough for every parser and checker here to recurse safely."""


def parse(
    schema_type: str, text: str, references: list[ParsedSchema], reference_names: Sequence[Reference] = ()
) -> ParsedSchema:
    """Parse ``text`` as ``schema_type`` with the already-parsed referenced schemas
    (``reference_names[i]`` names ``references[i]``: PROTOBUF imports files by that name).
    A schema nested deeper than :data:`MAX_SCHEMA_DEPTH`, or one a parser cannot descend
    (``RecursionError``), is an invalid schema (42201), never a server error."""
    if nesting_exceeds(text.encode("utf-8", "surrogatepass"), MAX_SCHEMA_DEPTH):
        raise invalid_schema(f"the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep")
    try:
        return _parse(schema_type, text, references, reference_names)
    except RecursionError:
        raise invalid_schema("the schema is nested too deeply to parse") from None


def _parse(
    schema_type: str, text: str, references: list[ParsedSchema], reference_names: Sequence[Reference]
) -> ParsedSchema:
    if schema_type == AVRO:
        return _parse_avro(text, references)
    if schema_type == JSON:
        return _parse_json(text)
    if schema_type == PROTOBUF:
        return _parse_protobuf(text, references, reference_names)
    raise RegistryError(422, 42201, f"Invalid schema type {schema_type!r}: this registry supports {', '.join(SUPPORTED_TYPES)}")


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _load_json(text: str) -> Any:
    try:
        return parse_json(text, MAX_SCHEMA_DEPTH)
    except BadInput as e:
        raise invalid_schema(f"{e.message}") from None


def _parse_avro(text: str, references: list[ParsedSchema]) -> ParsedSchema:
    import fastavro
    from fastavro.schema import SchemaParseException, UnknownType

    obj = _load_json(text)
    named: dict[str, Any] = {}
    for ref in references:
        if ref.schema_type != AVRO:
            raise invalid_schema("an AVRO schema can only reference AVRO schemas")
        named.update(ref.named)
    avro_spec_rules.check(obj, set(named))
    try:
        parsed = fastavro.parse_schema(obj, named_schemas=named, expand=False, _write_hint=False)
    except (SchemaParseException, UnknownType, ValueError, TypeError, KeyError, AttributeError) as e:
        raise invalid_schema(f"{type(e).__name__}: {e}") from e
    _check_avro_defaults(parsed, named)
    return ParsedSchema(AVRO, _compact(obj), obj, parsed, dict(named))


_DEFAULT_CHECK = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31,
    "long": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63,
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "double": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bytes": lambda v: isinstance(v, str),
    "string": lambda v: isinstance(v, str),
}


def _check_avro_defaults(schema: Any, named: dict[str, Any], seen: set[str] | None = None) -> None:
    """Field defaults must match the field's type (a union's default matches its first branch),
    as Confluent's parser (with default validation on) requires; an int or long default must
    fit its 32 or 64 bits."""
    seen = set() if seen is None else seen
    if isinstance(schema, list):
        for branch in schema:
            _check_avro_defaults(branch, named, seen)
        return
    if isinstance(schema, str):
        return
    if not isinstance(schema, dict):
        return
    t = schema.get("type")
    if t == "record":
        name = str(schema.get("name"))
        if name in seen:
            return
        seen.add(name)
        for f in schema.get("fields", ()):
            if "default" in f:
                ftype = f["type"]
                first = ftype[0] if isinstance(ftype, list) and ftype else ftype
                first = named.get(first, first) if isinstance(first, str) else first
                kind = first if isinstance(first, str) else first.get("type") if isinstance(first, dict) else None
                check = _DEFAULT_CHECK.get(kind) if isinstance(kind, str) else None
                if check is not None and not check(f["default"]):
                    raise invalid_schema(
                        f"Invalid default for field {f['name']}: {json.dumps(f['default'])} not a {_compact(ftype)}"
                    )
            _check_avro_defaults(f["type"], named, seen)
    elif t == "array":
        _check_avro_defaults(schema.get("items"), named, seen)
    elif t == "map":
        _check_avro_defaults(schema.get("values"), named, seen)


_AVRO_KEY_ORDER = ("type", "name", "namespace", "fields", "symbols", "items", "values", "size", "default",
                   "aliases", "order", "logicalType", "precision", "scale")


def _avro_normal_form(schema: Any, named: dict[str, Any], seen: set[str]) -> Any:
    if isinstance(schema, list):
        return [_avro_normal_form(b, named, seen) for b in schema]
    if isinstance(schema, str):
        return schema
    if not isinstance(schema, dict):
        return schema
    t = schema.get("type")
    if t in avro_compatibility.PRIMITIVES and set(schema) <= {"type"}:
        return t
    if t in ("record", "error", "enum", "fixed"):
        name = schema["name"]
        if name in seen:
            return name
        seen.add(name)
    out: dict[str, Any] = {}
    for key in _AVRO_KEY_ORDER:
        if key not in schema or key == "namespace":
            continue
        value = schema[key]
        if key == "fields":
            value = [
                {
                    k: (_avro_normal_form(f[k], named, seen) if k == "type" else sorted(f[k]) if k == "aliases" else f[k])
                    for k in ("name", "type", "default", "aliases", "order")
                    if k in f
                }
                for f in value
            ]
        elif key in ("items", "values", "type") and not (key == "type" and isinstance(value, str)):
            value = _avro_normal_form(value, named, seen)
        elif key == "aliases":
            value = sorted(value)
        out[key] = value
    return out


def _parse_json(text: str) -> ParsedSchema:
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    obj = _load_json(text)
    if not isinstance(obj, dict | bool):
        raise invalid_schema("a JSON schema must be an object or a boolean")
    try:
        validator_for(obj).check_schema(obj)
    except SchemaError as e:
        raise invalid_schema(f"{e.message}") from e
    return ParsedSchema(JSON, _compact(obj), obj)


def _parse_protobuf(text: str, references: list[ParsedSchema], names: Sequence[Reference]) -> ParsedSchema:
    from zurau.schema_formats.protobuf_schema import ProtoDependency, parse_protobuf

    deps = []
    for ref, parsed in zip(names, references, strict=True):
        if parsed.schema_type != PROTOBUF:
            raise invalid_schema("a PROTOBUF schema can only reference PROTOBUF schemas")
        deps.append(ProtoDependency(ref.name, ref.subject, ref.version, parsed.parsed))
    compiled = parse_protobuf(text, deps)
    return ParsedSchema(PROTOBUF, compiled.text(), None, compiled)
