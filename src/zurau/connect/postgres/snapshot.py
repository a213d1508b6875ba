"""The initial consistent snapshot: every captured table read in one REPEATABLE READ transaction.

When the slot was created with an exported snapshot, the transaction adopts it (``SET TRANSACTION
SNAPSHOT``), so the rows read are exactly the database as of the slot's consistent point and
streaming from the slot continues with the first transaction after it: nothing is missed and
nothing is read twice. Without one (the slot existed already) the transaction takes its own
snapshot, and streaming from the slot's position may repeat changes the snapshot already shows.

:class:`SnapshotReader` yields rows as text (a typecaster keeps psycopg2 from parsing them), table
by table in name order, through a server-side cursor ``snapshot.fetch.size`` rows at a time.
Each row comes with its marker for ``source.snapshot``: ``first`` (the snapshot's first row),
``first_in_data_collection`` (a later table's first row), ``true``, ``last_in_data_collection``
(a table's last row) and ``last`` (the snapshot's last row); a one-row look-ahead decides them.
``queries`` replaces a table's ``SELECT`` by the user's (the columns are taken by name from it):
blocking snapshots' ``additional-conditions``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg2.extensions
from psycopg2 import sql

from zurau.connect.postgres.catalog import CatalogTable, describe_table
from zurau.connect.postgres.replication import pg_errors
from zurau.connect.postgres.type_mapping import BUILTIN_TYPE_NAMES


def _as_text(value: str | None, _cursor: Any) -> str | None:
    return value


@dataclass(frozen=True)
class SnapshotRow:
    table: CatalogTable
    values: tuple[str | None, ...]
    marker: str


class SnapshotReader:
    """Reads the tables ``tables`` (``(oid, schema, name)``) on ``conn`` (a fresh connection,
    not autocommit) in one REPEATABLE READ transaction, adopting ``snapshot_name`` if given."""

    def __init__(
        self,
        conn: Any,
        tables: list[tuple[int, str, str]],
        snapshot_name: str | None,
        fetch_size: int,
        queries: Mapping[int, str] | None = None,
    ) -> None:
        self.conn = conn
        #: A table's rows from a SELECT of the user (blocking snapshots' additional conditions).
        self.queries = dict(queries or {})
        self.tables = tables
        self.fetch_size = fetch_size
        self.ts_us = time.time_ns() // 1000
        with pg_errors("starting the snapshot transaction"):
            conn.set_session(isolation_level=psycopg2.extensions.ISOLATION_LEVEL_REPEATABLE_READ, readonly=False)
            with conn.cursor() as cur:
                if snapshot_name is not None:
                    cur.execute("SET TRANSACTION SNAPSHOT %s", (snapshot_name,))
                cur.execute("SELECT txid_current(), pg_current_wal_lsn()::text")
                self.tx_id, lsn_text = cur.fetchone()
        self.own_lsn_text: str = lsn_text
        self._rows = self._pairs()

    def _table_rows(self, table: CatalogTable) -> Iterator[tuple[str | None, ...]]:
        oids = set(BUILTIN_TYPE_NAMES) | {c.type.oid for c in table.columns}
        caster = psycopg2.extensions.new_type(tuple(oids), "ZURAU_TEXT", _as_text)
        psycopg2.extensions.register_type(caster, self.conn)
        columns = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns)
        override = self.queries.get(table.oid)
        if override is not None:
            query = sql.SQL("SELECT {} FROM ({}) AS zurau_selected").format(columns, sql.SQL(override.rstrip().rstrip(";")))
        else:
            query = sql.SQL("SELECT {} FROM {}.{}").format(columns, sql.Identifier(table.schema), sql.Identifier(table.name))
        with self.conn.cursor(name=f"zurau_snapshot_{table.oid}") as cur:
            cur.itersize = self.fetch_size
            cur.execute(query)
            for row in cur:
                yield tuple(row)

    def _pairs(self) -> Iterator[SnapshotRow]:
        pending: tuple[CatalogTable, tuple[str | None, ...], bool] | None = None
        first_overall = True
        for oid, schema, name in self.tables:
            with pg_errors(f"describing {schema}.{name} for the snapshot"):
                table = describe_table(self.conn, oid)
            if table is None or not table.columns:
                continue
            first_in_table = True
            with pg_errors(f"reading {schema}.{name} for the snapshot"):
                for values in self._table_rows(table):
                    if pending is not None:
                        yield SnapshotRow(pending[0], pending[1], _marker(pending[2], first_overall, table is pending[0], False))
                        first_overall = False
                    pending = (table, values, first_in_table)
                    first_in_table = False
        if pending is not None:
            yield SnapshotRow(pending[0], pending[1], _marker(pending[2], first_overall, False, True))

    def rows(self, limit: int) -> list[SnapshotRow]:
        """Up to ``limit`` more rows ([] when the snapshot is complete)."""
        out: list[SnapshotRow] = []
        for row in self._rows:
            out.append(row)
            if len(out) >= limit:
                break
        return out

    def close(self) -> None:
        try:
            self.conn.rollback()
        finally:
            self.conn.close()


def _marker(first_in_table: bool, first_overall: bool, next_same_table: bool, last_overall: bool) -> str:
    if last_overall:
        return "last"
    if first_overall:
        return "first"
    if first_in_table:
        return "first_in_data_collection"
    if not next_same_table:
        return "last_in_data_collection"
    return "true"


__all__ = ["SnapshotReader", "SnapshotRow"]
