"""Compile :mod:`zurau.protocol.schema` definitions into fast encode/decode functions.

For each ``(api_key, version, kind)`` the schema's fields that exist in that version are turned
into a tree of closures built on ``struct`` (compiled once, cached). Decoding returns plain dicts;
records fields decode to ``memoryview`` slices of the input (no copy). Encoding appends to a
``bytearray``; a records value that is not a bytes-like object (e.g. a file region for sendfile)
is emitted as a separate piece by :func:`encode_pieces`, so it is never copied.

Invariants:
* A decoded dict holds every field of the schema, present in that version or not (absent ones
  take their default), so handlers can read any key regardless of version.
* Tagged fields are written only when their value differs from the default (Kafka does the same;
  librdkafka < 2.2 misreads some tagged fields).
* Unknown tags are skipped on decode (KIP-482).
* Consecutive fixed-width fields of a struct (int8 ... int64, uint16, float64) are read and
  written with one precompiled ``struct.Struct`` (one call instead of one per field).
* An element of an array of structs may be given *pre-encoded*: a ``bytes`` object holding that
  element's exact encoding in this version, appended as is. The Fetch handler answers idle
  partitions this way (:mod:`zurau.replication.idle_fetch`); every other caller passes dicts.

Strict mode (:func:`set_strict`, or ``ZURAU_STRICT_CODEC=1`` in the environment when this module
is imported) makes encoding reject a dict holding a key that is no field of its struct in any
version -- a misspelt key would otherwise be silently replaced by the field's default. The check
is compiled into the encoders, so with strict mode off (the default) encoding does no extra work;
the test suite turns it on (``tests/conftest.py``). Switching clears the compiled-codec caches;
encoders a caller keeps from :func:`compile_struct` keep the mode they were compiled with.
"""

from __future__ import annotations

import copy
import os
import struct
import uuid
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal

from zurau.protocol.primitives import (
    F64,
    I8,
    I16,
    I32,
    I64,
    U16,
    DecodeError,
    read_uvarint,
    write_uvarint,
)
from zurau.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    NULL,
    RECORDS,
    STRING,
    UINT16,
    UUID,
    ApiSchema,
    Array,
    DataSchema,
    Field,
    Struct,
    in_range,
)
from zurau.protocol.schemas import ALL

Kind = Literal["request", "response"]
Decoder = Callable[[memoryview, int], tuple[Any, int]]
Encoder = Callable[[bytearray, Any, list], None]

ZERO_UUID = uuid.UUID(int=0)

__all__ = [
    "DecodeError",
    "UnknownFieldError",
    "compile_struct",
    "decode",
    "decode_data",
    "encode",
    "encode_data",
    "encode_pieces",
    "is_strict",
    "schema_for",
    "set_strict",
]


class UnknownFieldError(ValueError):
    """Strict mode: a dict being encoded holds a key that is no field of its struct."""


_strict = os.environ.get("ZURAU_STRICT_CODEC", "").strip().lower() not in ("", "0", "false", "no", "off")


def set_strict(on: bool) -> None:
    """Turn strict encoding on or off (clears the compiled-codec caches)."""
    global _strict
    if bool(on) != _strict:
        _strict = bool(on)
        _compiled.cache_clear()
        _compiled_data.cache_clear()


def is_strict() -> bool:
    return _strict


def schema_for(api_key: int) -> ApiSchema:
    try:
        return ALL[api_key]
    except KeyError:
        raise KeyError(f"no schema for api key {api_key}") from None


# --------------------------------------------------------------------------- scalars

_FIXED = {INT8: I8, INT16: I16, INT32: I32, INT64: I64, UINT16: U16, FLOAT64: F64}


def _fixed_codec(st: Any, kind: str) -> tuple[Decoder, Encoder]:
    size = st.size
    unpack_from = st.unpack_from
    pack = st.pack

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        return unpack_from(buf, pos)[0], pos + size

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        out += pack(v)

    return dec, enc


def _bool_codec() -> tuple[Decoder, Encoder]:
    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        return buf[pos] != 0, pos + 1

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        out.append(1 if v else 0)

    return dec, enc


def _uuid_codec() -> tuple[Decoder, Encoder]:
    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        end = pos + 16
        if end > len(buf):
            raise DecodeError("truncated uuid")
        return uuid.UUID(bytes=bytes(buf[pos:end])), end

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        if v is None:
            v = ZERO_UUID
        out += v.bytes if isinstance(v, uuid.UUID) else bytes(v)

    return dec, enc


def _length_reader(flexible: bool, wide: bool) -> Callable[[memoryview, int], tuple[int, int]]:
    """Read a length; returns -1 for null. ``wide`` selects int32 (bytes/arrays) over int16."""
    if flexible:

        def read_len(buf: memoryview, pos: int) -> tuple[int, int]:
            n, pos = read_uvarint(buf, pos)
            return n - 1, pos

        return read_len
    st = I32 if wide else I16
    size = st.size
    unpack_from = st.unpack_from

    def read_len_fixed(buf: memoryview, pos: int) -> tuple[int, int]:
        return unpack_from(buf, pos)[0], pos + size

    return read_len_fixed


def _length_writer(flexible: bool, wide: bool) -> Callable[[bytearray, int], None]:
    """Write a length; -1 writes null."""
    if flexible:

        def write_len(out: bytearray, n: int) -> None:
            write_uvarint(out, n + 1)

        return write_len
    pack = (I32 if wide else I16).pack

    def write_len_fixed(out: bytearray, n: int) -> None:
        out += pack(n)

    return write_len_fixed


def _string_codec(flexible: bool, nullable: bool, name: str) -> tuple[Decoder, Encoder]:
    read_len = _length_reader(flexible, wide=False)
    write_len = _length_writer(flexible, wide=False)

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            if not nullable:
                raise DecodeError(f"null value for non-nullable string field {name}")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise DecodeError(f"truncated string field {name}")
        try:
            return str(buf[pos:end], "utf-8"), end
        except UnicodeDecodeError:
            raise DecodeError(f"string field {name} is not valid UTF-8") from None

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"field {name} is not nullable in this version")
            write_len(out, -1)
            return
        data = v.encode("utf-8")
        write_len(out, len(data))
        out += data

    return dec, enc


def _bytes_codec(flexible: bool, nullable: bool, name: str, records: bool) -> tuple[Decoder, Encoder]:
    read_len = _length_reader(flexible, wide=True)
    write_len = _length_writer(flexible, wide=True)

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            if not nullable:
                raise DecodeError(f"null value for non-nullable field {name}")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise DecodeError(f"truncated bytes field {name}")
        return (buf[pos:end] if records else bytes(buf[pos:end])), end

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"field {name} is not nullable in this version")
            write_len(out, -1)
            return
        write_len(out, len(v))
        if records and not isinstance(v, (bytes, bytearray, memoryview)):
            # A region to be sent without copying: split the output around it.
            pieces.append(bytes(out))
            out.clear()
            pieces.append(v)
        else:
            out += v

    return dec, enc


# --------------------------------------------------------------------------- fields, structs


def _zero_default(f: Field, version: int) -> Any:
    t = f.type
    if f.default is NULL:
        return None
    if f.default is not None:
        if t == UUID and isinstance(f.default, str):
            return uuid.UUID(f.default)
        return f.default
    if in_range(version, f.nullable_range):
        return None
    if isinstance(t, Array):
        return []
    if isinstance(t, Struct):
        return {sf.name: _zero_default(sf, version) for sf in t.fields}
    if t in (INT8, INT16, INT32, INT64, UINT16):
        return 0
    if t == FLOAT64:
        return 0.0
    if t == BOOL:
        return False
    if t == STRING:
        return ""
    if t in (BYTES, RECORDS):
        return b""
    if t == UUID:
        return ZERO_UUID
    raise TypeError(f"unknown type {t!r} for field {f.name}")


def _type_codec(
    t: Any, version: int, flexible: bool, nullable: bool, name: str, path: str = ""
) -> tuple[Decoder, Encoder]:
    if isinstance(t, Array):
        return _array_codec(t, version, flexible, nullable, name, path)
    if isinstance(t, Struct):
        return _nested_struct_codec(t, version, flexible, nullable, name, path)
    if t in _FIXED:
        return _fixed_codec(_FIXED[t], t)
    if t == BOOL:
        return _bool_codec()
    if t == UUID:
        return _uuid_codec()
    if t == STRING:
        return _string_codec(flexible, nullable, name)
    if t == BYTES:
        return _bytes_codec(flexible, nullable, name, records=False)
    if t == RECORDS:
        return _bytes_codec(flexible, nullable, name, records=True)
    raise TypeError(f"unknown type {t!r} for field {name}")


def _array_codec(
    t: Array, version: int, flexible: bool, nullable: bool, name: str, path: str = ""
) -> tuple[Decoder, Encoder]:
    el_dec, el_enc = _type_codec(t.of, version, flexible, False, name + "[]", path + "[]")
    read_len = _length_reader(flexible, wide=True)
    write_len = _length_writer(flexible, wide=True)

    fixed = _FIXED_LAYOUTS.get(el_dec)

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            if not nullable:
                raise DecodeError(f"null value for non-nullable array {name}")
            return None, pos
        if n > len(buf) - pos:  # every element takes at least one byte
            raise DecodeError(f"array {name} claims {n} elements, more than the bytes left")
        if fixed is not None and n > 1:
            items_fast = _decode_fixed_array(fixed, buf, pos, n)
            if items_fast is not None:
                return items_fast
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            v, pos = el_dec(buf, pos)
            append(v)
        return items, pos

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"array {name} is not nullable in this version")
            write_len(out, -1)
            return
        write_len(out, len(v))
        for item in v:
            el_enc(out, item, pieces)

    if isinstance(t.of, Struct):

        def enc_structs(out: bytearray, v: Any, pieces: list) -> None:
            """As ``enc``; a ``bytes`` element is a pre-encoded struct, appended as is."""
            if v is None:
                if not nullable:
                    raise ValueError(f"array {name} is not nullable in this version")
                write_len(out, -1)
                return
            write_len(out, len(v))
            for item in v:
                if type(item) is bytes:
                    out += item
                else:
                    el_enc(out, item, pieces)

        return dec, enc_structs
    return dec, enc


def _decode_fixed_array(
    fixed: tuple[struct.Struct, Callable[[Any, Callable[[Any], None]], bool]],
    buf: memoryview,
    pos: int,
    n: int,
) -> tuple[list[Any], int] | None:
    """``n`` elements of a struct of fixed-width fields with one ``iter_unpack``; None (decode
    them one by one instead) when the bytes run out or an element carries tagged fields."""
    layout, build = fixed
    end = pos + n * layout.size
    if end > len(buf):
        return None
    items: list[Any] = []
    if not build(layout.iter_unpack(buf[pos:end]), items.append):
        return None
    return items, end


def _nested_struct_codec(
    t: Struct, version: int, flexible: bool, nullable: bool, name: str, path: str = ""
) -> tuple[Decoder, Encoder]:
    dec_s, enc_s = _struct_codec(t.fields, version, flexible, path or name)
    if not nullable:
        return dec_s, enc_s

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        marker = I8.unpack_from(buf, pos)[0]
        if marker < 0:
            return None, pos + 1
        return dec_s(buf, pos + 1)

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        if v is None:
            out += b"\xff"
            return
        out += b"\x01"
        enc_s(out, v, pieces)

    return dec, enc


def _struct_codec(
    fields: tuple[Field, ...], version: int, flexible: bool, path: str = "struct"
) -> tuple[Decoder, Encoder]:
    """Decode/encode functions of one struct in one version; ``path`` names it in errors."""
    regular: list[tuple[str, Decoder, Encoder, Any, Any]] = []
    tagged: dict[int, tuple[str, Decoder, Encoder, Any, bytes]] = {}
    template: dict[str, Any] = {}
    mutable_defaults: list[tuple[str, Any]] = []  # lists/dicts: a fresh copy per decoded message
    for f in fields:
        default = _zero_default(f, version)
        present = in_range(version, f.version_range)
        is_tagged = f.tag is not None and flexible and in_range(version, f.tagged_range)
        if not present or is_tagged:
            if isinstance(default, (list, dict)):
                mutable_defaults.append((f.name, default))
            else:
                template[f.name] = default
        if not present:
            continue
        nullable = in_range(version, f.nullable_range)
        d, e = _type_codec(f.type, version, flexible, nullable, f.name, f"{path}.{f.name}")
        if is_tagged:
            assert f.tag is not None
            wire_default = bytearray()
            e(wire_default, default, [])
            tagged[f.tag] = (f.name, d, e, default, bytes(wire_default))
        elif f.tag is None:
            fixed = _FIXED.get(f.type) if isinstance(f.type, str) else None
            regular.append((f.name, d, e, default, fixed))
        # A tagged field in a non-flexible version does not exist on the wire.

    regular_t = _fuse_fixed_runs(regular)
    fresh_defaults = tuple((n, _fresh_copier(default)) for n, default in mutable_defaults)
    tagged_sorted = tuple(sorted(tagged.items()))

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        out = dict(template)
        for n, fresh in fresh_defaults:
            out[n] = fresh()
        for name, d, _e, _default in regular_t:
            if name is None:  # a run of fixed-width fields: d is (names, Struct)
                names, st = d
                out.update(zip(names, st.unpack_from(buf, pos), strict=True))
                pos += st.size
            else:
                out[name], pos = d(buf, pos)
        if flexible:
            count, pos = read_uvarint(buf, pos)
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = pos + size
                if end > len(buf):
                    raise DecodeError("truncated tagged field")
                known = tagged.get(tag)
                if known is not None:
                    out[known[0]], _ = known[1](buf[:end], pos)
                pos = end
        return out, pos

    def enc(out: bytearray, v: Any, pieces: list) -> None:
        get = v.get
        for name, _d, e, default in regular_t:
            if name is None:  # a run of fixed-width fields: e is (names, Struct), default the defaults
                names, st = e
                out += st.pack(*map(get, names, default))
            else:
                e(out, get(name, default), pieces)
        if flexible:
            if not tagged_sorted:
                out.append(0)
                return
            chunks = []
            for tag, (name, _d, e, default, wire_default) in tagged_sorted:
                val = get(name, default)
                if val is default:
                    continue
                tmp = bytearray()
                e(tmp, val, pieces)
                if tmp == wire_default:
                    continue
                chunks.append((tag, tmp))
            write_uvarint(out, len(chunks))
            for tag, tmp in chunks:
                write_uvarint(out, tag)
                write_uvarint(out, len(tmp))
                out += tmp

    if not mutable_defaults and len(regular_t) == 1 and regular_t[0][0] is None:
        # Every regular field fixed-width: an array of these may be read with one iter_unpack.
        names, st = regular_t[0][1]
        layout = struct.Struct(st.format + ("B" if flexible else ""))  # + an empty tag buffer
        _FIXED_LAYOUTS[dec] = (layout, _fixed_rows_builder(names, template, flexible))
    if _strict:
        return dec, _strict_encoder(enc, fields, path)
    return dec, enc


#: Struct decoders whose regular fields are all fixed-width (and no list/dict defaults):
#: decoder -> (Struct of one element, with its tag buffer's count byte when flexible; the rows
#: builder of :func:`_fixed_rows_builder`).
_FIXED_LAYOUTS: dict[Any, tuple[struct.Struct, Callable[[Any, Callable[[Any], None]], bool]]] = {}


def _fixed_rows_builder(
    names: tuple[str, ...], template: dict[str, Any], flexible: bool
) -> Callable[[Any, Callable[[Any], None]], bool]:
    """``build(rows, append)``: appends one dict per unpacked row (the fields by name, plus the
    other fields' immutable defaults from ``template``); False as soon as a flexible row's tag
    count is not 0 (the caller then decodes element by element). Generated as a dict display,
    the fastest way CPython builds a dict; the names are schema field names (identifiers)."""
    if not all(n.isidentifier() for n in (*names, *template)):
        raise ValueError(f"field names must be identifiers: {names}, {list(template)}")
    row = [f"v{i}" for i in range(len(names))]
    if flexible:
        row.append("tags")
    entries = [f"{n!r}: v{i}" for i, n in enumerate(names)]
    entries += [f"{k!r}: d{j}" for j, k in enumerate(template)]
    defaults = "".join(f", d{j}=d{j}" for j in range(len(template)))
    lines = [
        f"def build(rows, append{defaults}):",
        f"    for {', '.join(row)}, in rows:",
    ]
    if flexible:
        lines.append("        if tags:")
        lines.append("            return False")
    lines.append(f"        append({{{', '.join(entries)}}})")
    lines.append("    return True")
    namespace: dict[str, Any] = {f"d{j}": v for j, v in enumerate(template.values())}
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from schema field names only
    build: Callable[[Any, Callable[[Any], None]], bool] = namespace["build"]
    return build


def _fresh_copier(default: Any) -> Callable[[], Any]:
    """A function giving a fresh copy of a list/dict default per decoded message: a shallow copy
    when it holds only immutable values (the usual ``[]`` or a struct of scalars), else a deep one."""
    values = default.values() if isinstance(default, dict) else default
    if all(not isinstance(v, (list, dict, bytearray, set)) for v in values):
        return default.copy
    return lambda: copy.deepcopy(default)


def _fuse_fixed_runs(
    regular: list[tuple[str, Decoder, Encoder, Any, Any]],
) -> tuple[tuple[Any, Any, Any, Any], ...]:
    """The regular fields as (name, decoder, encoder, default), where each run of two or more
    consecutive fixed-width fields (``fixed``: their ``struct.Struct``, else None) becomes one
    entry (None, (names, Struct), (names, Struct), defaults), read and written with one call."""
    out: list[tuple[Any, Any, Any, Any]] = []
    run: list[tuple[str, Decoder, Encoder, Any, Any]] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0][:4])
        elif run:
            names = tuple(r[0] for r in run)
            st = struct.Struct(">" + "".join(r[4].format.lstrip(">") for r in run))
            out.append((None, (names, st), (names, st), tuple(r[3] for r in run)))
        run.clear()

    for field in regular:
        if field[4] is not None:
            run.append(field)
            continue
        flush()
        out.append(field[:4])
    flush()
    return tuple(out)


def _strict_encoder(enc: Encoder, fields: tuple[Field, ...], path: str) -> Encoder:
    """``enc`` preceded by a check that every key of the dict is a field of the struct."""
    known = frozenset(f.name for f in fields)
    issuperset = known.issuperset

    def strict_enc(out: bytearray, v: Any, pieces: list) -> None:
        if not issuperset(v):
            unknown = sorted(str(k) for k in v if k not in known)
            raise UnknownFieldError(
                f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                f"(not a field in any version; fields: {', '.join(sorted(known))})"
            )
        enc(out, v, pieces)

    return strict_enc


@cache
def _compiled(api_key: int, version: int, kind: Kind) -> tuple[Decoder, Encoder]:
    schema = schema_for(api_key)
    if not schema.min_version <= version <= schema.max_version:
        raise KeyError(f"{schema.name} v{version} is not supported")
    fields = schema.request if kind == "request" else schema.response
    path = f"{schema.name}{kind.capitalize()} v{version}"  # FetchRequest v12
    return _struct_codec(fields, version, schema.is_flexible(version), path)


@cache
def _compiled_data(schema: DataSchema, version: int) -> tuple[Decoder, Encoder]:
    if not schema.min_version <= version <= schema.max_version:
        raise KeyError(f"{schema.name} v{version} is not supported")
    return _struct_codec(schema.fields, version, schema.is_flexible(version), f"{schema.name} v{version}")


def decode(api_key: int, version: int, kind: Kind, data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode a request or response body. Raises DecodeError on malformed input.

    Bytes after the body are ignored, as Kafka does for forward compatibility.
    """
    dec, _ = _compiled(api_key, version, kind)
    mv = data if isinstance(data, memoryview) else memoryview(data)
    try:
        obj, _pos = dec(mv, 0)
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, struct.error) as e:
        raise DecodeError(f"malformed body: {e}") from None
    return obj


def encode_pieces(api_key: int, version: int, kind: Kind, obj: dict[str, Any]) -> list[Any]:
    """Encode a body to a list of buffers (records regions stay separate pieces)."""
    _, enc = _compiled(api_key, version, kind)
    out = bytearray()
    pieces: list[Any] = []
    enc(out, obj, pieces)
    if out or not pieces:
        pieces.append(out)
    return pieces


def encode(api_key: int, version: int, kind: Kind, obj: dict[str, Any]) -> bytes:
    """Encode a request or response body to bytes."""
    pieces = encode_pieces(api_key, version, kind, obj)
    if len(pieces) == 1:
        return bytes(pieces[0])
    return b"".join(bytes(p) for p in pieces)


def decode_data(
    schema: DataSchema, version: int, data: bytes | bytearray | memoryview, pos: int = 0
) -> tuple[dict[str, Any], int]:
    """Decode a :class:`DataSchema` struct at ``data[pos:]``; returns it and the position after it.

    Raises DecodeError on malformed input (and KeyError for a version the schema lacks).
    """
    dec, _ = _compiled_data(schema, version)
    mv = data if isinstance(data, memoryview) else memoryview(data)
    try:
        obj, end = dec(mv, pos)
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, struct.error) as e:
        raise DecodeError(f"malformed {schema.name}: {e}") from None
    result: dict[str, Any] = obj
    return result, end


def encode_data(
    schema: DataSchema, version: int, obj: Mapping[str, Any], out: bytearray | None = None
) -> bytearray:
    """Append the encoding of a :class:`DataSchema` struct to ``out`` (a new bytearray if None)."""
    _, enc = _compiled_data(schema, version)
    if out is None:
        out = bytearray()
    enc(out, obj, [])
    return out


def compile_struct(
    fields: tuple[Field, ...], version: int, flexible: bool, name: str = "struct"
) -> tuple[Decoder, Encoder]:
    """Decode/encode functions for a standalone struct that is not an API body.

    Used for the key and value records coordinators keep in internal topics (``__consumer_offsets``),
    which Kafka also defines in its message-schema language. ``decode(memoryview, pos)`` returns
    ``(dict, next_pos)``; ``encode(bytearray, dict, pieces)`` appends to the bytearray. ``name``
    appears in error messages. The functions are compiled in the strict mode current at the call.
    """
    return _struct_codec(fields, version, flexible, name)
