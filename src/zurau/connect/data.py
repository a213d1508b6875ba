"""Connect's data model: schemas, structs and the logical types, as Kafka Connect defines them.

A :class:`Schema` describes a key or a value: a :class:`Type` (``int8`` .. ``int64``, ``float32``,
``float64``, ``boolean``, ``string``, ``bytes``, ``array``, ``map``, ``struct``), whether it is
``optional``, a default, and the ``name``/``version``/``doc``/``parameters`` that logical types
(:class:`Decimal`, :class:`Date`, :class:`Time`, :class:`Timestamp`, or a connector's own such as
Debezium's ``io.debezium.time.MicroTimestamp``) hang their meaning on. Schemas are immutable and
compare by value; build them with :class:`SchemaBuilder`::

    value_schema = (SchemaBuilder.struct().name("shop.orders.Value")
                    .field("id", INT32_SCHEMA)
                    .field("note", OPTIONAL_STRING_SCHEMA)
                    .build())
    value = Struct(value_schema).put("id", 1).put("note", None)

Python values per type: integers for ``int8`` .. ``int64``, ``float`` for the floats, ``bool``,
``str``, ``bytes``, ``list`` for arrays, ``dict`` for maps, :class:`Struct` for structs. The logical
types hold ``decimal.Decimal`` (Decimal), ``datetime.date`` (Date), ``datetime.time`` (Time) and a
timezone-aware ``datetime.datetime`` in UTC (Timestamp); naive datetimes are taken as UTC.
"""

from __future__ import annotations

import datetime as dt
import decimal as pydecimal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar


class DataException(ValueError):
    """A value does not match its schema, or a schema is malformed (Kafka's DataException)."""


class Type(StrEnum):
    """Connect's schema types; the value is the name used by the JSON converter."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class Field:
    """One field of a struct schema: its name, position and schema."""

    name: str
    index: int
    schema: Schema


@dataclass(frozen=True, eq=True)
class Schema:
    """An immutable Connect schema. ``fields`` only for structs, ``key_schema`` only for maps,
    ``value_schema`` for maps and arrays (the element schema)."""

    type: Type
    optional: bool = False
    default_value: Any = None
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: Mapping[str, str] | None = None
    fields: tuple[Field, ...] = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None

    INT8_SCHEMA: ClassVar[Schema]
    INT16_SCHEMA: ClassVar[Schema]
    INT32_SCHEMA: ClassVar[Schema]
    INT64_SCHEMA: ClassVar[Schema]
    FLOAT32_SCHEMA: ClassVar[Schema]
    FLOAT64_SCHEMA: ClassVar[Schema]
    BOOLEAN_SCHEMA: ClassVar[Schema]
    STRING_SCHEMA: ClassVar[Schema]
    BYTES_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT8_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT16_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_BOOLEAN_SCHEMA: ClassVar[Schema]
    OPTIONAL_STRING_SCHEMA: ClassVar[Schema]
    OPTIONAL_BYTES_SCHEMA: ClassVar[Schema]

    def __hash__(self) -> int:
        return hash((self.type, self.optional, self.name, self.version, tuple(f.name for f in self.fields)))

    def field(self, name: str) -> Field | None:
        """The struct field called ``name``, or None."""
        if self.type is not Type.STRUCT:
            raise DataException(f"cannot look up fields on a non-struct schema ({self.type.value})")
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def validate(self, value: Any) -> None:
        """Raise :class:`DataException` unless ``value`` is valid for this schema."""
        validate_value(self, value)


def _primitive(t: Type, optional: bool = False) -> Schema:
    return Schema(type=t, optional=optional)


for _t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN,
           Type.STRING, Type.BYTES):
    setattr(Schema, f"{_t.name}_SCHEMA", _primitive(_t))
    setattr(Schema, f"OPTIONAL_{_t.name}_SCHEMA", _primitive(_t, True))

INT8_SCHEMA = Schema.INT8_SCHEMA
INT16_SCHEMA = Schema.INT16_SCHEMA
INT32_SCHEMA = Schema.INT32_SCHEMA
INT64_SCHEMA = Schema.INT64_SCHEMA
FLOAT32_SCHEMA = Schema.FLOAT32_SCHEMA
FLOAT64_SCHEMA = Schema.FLOAT64_SCHEMA
BOOLEAN_SCHEMA = Schema.BOOLEAN_SCHEMA
STRING_SCHEMA = Schema.STRING_SCHEMA
BYTES_SCHEMA = Schema.BYTES_SCHEMA
OPTIONAL_INT8_SCHEMA = Schema.OPTIONAL_INT8_SCHEMA
OPTIONAL_INT16_SCHEMA = Schema.OPTIONAL_INT16_SCHEMA
OPTIONAL_INT32_SCHEMA = Schema.OPTIONAL_INT32_SCHEMA
OPTIONAL_INT64_SCHEMA = Schema.OPTIONAL_INT64_SCHEMA
OPTIONAL_FLOAT32_SCHEMA = Schema.OPTIONAL_FLOAT32_SCHEMA
OPTIONAL_FLOAT64_SCHEMA = Schema.OPTIONAL_FLOAT64_SCHEMA
OPTIONAL_BOOLEAN_SCHEMA = Schema.OPTIONAL_BOOLEAN_SCHEMA
OPTIONAL_STRING_SCHEMA = Schema.OPTIONAL_STRING_SCHEMA
OPTIONAL_BYTES_SCHEMA = Schema.OPTIONAL_BYTES_SCHEMA


class SchemaBuilder:
    """Fluent construction of a :class:`Schema` (Kafka's SchemaBuilder)::

        SchemaBuilder.struct().name("k").field("id", INT32_SCHEMA).optional().build()
    """

    def __init__(self, type_: Type) -> None:
        self._type = type_
        self._optional = False
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: list[Field] = []
        self._key: Schema | None = None
        self._value: Schema | None = None

    # -- entry points, one per type --
    @staticmethod
    def type(type_: Type) -> SchemaBuilder:
        return SchemaBuilder(type_)

    @staticmethod
    def int8() -> SchemaBuilder:
        return SchemaBuilder(Type.INT8)

    @staticmethod
    def int16() -> SchemaBuilder:
        return SchemaBuilder(Type.INT16)

    @staticmethod
    def int32() -> SchemaBuilder:
        return SchemaBuilder(Type.INT32)

    @staticmethod
    def int64() -> SchemaBuilder:
        return SchemaBuilder(Type.INT64)

    @staticmethod
    def float32() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT32)

    @staticmethod
    def float64() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT64)

    @staticmethod
    def boolean() -> SchemaBuilder:
        return SchemaBuilder(Type.BOOLEAN)

    @staticmethod
    def string() -> SchemaBuilder:
        return SchemaBuilder(Type.STRING)

    @staticmethod
    def bytes() -> SchemaBuilder:
        return SchemaBuilder(Type.BYTES)

    @staticmethod
    def struct() -> SchemaBuilder:
        return SchemaBuilder(Type.STRUCT)

    @staticmethod
    def array(value_schema: Schema) -> SchemaBuilder:
        b = SchemaBuilder(Type.ARRAY)
        b._value = value_schema
        return b

    @staticmethod
    def map(key_schema: Schema, value_schema: Schema) -> SchemaBuilder:
        b = SchemaBuilder(Type.MAP)
        b._key, b._value = key_schema, value_schema
        return b

    # -- modifiers --
    def optional(self) -> SchemaBuilder:
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        self._doc = doc
        return self

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        if self._parameters is None:
            self._parameters = {}
        self._parameters[key] = value
        return self

    def parameters(self, params: Mapping[str, str]) -> SchemaBuilder:
        for k, v in params.items():
            self.parameter(k, v)
        return self

    def field(self, name: str, schema: Schema) -> SchemaBuilder:
        if self._type is not Type.STRUCT:
            raise DataException("only struct schemas have fields")
        if any(f.name == name for f in self._fields):
            raise DataException(f"duplicate field {name!r}")
        self._fields.append(Field(name, len(self._fields), schema))
        return self

    def build(self) -> Schema:
        schema = Schema(
            type=self._type, optional=self._optional, default_value=None, name=self._name,
            version=self._version, doc=self._doc,
            parameters=dict(self._parameters) if self._parameters is not None else None,
            fields=tuple(self._fields), key_schema=self._key, value_schema=self._value,
        )
        if self._default is not None:
            validate_value(schema, self._default)
            schema = Schema(**{**schema.__dict__, "default_value": self._default})
        return schema


class Struct:
    """A value of a struct schema: field values by name, checked against the schema on ``put``."""

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataException(f"a Struct needs a struct schema, not {schema.type.value}")
        self.schema = schema
        self._values: dict[str, Any] = {}

    def put(self, name: str, value: Any) -> Struct:
        """Set field ``name`` (which must exist) to ``value`` (validated); returns self for chaining."""
        f = self.schema.field(name)
        if f is None:
            raise DataException(f"{name!r} is not a field of {self.schema.name or 'the struct'}")
        validate_value(f.schema, value)
        self._values[name] = value
        return self

    def get(self, name: str) -> Any:
        """The field's value, or its schema default when unset."""
        f = self.schema.field(name)
        if f is None:
            raise DataException(f"{name!r} is not a field of {self.schema.name or 'the struct'}")
        if name in self._values:
            return self._values[name]
        return f.schema.default_value

    def validate(self) -> None:
        """Raise unless every required field has a value (set or default)."""
        for f in self.schema.fields:
            validate_value(f.schema, self.get(f.name))

    def as_dict(self) -> dict[str, Any]:
        """Field values in schema order (nested structs stay Structs)."""
        return {f.name: self.get(f.name) for f in self.schema.fields}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self.schema == other.schema and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(self.schema)

    def __repr__(self) -> str:
        """As Java's ``Struct.toString``: ``Struct{id=1,note=x}``, null fields left out."""
        inner = ",".join(f"{k}={java_text(v)}" for k, v in self.as_dict().items() if v is not None)
        return f"Struct{{{inner}}}"


def java_text(value: Any) -> str:
    """``value`` as Java's ``toString`` writes the corresponding Connect value: ``true``/``false``,
    ``null``, maps as ``{k=v, k2=v2}``, lists as ``[a, b]``, structs as ``Struct{...}``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{java_text(k)}={java_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(java_text(v) for v in value) + "]"
    return str(value)


# -- logical types --

class Decimal:
    """Arbitrary-precision decimal: ``bytes`` holding the big-endian two's-complement unscaled value,
    parameter ``scale``. Python value: ``decimal.Decimal``."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME).parameter(Decimal.SCALE_FIELD, str(scale)).version(1)

    @staticmethod
    def schema(scale: int, optional: bool = False) -> Schema:
        b = Decimal.builder(scale)
        return (b.optional() if optional else b).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        try:
            return int((schema.parameters or {})[Decimal.SCALE_FIELD])
        except (KeyError, ValueError) as e:
            raise DataException("Decimal schema has no valid scale parameter") from e

    @staticmethod
    def from_logical(schema: Schema, value: pydecimal.Decimal) -> bytes:
        scale = Decimal.scale(schema)
        with pydecimal.localcontext() as ctx:
            ctx.prec = max(ctx.prec, len(value.as_tuple().digits) + abs(scale) + 2)
            quantized = value.quantize(pydecimal.Decimal(1).scaleb(-scale))
            if quantized != value:
                raise DataException(f"{value} does not fit the Decimal schema's scale {scale}")
            unscaled = int(quantized.scaleb(scale))
        # Java's BigInteger.toByteArray: the shortest two's-complement form.
        length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
        return unscaled.to_bytes(length, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> pydecimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        return pydecimal.Decimal(unscaled).scaleb(-Decimal.scale(schema))


_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class Date:
    """A day: ``int32`` days since the Unix epoch. Python value: ``datetime.date``."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    @staticmethod
    def schema(optional: bool = False) -> Schema:
        b = Date.builder()
        return (b.optional() if optional else b).build()

    @staticmethod
    def from_logical(value: dt.date) -> int:
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(value: int) -> dt.date:
        return _EPOCH_DATE + dt.timedelta(days=value)


class Time:
    """A time of day: ``int32`` milliseconds since midnight. Python value: ``datetime.time``."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    @staticmethod
    def schema(optional: bool = False) -> Schema:
        b = Time.builder()
        return (b.optional() if optional else b).build()

    @staticmethod
    def from_logical(value: dt.time) -> int:
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000

    @staticmethod
    def to_logical(value: int) -> dt.time:
        if not 0 <= value < 86_400_000:
            raise DataException(f"Time value {value} is outside one day")
        seconds, ms = divmod(value, 1000)
        return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, ms * 1000)


class Timestamp:
    """An instant: ``int64`` milliseconds since the Unix epoch. Python value: aware ``datetime``."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    @staticmethod
    def schema(optional: bool = False) -> Schema:
        b = Timestamp.builder()
        return (b.optional() if optional else b).build()

    @staticmethod
    def from_logical(value: dt.datetime) -> int:
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(value: int) -> dt.datetime:
        return _EPOCH + dt.timedelta(milliseconds=value)


LOGICAL_TYPES = {
    Decimal.LOGICAL_NAME: (Type.BYTES, pydecimal.Decimal),
    Date.LOGICAL_NAME: (Type.INT32, dt.date),
    Time.LOGICAL_NAME: (Type.INT32, dt.time),
    Timestamp.LOGICAL_NAME: (Type.INT64, dt.datetime),
}


def validate_value(schema: Schema, value: Any, *, path: str = "") -> None:
    """Raise :class:`DataException` unless ``value`` fits ``schema`` (None only when optional or
    when the schema has a default)."""
    where = f" at {path}" if path else ""
    if value is None:
        if schema.optional or schema.default_value is not None:
            return
        raise DataException(f"invalid null value for a required {schema.type.value} field{where}")
    logical = LOGICAL_TYPES.get(schema.name or "")
    if logical is not None:
        if isinstance(value, logical[1]) and not (logical[1] is dt.date and isinstance(value, dt.datetime)):
            return
        raise DataException(f"{schema.name} expects {logical[1].__name__}, got {type(value).__name__}{where}")
    t = schema.type
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise DataException(f"invalid value {value!r} for {t.value}{where}")
    elif t in (Type.FLOAT32, Type.FLOAT64):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataException(f"invalid value {value!r} for {t.value}{where}")
    elif t is Type.BOOLEAN:
        if not isinstance(value, bool):
            raise DataException(f"invalid value {value!r} for boolean{where}")
    elif t is Type.STRING:
        if not isinstance(value, str):
            raise DataException(f"invalid value {value!r} for string{where}")
    elif t is Type.BYTES:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise DataException(f"invalid value of type {type(value).__name__} for bytes{where}")
    elif t is Type.ARRAY:
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
            raise DataException(f"invalid value {value!r} for array{where}")
        assert schema.value_schema is not None
        for i, item in enumerate(value):
            validate_value(schema.value_schema, item, path=f"{path}[{i}]")
    elif t is Type.MAP:
        if not isinstance(value, Mapping):
            raise DataException(f"invalid value {value!r} for map{where}")
        assert schema.key_schema is not None and schema.value_schema is not None
        for k, v in value.items():
            validate_value(schema.key_schema, k, path=f"{path}{{key}}")
            validate_value(schema.value_schema, v, path=f"{path}[{k!r}]")
    elif t is Type.STRUCT:
        if not isinstance(value, Struct):
            raise DataException(f"invalid value of type {type(value).__name__} for struct{where}")
        if value.schema != schema:
            raise DataException(f"struct schemas do not match{where}")
