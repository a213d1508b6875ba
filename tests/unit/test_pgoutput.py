"""The pgoutput decoder on hand-built bytes (formats from PostgreSQL's "Logical Replication
Message Formats"); tests/component/test_postgres_cdc.py decodes a real server's stream."""

from __future__ import annotations

import struct

import pytest

from zurau.connect.postgres.pgoutput import (
    UNCHANGED_TOAST,
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    Origin,
    PgOutputError,
    Relation,
    RelationCache,
    RelationColumn,
    Truncate,
    Type,
    Update,
    decode_message,
    format_lsn,
    parse_lsn,
    pg_timestamp_to_unix_us,
)


def s(text: str) -> bytes:
    return text.encode() + b"\0"


def tuple_data(*values: object) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v is UNCHANGED_TOAST:
            out += b"u"
        elif isinstance(v, bytes):
            out += b"b" + struct.pack(">i", len(v)) + v
        else:
            raw = str(v).encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def test_begin_and_commit() -> None:
    assert decode_message(b"B" + struct.pack(">qqi", 0x16B374D848, 12345, 742)) == Begin(0x16B374D848, 12345, 742)
    raw = b"C" + struct.pack(">bqqq", 0, 100, 200, 999)
    assert decode_message(raw) == Commit(0, 100, 200, 999)


def test_origin_type_and_message() -> None:
    assert decode_message(b"O" + struct.pack(">q", 77) + s("node-a")) == Origin(77, "node-a")
    assert decode_message(b"Y" + struct.pack(">I", 16390) + s("public") + s("mood")) == Type(16390, "public", "mood")
    raw = b"M" + struct.pack(">bq", 1, 555) + s("audit") + struct.pack(">i", 3) + b"\x00\xffz"
    assert decode_message(raw) == Message(True, 555, "audit", b"\x00\xffz")


def test_relation_with_key_columns() -> None:
    raw = (
        b"R"
        + struct.pack(">I", 16385)
        + s("public")
        + s("orders")
        + b"f"
        + struct.pack(">h", 2)
        + b"\x01"
        + s("id")
        + struct.pack(">Ii", 23, -1)
        + b"\x00"
        + s("amount")
        + struct.pack(">Ii", 1700, (10 << 16 | 2) + 4)
    )
    rel = decode_message(raw)
    assert rel == Relation(
        16385,
        "public",
        "orders",
        "f",
        (RelationColumn(True, "id", 23, -1), RelationColumn(False, "amount", 1700, (10 << 16 | 2) + 4)),
    )
    assert isinstance(rel, Relation) and [c.name for c in rel.key_columns] == ["id"]


def test_insert_with_null_text_binary_and_unchanged_values() -> None:
    raw = b"I" + struct.pack(">I", 16385) + b"N" + tuple_data("1", None, UNCHANGED_TOAST, b"\x01\x02", "h\u00e9")
    assert decode_message(raw) == Insert(16385, ("1", None, UNCHANGED_TOAST, b"\x01\x02", "h\u00e9"))


def test_update_forms() -> None:
    oid = struct.pack(">I", 5)
    assert decode_message(b"U" + oid + b"N" + tuple_data("1", "x")) == Update(5, None, None, ("1", "x"))
    assert decode_message(b"U" + oid + b"K" + tuple_data("1", None) + b"N" + tuple_data("2", "x")) == Update(
        5, "K", ("1", None), ("2", "x")
    )
    assert decode_message(b"U" + oid + b"O" + tuple_data("1", "a") + b"N" + tuple_data("1", "b")) == Update(
        5, "O", ("1", "a"), ("1", "b")
    )


def test_delete_and_truncate() -> None:
    assert decode_message(b"D" + struct.pack(">I", 5) + b"K" + tuple_data("9", None)) == Delete(5, "K", ("9", None))
    assert decode_message(b"D" + struct.pack(">I", 5) + b"O" + tuple_data("9", "z")) == Delete(5, "O", ("9", "z"))
    raw = b"T" + struct.pack(">ib", 2, 3) + struct.pack(">II", 5, 6)
    assert decode_message(raw) == Truncate((5, 6), cascade=True, restart_identity=True)
    assert decode_message(b"T" + struct.pack(">ib", 1, 0) + struct.pack(">I", 7)) == Truncate((7,), False, False)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"", "empty"),
        (b"Z\x00", "unknown logical replication message tag 'Z'"),
        (b"B" + struct.pack(">qq", 1, 2), "Begin message truncated"),
        (b"B" + struct.pack(">qqi", 1, 2, 3) + b"x", "1 trailing bytes"),
        (b"Y" + struct.pack(">I", 1) + b"public", "unterminated string"),
        (b"I" + struct.pack(">I", 5) + b"X" + tuple_data("1"), "tuple tag 'X'"),
        (b"I" + struct.pack(">I", 5) + b"N" + struct.pack(">h", 1) + b"q", "unknown tuple value kind 'q'"),
        (b"I" + struct.pack(">I", 5) + b"N" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 10) + b"ab", "truncated"),
        (b"D" + struct.pack(">I", 5) + b"N" + tuple_data("1"), "tuple tag 'N'"),
        (b"R" + struct.pack(">I", 1) + s("a") + s("b") + b"z" + struct.pack(">h", 0), "replica identity 'z'"),
    ],
)
def test_malformed_messages_raise_a_clear_error(raw: bytes, fragment: str) -> None:
    with pytest.raises(PgOutputError, match=fragment.replace("(", r"\(")):
        decode_message(raw)


def test_lsn_text_and_timestamps() -> None:
    assert format_lsn(0x16B374D848) == "16/B374D848"
    assert parse_lsn("16/B374D848") == 0x16B374D848
    assert parse_lsn(format_lsn(0)) == 0
    with pytest.raises(ValueError):
        parse_lsn("nonsense")
    # 2000-01-01 is 946684800 s after the Unix epoch.
    assert pg_timestamp_to_unix_us(0) == 946_684_800_000_000


def test_relation_cache_keeps_the_latest_definition() -> None:
    cache = RelationCache()
    old = Relation(5, "public", "t", "d", (RelationColumn(True, "id", 23, -1),))
    new = Relation(5, "public", "t", "d", (RelationColumn(True, "id", 23, -1), RelationColumn(False, "x", 25, -1)))
    cache.add(old)
    cache.add(new)
    assert cache.relation(5) is new
    with pytest.raises(PgOutputError, match="relation 6"):
        cache.relation(6)
