"""A decoder of PostgreSQL's logical replication messages, as the ``pgoutput`` plugin sends them
(protocol version 1, the version every PostgreSQL from 10 on speaks).

Each message of the replication stream (the payload of an ``XLogData`` message, which psycopg2
hands over as ``msg.payload``) is one of the dataclasses below; :func:`decode_message` turns the
bytes into one, and raises :class:`PgOutputError` (naming the message and offset) for anything
malformed: an unknown tag, a truncated message, trailing bytes, an unknown tuple value kind.

Byte formats (all integers big-endian; ``String`` is NUL-terminated UTF-8; LSNs are Int64;
timestamps are Int64 microseconds since the PostgreSQL epoch 2000-01-01 00:00:00 UTC)::

    Begin     'B' Int64 final_lsn, Int64 commit_ts, Int32 xid
    Commit    'C' Int8 flags (0), Int64 commit_lsn, Int64 end_lsn, Int64 commit_ts
    Origin    'O' Int64 commit_lsn (on the origin), String name
    Relation  'R' Int32 oid, String namespace ('' for pg_catalog), String name,
                  Int8 replica identity (relreplident: 'd' default, 'n' nothing, 'f' full, 'i' index),
                  Int16 ncolumns, then per column:
                  Int8 flags (1: part of the key), String name, Int32 type oid, Int32 type modifier
    Type      'Y' Int32 oid, String namespace, String name
    Insert    'I' Int32 relation oid, 'N' TupleData
    Update    'U' Int32 relation oid, optionally ('K' | 'O') TupleData, then 'N' TupleData
    Delete    'D' Int32 relation oid, ('K' | 'O') TupleData
    Truncate  'T' Int32 nrelations, Int8 options (1: CASCADE, 2: RESTART IDENTITY), Int32 oid * n
    Message   'M' Int8 flags (1: transactional), Int64 lsn, String prefix, Int32 length, Byte*length

    TupleData Int16 ncolumns, then per column one of
              'n'                      NULL
              'u'                      an unchanged TOASTed value (not sent)
              't' Int32 length, bytes  the value in text format
              'b' Int32 length, bytes  the value in binary format (binary mode, PostgreSQL 14+)

'K' tuples carry the replica identity's key columns (the others are NULL), 'O' tuples the whole
old row (``REPLICA IDENTITY FULL``); an Update without either had an unchanged key under the
default identity. Relation messages come before the first change of a relation in a session and
again after its definition changed, so the decoder's user keeps them by oid
(:class:`RelationCache`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

#: Microseconds between the Unix epoch and PostgreSQL's (2000-01-01 UTC).
PG_EPOCH_OFFSET_US: Final = 946_684_800_000_000
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)

_I8 = struct.Struct(">b")
_U8 = struct.Struct(">B")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_U64 = struct.Struct(">Q")


class PgOutputError(ValueError):
    """A logical replication message that does not follow the pgoutput format."""


class UnchangedToast:
    """The value of a TOASTed column that an update left unchanged (pgoutput does not send it)."""

    _instance: UnchangedToast | None = None

    def __new__(cls) -> UnchangedToast:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST: Final = UnchangedToast()

#: One column of a tuple: None (NULL), :data:`UNCHANGED_TOAST`, ``str`` (text format) or
#: ``bytes`` (binary format).
ColumnValue = str | bytes | None | UnchangedToast
TupleData = tuple[ColumnValue, ...]


def pg_timestamp_to_unix_us(pg_us: int) -> int:
    """Microseconds since the PostgreSQL epoch -> microseconds since the Unix epoch."""
    return pg_us + PG_EPOCH_OFFSET_US


def pg_timestamp_to_datetime(pg_us: int) -> datetime:
    return _PG_EPOCH + timedelta(microseconds=pg_us)


def format_lsn(lsn: int) -> str:
    """An LSN as PostgreSQL prints it: two hex halves, ``16/B374D848``."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """``16/B374D848`` -> the 64-bit LSN; ValueError when it is not one."""
    high, sep, low = text.partition("/")
    if not sep or not high or not low:
        raise ValueError(f"not an LSN: {text!r}")
    return (int(high, 16) << 32) | int(low, 16)


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    commit_ts: int  # microseconds since 2000-01-01 UTC
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True, slots=True)
class Origin:
    commit_lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    is_key: bool
    name: str
    type_oid: int
    type_modifier: int


ReplicaIdentity = Literal["d", "n", "f", "i"]


@dataclass(frozen=True, slots=True)
class Relation:
    oid: int
    namespace: str
    name: str
    replica_identity: ReplicaIdentity
    columns: tuple[RelationColumn, ...]

    @property
    def key_columns(self) -> tuple[RelationColumn, ...]:
        return tuple(c for c in self.columns if c.is_key)


@dataclass(frozen=True, slots=True)
class Type:
    oid: int
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Insert:
    relation_oid: int
    new: TupleData


@dataclass(frozen=True, slots=True)
class Update:
    relation_oid: int
    #: 'K' (key columns of the old row), 'O' (the whole old row) or None (key unchanged).
    old_kind: Literal["K", "O"] | None
    old: TupleData | None
    new: TupleData


@dataclass(frozen=True, slots=True)
class Delete:
    relation_oid: int
    old_kind: Literal["K", "O"]
    old: TupleData


@dataclass(frozen=True, slots=True)
class Truncate:
    relation_oids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


@dataclass(frozen=True, slots=True)
class Message:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


PgOutputMessage = Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | Message


class _Reader:
    """Sequential reads over one message; every read checks the bounds."""

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: bytes | memoryview, what: str) -> None:
        self.buf = bytes(buf)
        self.pos = 0
        self.what = what

    def _need(self, n: int) -> None:
        if self.pos + n > len(self.buf):
            raise PgOutputError(
                f"{self.what} message truncated: needs {n} bytes at offset {self.pos}, has {len(self.buf) - self.pos}"
            )

    def _unpack(self, s: struct.Struct) -> int:
        self._need(s.size)
        (value,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return int(value)

    def i8(self) -> int:
        return self._unpack(_I8)

    def u8(self) -> int:
        return self._unpack(_U8)

    def i16(self) -> int:
        return self._unpack(_I16)

    def i32(self) -> int:
        return self._unpack(_I32)

    def u32(self) -> int:
        return self._unpack(_U32)

    def i64(self) -> int:
        return self._unpack(_I64)

    def u64(self) -> int:
        return self._unpack(_U64)

    def char(self) -> str:
        return chr(self.u8())

    def raw(self, n: int) -> bytes:
        if n < 0:
            raise PgOutputError(f"{self.what} message has a negative length {n} at offset {self.pos}")
        self._need(n)
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def string(self) -> str:
        end = self.buf.find(b"\0", self.pos)
        if end < 0:
            raise PgOutputError(f"{self.what} message truncated: unterminated string at offset {self.pos}")
        out = self.buf[self.pos : end].decode("utf-8")
        self.pos = end + 1
        return out

    def tuple_data(self) -> TupleData:
        count = self.i16()
        if count < 0:
            raise PgOutputError(f"{self.what} message has a negative column count {count}")
        values: list[ColumnValue] = []
        for _ in range(count):
            kind = self.char()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            elif kind == "t":
                values.append(self.raw(self.i32()).decode("utf-8"))
            elif kind == "b":
                values.append(self.raw(self.i32()))
            else:
                raise PgOutputError(f"{self.what} message has an unknown tuple value kind {kind!r} at offset {self.pos - 1}")
        return tuple(values)

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise PgOutputError(f"{self.what} message has {len(self.buf) - self.pos} trailing bytes")


def _begin(r: _Reader) -> Begin:
    return Begin(final_lsn=r.u64(), commit_ts=r.i64(), xid=r.u32())


def _commit(r: _Reader) -> Commit:
    return Commit(flags=r.u8(), commit_lsn=r.u64(), end_lsn=r.u64(), commit_ts=r.i64())


def _origin(r: _Reader) -> Origin:
    return Origin(commit_lsn=r.u64(), name=r.string())


def _relation(r: _Reader) -> Relation:
    oid, namespace, name = r.u32(), r.string(), r.string()
    identity = r.char()
    if identity not in ("d", "n", "f", "i"):
        raise PgOutputError(f"Relation message has an unknown replica identity {identity!r}")
    count = r.i16()
    columns = tuple(
        RelationColumn(is_key=bool(r.u8() & 1), name=r.string(), type_oid=r.u32(), type_modifier=r.i32())
        for _ in range(count)
    )
    return Relation(oid, namespace, name, identity, columns)  # type: ignore[arg-type]


def _type(r: _Reader) -> Type:
    return Type(oid=r.u32(), namespace=r.string(), name=r.string())


def _expect(r: _Reader, allowed: str) -> str:
    tag = r.char()
    if tag not in allowed:
        raise PgOutputError(f"{r.what} message has tuple tag {tag!r} where one of {list(allowed)} belongs")
    return tag


def _insert(r: _Reader) -> Insert:
    oid = r.u32()
    _expect(r, "N")
    return Insert(oid, r.tuple_data())


def _update(r: _Reader) -> Update:
    oid = r.u32()
    tag = _expect(r, "KON")
    if tag == "N":
        return Update(oid, None, None, r.tuple_data())
    old = r.tuple_data()
    _expect(r, "N")
    return Update(oid, tag, old, r.tuple_data())  # type: ignore[arg-type]


def _delete(r: _Reader) -> Delete:
    oid = r.u32()
    tag = _expect(r, "KO")
    return Delete(oid, tag, r.tuple_data())  # type: ignore[arg-type]


def _truncate(r: _Reader) -> Truncate:
    count = r.i32()
    if count < 0:
        raise PgOutputError(f"Truncate message has a negative relation count {count}")
    options = r.u8()
    oids = tuple(r.u32() for _ in range(count))
    return Truncate(oids, cascade=bool(options & 1), restart_identity=bool(options & 2))


def _message(r: _Reader) -> Message:
    flags = r.u8()
    lsn = r.u64()
    prefix = r.string()
    content = r.raw(r.i32())
    return Message(transactional=bool(flags & 1), lsn=lsn, prefix=prefix, content=content)


_DECODERS: dict[str, tuple[str, Callable[[_Reader], PgOutputMessage]]] = {
    "B": ("Begin", _begin),
    "C": ("Commit", _commit),
    "O": ("Origin", _origin),
    "R": ("Relation", _relation),
    "Y": ("Type", _type),
    "I": ("Insert", _insert),
    "U": ("Update", _update),
    "D": ("Delete", _delete),
    "T": ("Truncate", _truncate),
    "M": ("Message", _message),
}


def decode_message(payload: bytes | memoryview) -> PgOutputMessage:
    """One pgoutput (protocol v1) message -> its dataclass; :class:`PgOutputError` if malformed."""
    if len(payload) == 0:
        raise PgOutputError("empty logical replication message")
    tag = chr(payload[0])
    entry = _DECODERS.get(tag)
    if entry is None:
        raise PgOutputError(f"unknown logical replication message tag {tag!r} (0x{payload[0]:02x})")
    name, decoder = entry
    reader = _Reader(payload, name)
    reader.pos = 1
    message: PgOutputMessage = decoder(reader)
    reader.end()
    return message


class RelationCache:
    """The latest Relation (and Type) message per oid, as a session of the stream sent them."""

    def __init__(self) -> None:
        self._relations: dict[int, Relation] = {}
        self._types: dict[int, Type] = {}

    def add(self, message: Relation | Type) -> None:
        if isinstance(message, Relation):
            self._relations[message.oid] = message
        else:
            self._types[message.oid] = message

    def relation(self, oid: int) -> Relation:
        try:
            return self._relations[oid]
        except KeyError:
            raise PgOutputError(f"a change to relation {oid} arrived before its Relation message") from None

    def type(self, oid: int) -> Type | None:
        return self._types.get(oid)


__all__ = [
    "PG_EPOCH_OFFSET_US",
    "UNCHANGED_TOAST",
    "Begin",
    "ColumnValue",
    "Commit",
    "Delete",
    "Insert",
    "Message",
    "Origin",
    "PgOutputError",
    "PgOutputMessage",
    "Relation",
    "RelationCache",
    "RelationColumn",
    "ReplicaIdentity",
    "Truncate",
    "TupleData",
    "Type",
    "UnchangedToast",
    "Update",
    "decode_message",
    "format_lsn",
    "parse_lsn",
    "pg_timestamp_to_datetime",
    "pg_timestamp_to_unix_us",
]
