"""Declarative description of Kafka API messages.

Each API is described once, in Python, as an :class:`ApiSchema` whose request and response are
tuples of :class:`Field`. The codec (:mod:`zurau.protocol.codec`) compiles a schema into encode and
decode functions per version.

Vocabulary (Kafka's own):

* ``versions``: the message versions a field exists in, written ``"0+"``, ``"3-7"``, ``"5"`` or
  ``"none"``.
* ``nullable``: versions in which the field may be null (strings, bytes, arrays, records, structs).
* ``tag`` / ``tagged``: a tagged field (KIP-482) lives in the tagged-field section of its struct in
  the flexible versions listed by ``tagged``; it is written only when its value differs from the
  default, which keeps old librdkafka (kcat 1.7) working.
* ``flexible`` (on the API): versions using compact strings/arrays and tagged-field sections.

Decoded messages are plain ``dict`` objects keyed by snake_case field names; structs nest as dicts
and arrays as lists. A field missing from a dict that is being encoded takes its default (a key that
is no field at all is an error in the codec's strict mode: :func:`zurau.protocol.codec.set_strict`).
:mod:`zurau.protocol.messages` holds a ``TypedDict`` per message, generated from these schemas.

Besides API bodies (:class:`ApiSchema`), Kafka defines versioned "data" structs that travel inside
other messages' bytes, such as the consumer protocol's subscription and assignment; a
:class:`DataSchema` describes one of those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from zurau.protocol.api_keys import ApiKey

# Scalar type names.
INT8 = "int8"
INT16 = "int16"
INT32 = "int32"
INT64 = "int64"
UINT16 = "uint16"
FLOAT64 = "float64"
BOOL = "bool"
STRING = "string"
BYTES = "bytes"
RECORDS = "records"
UUID = "uuid"

SCALARS = frozenset({INT8, INT16, INT32, INT64, UINT16, FLOAT64, BOOL, STRING, BYTES, RECORDS, UUID})

NO_VERSIONS = (1, 0)  # an empty range


class _Null:
    """The type of :data:`NULL`."""

    def __repr__(self) -> str:
        return "NULL"


NULL: Any = _Null()
"""``Field(default=NULL)``: the default is null even in versions where the field is absent (Kafka's
``"default": "null"``). Only for a field that is nullable in every version it exists in."""


@cache
def parse_versions(spec: str | None) -> tuple[int, int]:
    """Parse ``"0+"``, ``"3-7"``, ``"5"`` or ``"none"`` into an inclusive ``(lo, hi)`` range
    (cached: request framing asks for a schema's flexible range on every request)."""
    if spec is None or spec == "none":
        return NO_VERSIONS
    spec = spec.strip()
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return int(lo), int(hi)
    v = int(spec)
    return v, v


def in_range(version: int, rng: tuple[int, int]) -> bool:
    return rng[0] <= version <= rng[1]


@dataclass(frozen=True)
class Struct:
    """An ordered group of fields (the element type of a struct array, or a nested struct)."""

    fields: tuple[Field, ...]

    def __init__(self, *fields: Field) -> None:
        object.__setattr__(self, "fields", tuple(fields))


@dataclass(frozen=True)
class Array:
    """An array of a scalar type name or of a :class:`Struct`."""

    of: str | Struct


FieldType = str | Struct | Array


@dataclass(frozen=True)
class Field:
    """One field of a message or struct.

    ``type`` is a scalar name, an :class:`Array` or a :class:`Struct` (a non-array nested struct).
    ``default`` is used when decoding a version that lacks the field, when a tagged field is absent
    on the wire, and when encoding a dict that lacks the key. When left as ``None`` the default is
    the type's zero value (0, False, "", b"", [] or the all-zero UUID), except that a field that is
    nullable in the version (``nullable`` covers it) defaults to ``None``; :data:`NULL` makes the
    default ``None`` in every version.
    """

    name: str
    type: FieldType
    versions: str = "0+"
    nullable: str | None = None
    tag: int | None = None
    tagged: str | None = None
    default: Any = None
    ignorable: bool = field(default=True, compare=False)

    @property
    def version_range(self) -> tuple[int, int]:
        return parse_versions(self.versions)

    @property
    def nullable_range(self) -> tuple[int, int]:
        return parse_versions(self.nullable)

    @property
    def tagged_range(self) -> tuple[int, int]:
        return parse_versions(self.tagged)


F = Field


@dataclass(frozen=True)
class ApiSchema:
    """A Kafka API: key, name, the versions Zurau serves, the flexible versions, and both bodies.

    ``broker_only``: Kafka's schema lists only the ``broker`` listener type, and Zurau keeps the
    API off controller listeners too (not advertised there, a request closes the connection).
    Zurau serves the other APIs on every listener, whatever Kafka's listener types say.
    """

    key: int
    name: str
    valid: str
    flexible: str
    request: tuple[Field, ...]
    response: tuple[Field, ...]
    broker_only: bool = False

    @property
    def min_version(self) -> int:
        return parse_versions(self.valid)[0]

    @property
    def max_version(self) -> int:
        return parse_versions(self.valid)[1]

    def is_flexible(self, version: int) -> bool:
        return in_range(version, parse_versions(self.flexible))

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, else v1 (ControlledShutdown v0 aside)."""
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 for flexible versions, else v0.

        ApiVersions always answers with header v0 so that a client can parse the answer before it
        knows which versions the broker speaks.
        """
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(version) else 0


@dataclass(frozen=True)
class DataSchema:
    """A versioned struct that is not an API body (Kafka's ``"type": "data"`` messages).

    ``valid`` and ``flexible`` are version ranges as for :class:`ApiSchema`; ``fields`` is the one
    body. How the version travels (if at all) is up to the user: the consumer protocol, for
    instance, writes it as an int16 in front of the struct.
    """

    name: str
    valid: str
    flexible: str
    fields: tuple[Field, ...]

    @property
    def min_version(self) -> int:
        return parse_versions(self.valid)[0]

    @property
    def max_version(self) -> int:
        return parse_versions(self.valid)[1]

    def is_flexible(self, version: int) -> bool:
        return in_range(version, parse_versions(self.flexible))
