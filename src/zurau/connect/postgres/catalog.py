"""What PostgreSQL's catalog says about the captured tables: which tables exist, their columns'
types, nullability and primary key.

pgoutput's Relation message names a relation's columns and type oids but not which columns are
NOT NULL, their defaults, nor which form the primary key (under ``REPLICA IDENTITY FULL`` it marks every column
as part of the identity), and snapshots have no Relation message at all, so the connector asks the
catalog over an ordinary connection. Generated columns are left out, as pgoutput leaves them out
of its messages. Every function takes a psycopg2 connection (autocommit, or
inside the caller's transaction) and only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zurau.connect.postgres.config import TableFilter
from zurau.connect.postgres.type_mapping import PgType


@dataclass(frozen=True)
class CatalogColumn:
    name: str
    type: PgType
    nullable: bool
    #: 0-based position in the primary key, None when the column is not part of it.
    key_position: int | None
    #: The column's DEFAULT expression as ``pg_get_expr`` prints it (``'x'::text``, ``nextval(...)``).
    default_expression: str | None = None


@dataclass(frozen=True)
class CatalogTable:
    oid: int
    schema: str
    name: str
    #: ``pg_class.relreplident``: d default, n nothing, f full, i index.
    replica_identity: str
    columns: tuple[CatalogColumn, ...]

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def column(self, name: str) -> CatalogColumn | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None


_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY n.nspname, c.relname
"""

_TABLE_SQL = """
SELECT n.nspname, c.relname, c.relreplident
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = %s
"""

_COLUMNS_SQL = """
SELECT a.attname, a.atttypmod, a.attnotnull,
       t.oid, t.typname, t.typtype, t.typtypmod,
       et.oid, et.typname, et.typtype,
       bt.oid, bt.typname, bt.typtype,
       (SELECT array_position(i.indkey::int2[], a.attnum) FROM pg_index i
         WHERE i.indrelid = a.attrelid AND i.indisprimary),
       CASE WHEN t.typtype = 'e'
            THEN ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder)
       END,
       pg_get_expr(ad.adbin, ad.adrelid)
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
LEFT JOIN pg_type bt ON bt.oid = t.typbasetype AND t.typtype = 'd'
LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum AND a.atthasdef
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attnum
"""


def list_tables(conn: Any, table_filter: TableFilter) -> list[tuple[int, str, str]]:
    """``(oid, schema, table)`` of every ordinary or partitioned table the filter captures, in
    name order."""
    with conn.cursor() as cur:
        cur.execute(_TABLES_SQL)
        rows = cur.fetchall()
    return [(int(oid), schema, name) for oid, schema, name in rows if table_filter.includes(schema, name)]


def _column_type(row: tuple[Any, ...]) -> PgType:
    (_, typmod, _, oid, name, kind, domain_typmod, e_oid, e_name, e_kind, b_oid, b_name, b_kind, _, labels, _) = row
    if kind == "d" and b_oid is not None:  # a domain: its base type, with the domain's modifier
        return PgType(int(b_oid), b_name, typmod if typmod != -1 else domain_typmod, b_kind)
    element = PgType(int(e_oid), e_name, -1, e_kind) if e_oid is not None else None
    return PgType(int(oid), name, typmod, kind, element, tuple(labels or ()))


def describe_table(conn: Any, oid: int) -> CatalogTable | None:
    """The table with ``oid`` as the catalog now describes it (None when it no longer exists)."""
    with conn.cursor() as cur:
        cur.execute(_TABLE_SQL, (oid,))
        head = cur.fetchone()
        if head is None:
            return None
        cur.execute(_COLUMNS_SQL, (oid,))
        rows = cur.fetchall()
    columns = tuple(
        CatalogColumn(
            name=row[0],
            type=_column_type(row),
            nullable=not row[2],
            key_position=None if row[13] is None else int(row[13]),  # indkey is 0-based
            default_expression=row[15],
        )
        for row in rows
    )
    schema, name, identity = head
    return CatalogTable(oid, schema, name, identity, columns)


__all__ = ["CatalogColumn", "CatalogTable", "describe_table", "list_tables"]
