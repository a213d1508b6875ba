"""PostgreSQL column types -> Connect schemas and values, as Debezium's PostgreSQL connector maps them.

Values arrive in PostgreSQL's text output format, from pgoutput's tuples and from snapshot
queries alike (the snapshot asks for text too), so one converter per column serves both.
:func:`column_mapping` returns the column's Connect :class:`~zurau.connect.data.Schema` and a
function from the text form to the Connect value.

Mapping (Debezium's defaults, ``time.precision.mode=adaptive``)::

    bool                  boolean
    int2 / int4 / int8    int16 / int32 / int64        oid: int64
    float4 / float8       float32 / float64            (NaN and infinities as floats)
    numeric(p, s)         precise: bytes org.apache.kafka.connect.data.Decimal
                                   {scale: s, connect.decimal.precision: p}
                          numeric without precision: struct io.debezium.data.VariableScaleDecimal
                                   {scale int32, value bytes}
                          string: string (PostgreSQL's text);  double: float64
    money                 like numeric(19, 2) (the currency symbol and separators dropped)
    text, varchar, bpchar, name, char, citext, inet, cidr, macaddr, tsvector, ... and
    any type not listed    string (PostgreSQL's text form)
    bytea                 bytes (binary.handling.mode=base64|base64-url-safe|hex: string)
    date                  int32 io.debezium.time.Date (days since 1970-01-01)
    time(p)               p <= 3: int32 io.debezium.time.Time (ms); else int64 io.debezium.time.MicroTime (µs)
    timestamp(p)          p <= 3: int64 io.debezium.time.Timestamp (ms); else int64 io.debezium.time.MicroTimestamp (µs)
    timestamptz(p)        string io.debezium.time.ZonedTimestamp (ISO-8601 in UTC with p fraction digits,
                          6 by default: ``2024-01-02T03:04:05.500000Z``; none for p = 0)
    timetz                string io.debezium.time.ZonedTime (``03:04:05.5Z``)
    interval              int64 io.debezium.time.MicroDuration (a month counted as 30.4375 days)
    uuid                  string io.debezium.data.Uuid
    json / jsonb          string io.debezium.data.Json;  xml: string io.debezium.data.Xml
    enum types            string io.debezium.data.Enum {allowed: the labels, comma separated}
    bit(1)                boolean
    arrays (1-D)          array of the element's schema (optional elements)
    domains               as their base type

``time.precision.mode=adaptive_time_microseconds`` maps every ``time`` to MicroTime;
``connect`` maps date/time/timestamp to Connect's own Date/Time/Timestamp (millisecond precision).
Nullable columns get optional schemas; a column's DEFAULT becomes its schema's default as Debezium
reads it (:func:`with_default`: literals, and a fixed stand-in such as 0 or the epoch for computed
defaults like ``nextval(...)`` or ``now()``). Infinite dates and timestamps become the extreme values of
their Connect type, as Debezium does.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zurau.connect.data import (
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)

Converter = Callable[[str], Any]

DECIMAL_PRECISION_PARAMETER = "connect.decimal.precision"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
DEBEZIUM_DATE = "io.debezium.time.Date"
DEBEZIUM_TIME = "io.debezium.time.Time"
DEBEZIUM_MICRO_TIME = "io.debezium.time.MicroTime"
DEBEZIUM_TIMESTAMP = "io.debezium.time.Timestamp"
DEBEZIUM_MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
DEBEZIUM_ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
DEBEZIUM_ZONED_TIME = "io.debezium.time.ZonedTime"
DEBEZIUM_MICRO_DURATION = "io.debezium.time.MicroDuration"
DEBEZIUM_UUID = "io.debezium.data.Uuid"
DEBEZIUM_JSON = "io.debezium.data.Json"
DEBEZIUM_XML = "io.debezium.data.Xml"
DEBEZIUM_ENUM = "io.debezium.data.Enum"

#: Names of the built-in types by oid, for columns the catalog did not describe.
BUILTIN_TYPE_NAMES: dict[int, str] = {
    16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 23: "int4", 25: "text",
    26: "oid", 114: "json", 142: "xml", 650: "cidr", 700: "float4", 701: "float8", 790: "money",
    829: "macaddr", 869: "inet", 1042: "bpchar", 1043: "varchar", 1082: "date", 1083: "time",
    1114: "timestamp", 1184: "timestamptz", 1186: "interval", 1266: "timetz", 1560: "bit", 1562: "varbit",
    1700: "numeric", 2950: "uuid", 3802: "jsonb",
    1000: "_bool", 1001: "_bytea", 1005: "_int2", 1007: "_int4", 1009: "_text", 1014: "_bpchar",
    1015: "_varchar", 1016: "_int8", 1021: "_float4", 1022: "_float8", 1115: "_timestamp", 1182: "_date",
    1183: "_time", 1185: "_timestamptz", 1231: "_numeric", 2951: "_uuid", 199: "_json", 3807: "_jsonb",
}


@dataclass(frozen=True)
class PgType:
    """A column's type as the catalog describes it: ``name`` is ``pg_type.typname`` (``int4``,
    ``_int4`` for its array), ``kind`` is ``typtype`` (``b`` base, ``e`` enum, ``d`` domain, ...),
    ``modifier`` the column's ``atttypmod`` (-1: none)."""

    oid: int
    name: str
    modifier: int = -1
    kind: str = "b"
    element: PgType | None = None
    enum_values: tuple[str, ...] = ()

    @classmethod
    def builtin(cls, oid: int, modifier: int = -1) -> PgType:
        """The type of a built-in oid (unknown oids become an unnamed type, mapped to string)."""
        name = BUILTIN_TYPE_NAMES.get(oid, f"oid:{oid}")
        element = None
        if name.startswith("_"):
            element_oid = next((o for o, n in BUILTIN_TYPE_NAMES.items() if n == name[1:]), 0)
            element = cls.builtin(element_oid)
        return cls(oid, name, modifier, "b", element)


@dataclass(frozen=True)
class MappingOptions:
    decimal_handling_mode: str = "precise"
    time_precision_mode: str = "adaptive"
    binary_handling_mode: str = "bytes"


@dataclass(frozen=True)
class ColumnMapping:
    schema: Schema
    convert: Converter = field(compare=False)


# -- helpers ---------------------------------------------------------------------------------

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_INT32_MAX, _INT32_MIN = 2**31 - 1, -(2**31)
_INT64_MAX, _INT64_MIN = 2**63 - 1, -(2**63)
_DATE_RE = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})( BC)?$")
_TIME_RE = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$")
_TIMESTAMP_RE = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?)?( BC)?$")
_TIMETZ_RE = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?$")


def _days(year: int, month: int, day: int, bc: bool) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (PostgreSQL's ``0001 BC`` is year 0)."""
    if bc:
        year = 1 - year
    # Shift into Python's date range by whole 400-year cycles (146097 days each).
    cycles = 0
    while year < 1:
        year += 400
        cycles -= 1
    while year > 9999:
        year -= 400
        cycles += 1
    return dt.date(year, month, day).toordinal() - _EPOCH_ORDINAL + cycles * 146_097


def _fraction_us(text: str | None) -> int:
    return int((text or "").ljust(6, "0")) if text else 0


def _offset_seconds(sign: str | None, hh: str | None, mm: str | None, ss: str | None) -> int:
    if sign is None or hh is None:
        return 0
    seconds = int(hh) * 3600 + int(mm or 0) * 60 + int(ss or 0)
    return -seconds if sign == "-" else seconds


def _bad(kind: str, text: str) -> DataException:
    return DataException(f"cannot read {text!r} as PostgreSQL {kind}")


def parse_date_days(text: str) -> int:
    """``2024-01-02`` (or ``... BC``, ``infinity``) -> days since the Unix epoch."""
    if text == "infinity":
        return _INT32_MAX
    if text == "-infinity":
        return _INT32_MIN
    m = _DATE_RE.match(text)
    if m is None:
        raise _bad("date", text)
    return _days(int(m[1]), int(m[2]), int(m[3]), bool(m[4]))


def parse_time_us(text: str) -> int:
    """``03:04:05.123456`` -> microseconds since midnight (``24:00:00`` is a whole day)."""
    m = _TIME_RE.match(text)
    if m is None:
        raise _bad("time", text)
    return ((int(m[1]) * 60 + int(m[2])) * 60 + int(m[3] or 0)) * 1_000_000 + _fraction_us(m[4])


def parse_timestamp_us(text: str) -> int:
    """A ``timestamp`` or ``timestamptz`` text -> microseconds since the Unix epoch (UTC)."""
    if text == "infinity":
        return _INT64_MAX
    if text == "-infinity":
        return _INT64_MIN
    m = _TIMESTAMP_RE.match(text)
    if m is None:
        if _DATE_RE.match(text):  # a date alone (a default literal): its midnight, UTC
            return parse_date_days(text) * 86_400_000_000
        raise _bad("timestamp", text)
    days = _days(int(m[1]), int(m[2]), int(m[3]), bool(m[12]))
    seconds = days * 86_400 + (int(m[4]) * 60 + int(m[5])) * 60 + int(m[6]) - _offset_seconds(m[8], m[9], m[10], m[11])
    return seconds * 1_000_000 + _fraction_us(m[7])


def _iso_fraction(us: int) -> str:
    """Java's ISO formatters: the fraction with trailing zeros dropped, nothing when zero."""
    return f".{us:06d}".rstrip("0") if us else ""


def format_zoned_timestamp(text: str, width: int = 0) -> str:
    """A ``timestamptz`` text -> ISO-8601 in UTC (``2024-01-02T03:04:05.123456Z``): with exactly
    ``width`` fraction digits (the column's precision) when 1..6, else as few as needed (Debezium's
    ``ZonedTimestamp`` with and without a fractional width)."""
    if text in ("infinity", "-infinity"):
        return text
    us = parse_timestamp_us(text)
    seconds, frac = divmod(us, 1_000_000)
    days, secs = divmod(seconds, 86_400)
    ordinal = days + _EPOCH_ORDINAL
    if not 1 <= ordinal <= dt.date.max.toordinal():
        raise _bad("timestamptz within years 1..9999", text)
    day = dt.date.fromordinal(ordinal)
    fraction = f".{frac:06d}"[: width + 1] if 0 < width <= 6 else _iso_fraction(frac)
    return f"{day.isoformat()}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}{fraction}Z"


def format_zoned_time(text: str) -> str:
    """A ``timetz`` text -> ISO-8601 time in UTC (``03:04:05.5Z``)."""
    m = _TIMETZ_RE.match(text)
    if m is None:
        raise _bad("timetz", text)
    seconds = (int(m[1]) * 60 + int(m[2])) * 60 + int(m[3]) - _offset_seconds(m[5], m[6], m[7], m[8])
    seconds %= 86_400
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}{_iso_fraction(_fraction_us(m[4]))}Z"


_INTERVAL_UNITS = {
    "year": "years", "years": "years", "mon": "months", "mons": "months", "day": "days", "days": "days",
}
_INTERVAL_PART = re.compile(r"([+-]?\d+) (years?|mons?|days?)")
_INTERVAL_TIME = re.compile(r"([+-])?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")
DAYS_PER_MONTH_AVG = 365.25 / 12.0


def parse_interval_us(text: str) -> int:
    """An ``interval`` in PostgreSQL's default output style (``1 year 2 mons -3 days 04:05:06.5``)
    -> microseconds, a month counted as 30.4375 days (Debezium's MicroDuration)."""
    parts = {"years": 0, "months": 0, "days": 0}
    rest = text
    for m in _INTERVAL_PART.finditer(text):
        parts[_INTERVAL_UNITS[m[2]]] += int(m[1])
        rest = rest.replace(m[0], "", 1)
    rest = rest.strip()
    time_us = 0
    if rest:
        t = _INTERVAL_TIME.fullmatch(rest)
        if t is None:
            raise _bad("interval", text)
        time_us = ((int(t[2]) * 60 + int(t[3])) * 60 + int(t[4])) * 1_000_000 + _fraction_us(t[5])
        if t[1] == "-":
            time_us = -time_us
    days = (parts["years"] * 12 + parts["months"]) * DAYS_PER_MONTH_AVG + parts["days"]
    return int(days * 86_400 * 1_000_000) + time_us


def parse_bytea(text: str) -> bytes:
    """``\\x0a0b`` (PostgreSQL's hex output) -> bytes."""
    if not text.startswith("\\x"):
        raise _bad("bytea in hex output format", text)
    return bytes.fromhex(text[2:])


def parse_array(text: str) -> list[str | None]:
    """A one-dimensional array literal (``{1,NULL,"a b","q\\"x"}``) -> its element texts."""
    if text.startswith("["):  # explicit bounds: [0:1]={...}
        text = text[text.index("=") + 1 :]
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        raise _bad("array", text)
    body = text[1:-1]
    if body.startswith("{"):
        raise DataException(f"multi-dimensional arrays are not supported: {text[:60]!r}")
    out: list[str | None] = []
    i, n = 0, len(body)
    while i < n:
        if body[i] == '"':
            i += 1
            chars = []
            while i < n and body[i] != '"':
                if body[i] == "\\":
                    i += 1
                chars.append(body[i])
                i += 1
            i += 1
            out.append("".join(chars))
        else:
            j = body.find(",", i)
            j = n if j < 0 else j
            token = body[i:j]
            out.append(None if token == "NULL" else token)
            i = j
        if i < n:
            if body[i] != ",":
                raise _bad("array", text)
            i += 1
    return out


def _parse_bool(text: str) -> bool:
    if text in ("t", "true"):
        return True
    if text in ("f", "false"):
        return False
    raise _bad("boolean", text)


def _parse_decimal(text: str) -> decimal.Decimal | None:
    if text == "NaN":
        return None
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise _bad("numeric", text) from None


def _parse_money(text: str) -> decimal.Decimal:
    negative = text.startswith("-") or text.startswith("(")
    digits = re.sub(r"[^0-9.]", "", text)
    try:
        value = decimal.Decimal(digits)
    except decimal.InvalidOperation:
        raise _bad("money", text) from None
    return -value if negative else value


def _unscaled_bytes(unscaled: int) -> bytes:
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def _variable_scale_schema(optional: bool) -> Schema:
    b = (
        SchemaBuilder.struct()
        .name(VARIABLE_SCALE_DECIMAL)
        .version(1)
        .doc("Variable scaled decimal")
        .field("scale", Schema.INT32_SCHEMA)
        .field("value", Schema.BYTES_SCHEMA)
    )
    return (b.optional() if optional else b).build()


def _named(builder: SchemaBuilder, name: str, optional: bool, parameters: dict[str, str] | None = None) -> Schema:
    builder = builder.name(name).version(1)
    if parameters:
        builder = builder.parameters(parameters)
    return (builder.optional() if optional else builder).build()


def _plain(t: Type, optional: bool) -> Schema:
    return Schema(type=t, optional=optional)


def _time_precision(modifier: int) -> int:
    return 6 if modifier < 0 else modifier


# -- the mapping -----------------------------------------------------------------------------


def column_mapping(pg: PgType, optional: bool, options: MappingOptions) -> ColumnMapping:
    """The Connect schema and text -> value converter of a column of type ``pg``."""
    name = pg.name
    if pg.element is not None:
        return _array_mapping(pg, optional, options)
    if name == "bool":
        return ColumnMapping(_plain(Type.BOOLEAN, optional), _parse_bool)
    if name == "int2":
        return ColumnMapping(_plain(Type.INT16, optional), int)
    if name == "int4":
        return ColumnMapping(_plain(Type.INT32, optional), int)
    if name in ("int8", "oid"):
        return ColumnMapping(_plain(Type.INT64, optional), int)
    if name == "float4":
        return ColumnMapping(_plain(Type.FLOAT32, optional), float)
    if name == "float8":
        return ColumnMapping(_plain(Type.FLOAT64, optional), float)
    if name in ("numeric", "money"):
        return _numeric_mapping(pg, optional, options)
    if name == "bytea":
        return _bytea_mapping(optional, options)
    if name == "bit" and pg.modifier == 1:
        return ColumnMapping(_plain(Type.BOOLEAN, optional), lambda t: t == "1")
    if name in ("date", "time", "timestamp"):
        return _temporal_mapping(pg, optional, options)
    if name == "timestamptz":
        width = _time_precision(pg.modifier)
        return ColumnMapping(
            _named(SchemaBuilder.string(), DEBEZIUM_ZONED_TIMESTAMP, optional), lambda t: format_zoned_timestamp(t, width)
        )
    if name == "timetz":
        return ColumnMapping(_named(SchemaBuilder.string(), DEBEZIUM_ZONED_TIME, optional), format_zoned_time)
    if name == "interval":
        return ColumnMapping(_named(SchemaBuilder.int64(), DEBEZIUM_MICRO_DURATION, optional), parse_interval_us)
    if name == "uuid":
        return ColumnMapping(_named(SchemaBuilder.string(), DEBEZIUM_UUID, optional), str)
    if name in ("json", "jsonb"):
        return ColumnMapping(_named(SchemaBuilder.string(), DEBEZIUM_JSON, optional), str)
    if name == "xml":
        return ColumnMapping(_named(SchemaBuilder.string(), DEBEZIUM_XML, optional), str)
    if pg.kind == "e":
        schema = _named(SchemaBuilder.string(), DEBEZIUM_ENUM, optional, {"allowed": ",".join(pg.enum_values)})
        return ColumnMapping(schema, str)
    return ColumnMapping(_plain(Type.STRING, optional), str)


def _numeric_mapping(pg: PgType, optional: bool, options: MappingOptions) -> ColumnMapping:
    parse = _parse_money if pg.name == "money" else _parse_decimal
    mode = options.decimal_handling_mode
    if mode == "double":

        def to_double(text: str) -> float | None:
            value = parse(text)
            return None if value is None else float(value)

        return ColumnMapping(_plain(Type.FLOAT64, optional), to_double)
    if mode == "string":

        def to_string(text: str) -> str | None:
            value = parse(text)
            return None if value is None else format(value, "f")

        return ColumnMapping(_plain(Type.STRING, optional), to_string)
    if pg.name == "money":
        precision, scale = 19, 2
    elif pg.modifier >= 4:
        precision, scale = (pg.modifier - 4) >> 16, (pg.modifier - 4) & 0xFFFF
        if scale > 1000:  # negative scales are stored in 11 bits (PostgreSQL 15+)
            scale -= 2048
    else:
        variable = _variable_scale_schema(optional)
        return ColumnMapping(variable, _variable_scale_converter(variable))
    builder = Decimal.builder(scale).parameter(DECIMAL_PRECISION_PARAMETER, str(precision))
    schema = (builder.optional() if optional else builder).build()
    quantum = decimal.Decimal(1).scaleb(-scale)

    def to_decimal(text: str) -> decimal.Decimal | None:
        value = parse(text)
        return None if value is None else value.quantize(quantum)

    return ColumnMapping(schema, to_decimal)


def _variable_scale_converter(schema: Schema) -> Converter:
    def convert(text: str) -> Struct | None:
        value = _parse_decimal(text)
        if value is None:
            return None
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        unscaled = int("".join(map(str, digits)) or "0")
        scale = -exponent
        if scale < 0:  # Debezium never emits a negative scale: multiply it out
            unscaled *= 10**-scale
            scale = 0
        return Struct(schema).put("scale", scale).put("value", _unscaled_bytes(-unscaled if sign else unscaled))

    return convert


def _bytea_mapping(optional: bool, options: MappingOptions) -> ColumnMapping:
    mode = options.binary_handling_mode
    if mode == "bytes":
        return ColumnMapping(_plain(Type.BYTES, optional), parse_bytea)
    encoders: dict[str, Callable[[bytes], str]] = {
        "base64": lambda b: base64.b64encode(b).decode("ascii"),
        "base64-url-safe": lambda b: base64.urlsafe_b64encode(b).decode("ascii"),
        "hex": lambda b: b.hex(),
    }
    encode = encoders[mode]
    return ColumnMapping(_plain(Type.STRING, optional), lambda t: encode(parse_bytea(t)))


def _temporal_mapping(pg: PgType, optional: bool, options: MappingOptions) -> ColumnMapping:
    mode = options.time_precision_mode
    precision = _time_precision(pg.modifier)
    if mode == "connect":
        if pg.name == "date":
            return ColumnMapping(Date.schema(optional), lambda t: Date.to_logical(parse_date_days(t)))
        if pg.name == "time":
            return ColumnMapping(Time.schema(optional), lambda t: Time.to_logical(parse_time_us(t) // 1000 % 86_400_000))
        return ColumnMapping(Timestamp.schema(optional), lambda t: Timestamp.to_logical(parse_timestamp_us(t) // 1000))
    if pg.name == "date":
        return ColumnMapping(_named(SchemaBuilder.int32(), DEBEZIUM_DATE, optional), parse_date_days)
    if pg.name == "time":
        if precision <= 3 and mode == "adaptive":
            return ColumnMapping(_named(SchemaBuilder.int32(), DEBEZIUM_TIME, optional), lambda t: parse_time_us(t) // 1000)
        return ColumnMapping(_named(SchemaBuilder.int64(), DEBEZIUM_MICRO_TIME, optional), parse_time_us)
    if precision <= 3:

        def to_ms(text: str) -> int:
            us = parse_timestamp_us(text)
            return us if us in (_INT64_MAX, _INT64_MIN) else us // 1000

        return ColumnMapping(_named(SchemaBuilder.int64(), DEBEZIUM_TIMESTAMP, optional), to_ms)
    return ColumnMapping(_named(SchemaBuilder.int64(), DEBEZIUM_MICRO_TIMESTAMP, optional), parse_timestamp_us)


def _array_mapping(pg: PgType, optional: bool, options: MappingOptions) -> ColumnMapping:
    assert pg.element is not None
    element = column_mapping(pg.element, True, options)
    builder = SchemaBuilder.array(element.schema)
    schema = (builder.optional() if optional else builder).build()
    convert_element = element.convert

    def convert(text: str) -> list[Any]:
        return [None if item is None else convert_element(item) for item in parse_array(text)]

    return ColumnMapping(schema, convert)


# -- column defaults -------------------------------------------------------------------------

#: Types whose DEFAULT becomes the schema's default, with the stand-in Debezium uses when the
#: default is computed (a function call such as ``nextval(...)`` or ``now()``).
_DEFAULT_PLACEHOLDERS: dict[str, str] = {
    "bit": "00", "varbit": "0", "bool": "false", "bpchar": "", "varchar": "", "text": "",
    "numeric": "0.0", "float4": "0.0", "float8": "0.0", "int2": "0", "int4": "0", "int8": "0",
    "json": "{}", "jsonb": "{}", "xml": "", "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01", "time": "00:00", "timestamp": "1970-01-01", "timestamptz": "1970-01-01",
}
_TRIMMED = {"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "int8", "uuid", "date",
            "time", "timestamp", "timestamptz"}
_FUNCTION_CALL = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT_TIMES = {"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"}
_QUOTED = re.compile(r"'(.*?)'")


def default_literal(pg: PgType, expression: str) -> str | None:
    """The text of a column default as Debezium reads it from ``pg_get_expr``: the quoted literal
    (``'abc'::text`` -> ``abc``), a bare one (``42``), the type's stand-in for a computed default,
    None for ``NULL::type`` or a type whose defaults are not carried."""
    if pg.kind == "e":
        suffix = f"::{pg.name}"
        if expression.endswith(suffix) and expression.startswith("'") and expression[: -len(suffix)].endswith("'"):
            return expression[1 : -len(suffix) - 1]
        return None
    placeholder = _DEFAULT_PLACEHOLDERS.get(pg.name)
    if placeholder is None:
        return None
    if pg.name in _TRIMMED:
        expression = expression.strip()
    if _FUNCTION_CALL.match(expression) or expression.lower() in _CURRENT_TIMES:
        return placeholder
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    quoted = _QUOTED.search(expression)
    return None if quoted is None else quoted[1]


def with_default(mapping: ColumnMapping, pg: PgType, expression: str | None) -> ColumnMapping:
    """``mapping`` with the column's DEFAULT as its schema's default value, when Debezium would
    carry one (see :func:`default_literal`); unchanged when the default cannot be read."""
    if expression is None or pg.element is not None:
        return mapping
    literal = default_literal(pg, expression)
    if literal is None:
        return mapping
    try:
        if pg.name == "bool":
            value: Any = literal.lower() == "true"
        elif pg.name == "bit" and len(literal) == 1:
            value = literal == "1"
        else:
            value = mapping.convert(literal)
    except (DataException, ValueError, ArithmeticError):
        return mapping
    if value is None or isinstance(value, Struct):
        return mapping
    try:
        mapping.schema.validate(value)
    except DataException:
        return mapping
    return ColumnMapping(dataclasses.replace(mapping.schema, default_value=value), mapping.convert)


def unavailable_value(schema: Schema, placeholder: str) -> Any:
    """What stands for an unchanged TOASTed value of a column: the placeholder as a string, as
    bytes, or in a one-element list; None for types that cannot hold it."""
    if schema.type is Type.STRING:
        return placeholder
    if schema.type is Type.BYTES and schema.name is None:
        return placeholder.encode()
    if schema.type is Type.ARRAY and schema.value_schema is not None:
        inner = unavailable_value(schema.value_schema, placeholder)
        return None if inner is None else [inner]
    return None


__all__ = [
    "BUILTIN_TYPE_NAMES",
    "ColumnMapping",
    "MappingOptions",
    "PgType",
    "column_mapping",
    "format_zoned_time",
    "format_zoned_timestamp",
    "parse_array",
    "parse_bytea",
    "parse_date_days",
    "parse_interval_us",
    "parse_time_us",
    "parse_timestamp_us",
    "default_literal",
    "unavailable_value",
    "with_default",
]
