"""Cross-check our schemas and codec against kio, an independent Kafka protocol implementation.

For every (api, version, kind) in :data:`zurau.protocol.schemas.ALL` that kio also knows, a
representative kio instance is built from kio's own class definition (so the test does not rely on
our schema to know what the message looks like), serialized by kio, decoded and re-encoded by our
codec, and the bytes must be identical. Decoded values are compared field by field with kio's.

Three instances are built per message: one with non-default, non-null values in every field
(including tagged fields, nested arrays of two elements), one with null in every field kio allows
to be null, and one holding kio's defaults wherever kio has one. For the last, the dict our codec
decoded must also encode to kio's bytes with the defaulted keys left out (our defaults agree with
Kafka's) and with them spelled out (a tagged field equal to its default is not written).

A separate round-trip test (our encode -> decode -> encode) covers every version, including those
kio lacks. A self-test mutates a schema and checks that the cross-check notices.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import uuid
from collections.abc import Iterator
from typing import Any, get_origin

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

from zurau.protocol import codec
from zurau.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UUID,
    ApiSchema,
    Array,
    Field,
    Struct,
    in_range,
)
from zurau.protocol.schemas import ALL

KINDS = ("request", "response")
VARIANTS = ("values", "nulls", "defaults")
ZERO_UUID = uuid.UUID(int=0)
TIME_TYPES = ("timedelta_i32", "timedelta_i64", "datetime_i64")
# Error codes kio can represent; cycled through so that no error code field is left at 0.
ERROR_CODES = [e for e in ErrorCode if e.value not in (0, -1)]


def _cases() -> Iterator[tuple[int, int, str]]:
    for key in sorted(ALL):
        schema = ALL[key]
        for version in range(schema.min_version, schema.max_version + 1):
            for kind in KINDS:
                yield key, version, kind


CASES = list(_cases())


def _case_id(case: tuple[int, int, str]) -> str:
    key, version, kind = case
    return f"{ALL[key].name}-v{version}-{kind}"


def _kio_class(key: int, version: int, kind: str) -> type | None:
    name = api_key_map.get(key)
    if name is None or version not in schema_name_map.get(name, {}):
        return None
    return (load_request_schema if kind == "request" else load_response_schema)(key, version)


# The cases kio can check (it lacks a few newer APIs and versions; our own round trip covers all).
KIO_CASES = [case for case in CASES if _kio_class(*case) is not None]


def _fields_on_wire(fields: tuple[Field, ...], version: int, flexible: bool) -> list[Field]:
    """Fields of a struct that exist in this version, in declaration order (as in Kafka's JSON)."""
    out = []
    for f in fields:
        if not in_range(version, f.version_range):
            continue
        if f.tag is not None and not (flexible and in_range(version, f.tagged_range)):
            continue  # a tagged-only field has no place on the wire of a non-flexible version
        out.append(f)
    return out


# --------------------------------------------------------------------------- kio instances


class _Counter:
    """Hands out distinct small numbers, so every field gets its own recognisable value."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def _kio_scalar(kafka_type: str, n: int) -> Any:
    if kafka_type == "int8":
        return 10 + n % 100
    if kafka_type in ("int16", "uint16"):
        return 1000 + n
    if kafka_type in ("int32", "uint32"):
        return 100_000 + n
    if kafka_type in ("int64", "uint64"):
        return 10_000_000_000 + n
    if kafka_type == "float64":
        return n + 0.25
    if kafka_type == "bool":
        return True
    if kafka_type == "string":
        return f"s{n}-é✓"  # non-ASCII: byte length differs from character length
    if kafka_type in ("bytes", "records"):
        return bytes(range(n % 7, n % 7 + 3 + n % 5))
    if kafka_type == "uuid":
        return uuid.UUID(int=(n << 64) | 0xABCDEF)
    if kafka_type == "error_code":
        return ERROR_CODES[n % len(ERROR_CODES)]
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=60_000 + n)
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(1_700_000_000 + n, tz=datetime.UTC)
    raise AssertionError(f"kio type {kafka_type!r} is not handled by this test")


def _kio_nullable(f: dataclasses.Field) -> bool:
    """Whether kio lets the field itself be None.

    kio's ``is_optional`` looks inside a tuple at its element type, and kio types every uuid as
    ``UUID | None`` (None is written as the zero uuid): BrokerRegistration's ``log_dirs:
    tuple[UUID | None, ...]`` is not a nullable array, yet ``is_optional`` says it is, and kio
    would then write a null array where Kafka never allows one.
    """
    if get_origin(f.type) is tuple:
        return False
    return is_optional(f)


def _build_kio(cls: type, variant: str, counter: _Counter) -> Any:
    kwargs = {}
    for f in dataclasses.fields(cls):
        fc = classify_field(f)
        kafka_type = f.metadata.get("kafka_type", "")
        if variant == "nulls" and _kio_nullable(f):
            kwargs[f.name] = None
        elif variant == "defaults" and f.default is not dataclasses.MISSING:
            kwargs[f.name] = f.default
        elif isinstance(fc, EntityTupleField):
            kwargs[f.name] = tuple(_build_kio(fc.type_, variant, counter) for _ in range(2))
        elif isinstance(fc, EntityField):
            kwargs[f.name] = _build_kio(fc.type_, variant, counter)
        elif isinstance(fc, PrimitiveTupleField):
            kwargs[f.name] = tuple(_kio_scalar(kafka_type, counter.next()) for _ in range(2))
        else:
            value = _kio_scalar(kafka_type, counter.next())
            if kafka_type == "bool" and f.default is True:
                value = False  # keep every field away from its default
            kwargs[f.name] = value
    return cls(**kwargs)


def _kio_bytes(obj: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(obj))(buf, obj)
    return buf.getvalue()


# --------------------------------------------------------------------------- value comparison


def _kio_to_plain(kafka_type: str, value: Any) -> Any:
    """Map a kio scalar to what our codec decodes the same bytes to."""
    if kafka_type == "uuid":
        return ZERO_UUID if value is None else value
    if kafka_type == "datetime_i64":
        return -1 if value is None else round(value.timestamp() * 1000)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return round(value.total_seconds() * 1000)
    if kafka_type == "error_code":
        return int(value.value)
    if kafka_type in ("bytes", "records") and value is not None:
        return bytes(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    return value


def _ours_plain(value: Any) -> Any:
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return value


def _names_match(ours: str, kio_name: str, kafka_type: str) -> bool:
    if ours == kio_name:
        return True
    # kio turns *Ms fields into timedelta/datetime values and drops the suffix.
    return kafka_type in TIME_TYPES and ours == kio_name + "_ms"


def _compare(
    kio_obj: Any, ours: dict, fields: tuple[Field, ...], version: int, flexible: bool, path: str
) -> None:
    assert isinstance(ours, dict), f"{path}: expected a struct, got {ours!r}"
    kio_fields = dataclasses.fields(type(kio_obj))
    wire = _fields_on_wire(fields, version, flexible)
    ours_names = [f.name for f in wire]
    kio_names = [f.name for f in kio_fields]
    assert len(wire) == len(kio_fields), f"{path}: field lists differ: ours {ours_names} vs kio {kio_names}"
    for of, kf in zip(wire, kio_fields, strict=True):
        here = f"{path}.{of.name}"
        kafka_type = kf.metadata.get("kafka_type", "")
        assert _names_match(of.name, kf.name, kafka_type), f"{here}: kio calls it {kf.name!r}"
        kio_tag = get_field_tag(kf)
        ours_tag = of.tag if of.tag is not None and flexible and in_range(version, of.tagged_range) else None
        assert ours_tag == kio_tag, f"{here}: tag {ours_tag} vs kio {kio_tag}"
        assert of.name in ours, f"{here}: missing from decoded dict"
        _compare_value(kf, getattr(kio_obj, kf.name), ours[of.name], of, version, flexible, here)


def _compare_value(kf: Any, kv: Any, ov: Any, of: Field, version: int, flexible: bool, path: str) -> None:
    fc = classify_field(kf)
    kafka_type = kf.metadata.get("kafka_type", "")
    if isinstance(fc, EntityTupleField):
        assert isinstance(of.type, Array) and isinstance(of.type.of, Struct), (
            f"{path}: kio has a struct array"
        )
        if kv is None:
            assert ov is None, f"{path}: kio null, ours {ov!r}"
            return
        assert ov is not None and len(ov) == len(kv), f"{path}: lengths differ ({ov!r} vs {kv!r})"
        for i, (k_item, o_item) in enumerate(zip(kv, ov, strict=True)):
            _compare(k_item, o_item, of.type.of.fields, version, flexible, f"{path}[{i}]")
    elif isinstance(fc, EntityField):
        assert isinstance(of.type, Struct), f"{path}: kio has a nested struct"
        if kv is None or ov is None:
            # Our codec leaves an absent tagged struct as None; kio uses the struct of defaults.
            absent_ok = ov is None and kv is not None and kv == kf.default
            assert absent_ok or (kv is None and ov is None), f"{path}: kio {kv!r} vs ours {ov!r}"
            return
        _compare(kv, ov, of.type.fields, version, flexible, path)
    elif isinstance(fc, PrimitiveTupleField):
        assert isinstance(of.type, Array) and not isinstance(of.type.of, Struct), (
            f"{path}: kio has a scalar array"
        )
        if kv is None:
            assert ov is None, f"{path}: kio null, ours {ov!r}"
            return
        assert [_kio_to_plain(kafka_type, x) for x in kv] == [_ours_plain(x) for x in ov], path
    else:
        assert isinstance(fc, PrimitiveField)
        assert not isinstance(of.type, Array | Struct), f"{path}: kio has a scalar"
        expected = _kio_to_plain(kafka_type, kv)
        got = _ours_plain(ov)
        if expected is None and get_field_tag(kf) is not None and got == "":
            pytest.fail(f"{path}: absent tagged null-default field decoded as '' instead of None")
        assert got == expected, f"{path}: kio {expected!r} vs ours {got!r}"


# --------------------------------------------------------------------------- the cross-check


def kio_cross_check(key: int, version: int, kind: str, variant: str, explicit_defaults: bool = False) -> None:
    cls = _kio_class(key, version, kind)
    assert cls is not None
    schema = ALL[key]
    flexible = schema.is_flexible(version)
    assert bool(cls.__flexible__) == flexible, f"flexible: ours {flexible}, kio {cls.__flexible__}"
    kio_obj = _build_kio(cls, variant, _Counter())
    data = _kio_bytes(kio_obj)
    decoded = codec.decode(key, version, kind, data)
    again = codec.encode(key, version, kind, decoded)
    assert again == data, f"re-encoded bytes differ:\n kio  {data.hex()}\n ours {again.hex()}"
    fields = schema.request if kind == "request" else schema.response
    _compare(kio_obj, decoded, fields, version, flexible, f"{schema.name}v{version}.{kind}")
    if variant == "defaults":
        # Leave out every field kio holds at its default: our defaults must give kio's bytes.
        _strip_defaulted(kio_obj, decoded, fields, version, flexible)
        sparse = codec.encode(key, version, kind, decoded)
        assert sparse == data, f"defaults differ:\n kio  {data.hex()}\n ours {sparse.hex()}"
    if explicit_defaults:
        # Spelling the defaults out must not change the bytes either: in particular a tagged
        # field (struct or scalar) equal to its default is left out, as Kafka does.
        _fill_defaults(kio_obj, decoded, fields, version, flexible)
        explicit = codec.encode(key, version, kind, decoded)
        assert explicit == data, f"explicit defaults written:\n kio  {data.hex()}\n ours {explicit.hex()}"


def _as_ours(kf: Any, value: Any, of: Field, version: int, flexible: bool) -> Any:
    """Convert a kio value of field ``kf`` to our representation of field ``of``."""
    fc = classify_field(kf)
    kafka_type = kf.metadata.get("kafka_type", "")
    if value is None:
        return _kio_to_plain(kafka_type, None) if isinstance(fc, PrimitiveField) else None
    if isinstance(fc, EntityTupleField):
        assert isinstance(of.type, Array) and isinstance(of.type.of, Struct)
        return [_entity_as_ours(v, of.type.of.fields, version, flexible) for v in value]
    if isinstance(fc, EntityField):
        assert isinstance(of.type, Struct)
        return _entity_as_ours(value, of.type.fields, version, flexible)
    if isinstance(fc, PrimitiveTupleField):
        return [_kio_to_plain(kafka_type, v) for v in value]
    return _kio_to_plain(kafka_type, value)


def _entity_as_ours(kio_obj: Any, fields: tuple[Field, ...], version: int, flexible: bool) -> dict:
    pairs = zip(_fields_on_wire(fields, version, flexible), dataclasses.fields(type(kio_obj)), strict=True)
    return {of.name: _as_ours(kf, getattr(kio_obj, kf.name), of, version, flexible) for of, kf in pairs}


def _fill_defaults(kio_obj: Any, ours: dict, fields: tuple[Field, ...], version: int, flexible: bool) -> None:
    for of, kf in zip(
        _fields_on_wire(fields, version, flexible), dataclasses.fields(type(kio_obj)), strict=True
    ):
        kv = getattr(kio_obj, kf.name)
        if kf.default is not dataclasses.MISSING:
            ours[of.name] = _as_ours(kf, kf.default, of, version, flexible)
            continue
        fc = classify_field(kf)
        if isinstance(fc, EntityTupleField) and kv is not None:
            assert isinstance(of.type, Array) and isinstance(of.type.of, Struct)
            for k_item, o_item in zip(kv, ours[of.name], strict=True):
                _fill_defaults(k_item, o_item, of.type.of.fields, version, flexible)
        elif isinstance(fc, EntityField) and kv is not None and ours.get(of.name) is not None:
            assert isinstance(of.type, Struct)
            _fill_defaults(kv, ours[of.name], of.type.fields, version, flexible)


def _strip_defaulted(
    kio_obj: Any, ours: dict, fields: tuple[Field, ...], version: int, flexible: bool
) -> None:
    for of, kf in zip(
        _fields_on_wire(fields, version, flexible), dataclasses.fields(type(kio_obj)), strict=True
    ):
        kv = getattr(kio_obj, kf.name)
        if kf.default is not dataclasses.MISSING:
            del ours[of.name]
            continue
        fc = classify_field(kf)
        if isinstance(fc, EntityTupleField) and kv is not None:
            assert isinstance(of.type, Array) and isinstance(of.type.of, Struct)
            for k_item, o_item in zip(kv, ours[of.name], strict=True):
                _strip_defaulted(k_item, o_item, of.type.of.fields, version, flexible)
        elif isinstance(fc, EntityField) and kv is not None and ours[of.name] is not None:
            assert isinstance(of.type, Struct)
            _strip_defaulted(kv, ours[of.name], of.type.fields, version, flexible)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", KIO_CASES, ids=_case_id)
def test_kio_bytes_roundtrip_through_our_codec(case: tuple[int, int, str], variant: str) -> None:
    key, version, kind = case
    kio_cross_check(key, version, kind, variant)


@pytest.mark.parametrize("case", KIO_CASES, ids=_case_id)
def test_fields_equal_to_their_default_are_encoded_like_kafka(case: tuple[int, int, str]) -> None:
    """A dict that spells out default values (e.g. a tagged struct of -1s) encodes as kio does."""
    key, version, kind = case
    kio_cross_check(key, version, kind, "defaults", explicit_defaults=True)


def test_every_api_is_known_to_kio() -> None:
    """Guard against silently skipping everything (e.g. kio renames its index)."""
    missing = [ALL[k].name for k in ALL if k not in api_key_map]
    assert not missing, f"kio does not know {missing}"


@pytest.mark.parametrize("key", sorted(ALL), ids=lambda k: ALL[k].name)
def test_version_ranges_agree_with_kio(key: int) -> None:
    """Our served range should not exceed what kio (generated from Kafka's JSON) knows."""
    kio_versions = set(schema_name_map.get(api_key_map.get(key, ""), {}))
    ours = set(range(ALL[key].min_version, ALL[key].max_version + 1))
    assert ours <= kio_versions or not kio_versions, f"kio lacks {sorted(ours - kio_versions)}"


# --------------------------------------------------------------------------- pure round trip


def _our_scalar(t: str, n: int) -> Any:
    if t == INT8:
        return 10 + n % 100
    if t in (INT16, UINT16):
        return 1000 + n
    if t == INT32:
        return 100_000 + n
    if t == INT64:
        return 10_000_000_000 + n
    if t == FLOAT64:
        return n + 0.5
    if t == BOOL:
        return True
    if t == STRING:
        return f"x{n}-ü"
    if t in (BYTES, RECORDS):
        return bytes(range(n % 9, n % 9 + 4))
    if t == UUID:
        return uuid.UUID(int=(n << 80) | 0x1234)
    raise AssertionError(f"unknown type {t!r}")


def _our_value(f: Field, version: int, variant: str, counter: _Counter) -> Any:
    if variant == "nulls" and in_range(version, f.nullable_range):
        return None
    t = f.type
    if isinstance(t, Array):
        if isinstance(t.of, Struct):
            return [_our_struct(t.of.fields, version, variant, counter) for _ in range(2)]
        return [_our_scalar(t.of, counter.next()) for _ in range(2)]
    if isinstance(t, Struct):
        return _our_struct(t.fields, version, variant, counter)
    value = _our_scalar(t, counter.next())
    if t == BOOL and f.default is True:
        value = False
    return value


def _our_struct(fields: tuple[Field, ...], version: int, variant: str, counter: _Counter) -> dict:
    return {
        f.name: _our_value(f, version, variant, counter) for f in fields if in_range(version, f.version_range)
    }


def _assert_subset(original: Any, decoded: Any, path: str) -> None:
    if isinstance(original, dict):
        assert isinstance(decoded, dict), path
        for name, value in original.items():
            assert name in decoded, f"{path}.{name} missing after decode"
            _assert_subset(value, decoded[name], f"{path}.{name}")
    elif isinstance(original, list):
        assert isinstance(decoded, list) and len(decoded) == len(original), path
        for i, (a, b) in enumerate(zip(original, decoded, strict=True)):
            _assert_subset(a, b, f"{path}[{i}]")
    else:
        assert _ours_plain(decoded) == original, f"{path}: sent {original!r}, got {decoded!r}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_our_roundtrip(case: tuple[int, int, str], variant: str) -> None:
    key, version, kind = case
    schema = ALL[key]
    fields = schema.request if kind == "request" else schema.response
    flexible = schema.is_flexible(version)
    obj = {
        f.name: _our_value(f, version, variant, _Counter())
        for f in fields
        if in_range(version, f.version_range)
        and (f.tag is None or (flexible and in_range(version, f.tagged_range)))
    }
    data = codec.encode(key, version, kind, obj)
    decoded = codec.decode(key, version, kind, data)
    _assert_subset(obj, decoded, f"{schema.name}v{version}.{kind}")
    assert codec.encode(key, version, kind, decoded) == data
    # Every schema field is in the decoded dict, whether or not this version has it.
    assert {f.name for f in fields} <= decoded.keys()


# --------------------------------------------------------------------------- self-test


def _with_field_replaced(schema: ApiSchema, kind: str, name: str, **changes: Any) -> ApiSchema:
    fields = schema.request if kind == "request" else schema.response
    new = tuple(dataclasses.replace(f, **changes) if f.name == name else f for f in fields)
    assert new != fields, f"{schema.name} {kind} has no field {name}"
    return dataclasses.replace(schema, **{kind: new})


def _with_field_dropped(schema: ApiSchema, kind: str, name: str) -> ApiSchema:
    fields = schema.request if kind == "request" else schema.response
    new = tuple(f for f in fields if f.name != name)
    assert len(new) == len(fields) - 1
    return dataclasses.replace(schema, **{kind: new})


MUTATIONS = {
    "dropped-field": lambda s: _with_field_dropped(s, "response", "throttle_time_ms"),
    "wrong-type": lambda s: _with_field_replaced(s, "response", "throttle_time_ms", type=INT64),
    "wrong-versions": lambda s: _with_field_replaced(s, "response", "throttle_time_ms", versions="11+"),
    "lost-tag": lambda s: _with_field_replaced(s, "response", "node_endpoints", tag=None, tagged=None),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_cross_check_detects_a_wrong_schema(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cross-check must fail when a schema is wrong (here: Produce v10 response)."""
    key, version = 0, 10
    kio_cross_check(key, version, "response", "values")  # sane before the mutation
    monkeypatch.setitem(ALL, key, MUTATIONS[mutation](ALL[key]))
    compiled = getattr(codec, "_compiled", None)
    if compiled is not None:
        compiled.cache_clear()
        monkeypatch.setattr(codec, "_compiled", compiled)  # cleared again on teardown below
    try:
        with pytest.raises((AssertionError, ValueError, KeyError)):
            kio_cross_check(key, version, "response", "values")
    finally:
        monkeypatch.undo()
        if compiled is not None:
            compiled.cache_clear()
