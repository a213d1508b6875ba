"""Applies row changes to PostgreSQL: table creation and evolution, then batched statements, all
in the caller's transaction.

Invariants: a batch of changes is applied in record order (consecutive changes of the same shape,
same table, operation and columns, go to the server together through ``execute_batch``, one
statement per row, so a key written twice in a batch ends with its last value); nothing is
committed here (the task commits once per ``put``); the column cache of a table is dropped when a
transaction rolls back, since the DDL in it rolled back too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg2
import psycopg2.extras
from psycopg2 import sql

from zurau.connect.api import ConnectException
from zurau.connect.jdbc_sink import dialect
from zurau.connect.jdbc_sink.config import SinkConfig
from zurau.connect.jdbc_sink.rows import DELETE, RowChange

_COLUMNS = """
SELECT column_name FROM information_schema.columns
WHERE table_schema = COALESCE(%s, current_schema()) AND table_name = %s
"""


class TableWriter:
    def __init__(self, config: SinkConfig, conn: Any) -> None:
        self.config = config
        self.conn = conn
        self.columns: dict[tuple[str | None, str], set[str]] = {}

    def _known_columns(self, cur: Any, schema: str | None, table: str) -> set[str]:
        key = (schema, table)
        if key not in self.columns:
            cur.execute(_COLUMNS, (schema, table))
            self.columns[key] = {row[0] for row in cur.fetchall()}
        return self.columns[key]

    def _ensure_table(self, cur: Any, change: RowChange) -> None:
        """Create the table or add columns as the settings allow; else fail with what is missing."""
        where = f"{change.schema}.{change.table}" if change.schema else change.table
        existing = self._known_columns(cur, change.schema, change.table)
        ident = dialect.table_identifier(change.schema, change.table)
        if not existing:
            if change.op == DELETE:
                return  # nothing to delete from; a later write creates the table
            if not self.config.auto_create:
                raise ConnectException(f'table "{where}" does not exist and table creation is off '
                                       "(schema.evolution=basic or auto.create=true creates it)")
            columns = [(c.name, dialect.column_type(c.schema), c.schema.optional and c.name not in change.keys)
                       for c in change.columns]
            cur.execute(dialect.create_table(ident, columns, change.keys))
            self.columns[(change.schema, change.table)] = {c.name for c in change.columns}
            return
        missing = [c for c in change.columns if c.name not in existing]
        if not missing:
            return
        if not self.config.auto_evolve:
            raise ConnectException(f'table "{where}" has no column(s) {", ".join(c.name for c in missing)} '
                                   "and schema evolution is off (schema.evolution=basic or auto.evolve=true adds them)")
        for c in missing:
            cur.execute(dialect.add_column(ident, c.name, dialect.column_type(c.schema)))
            existing.add(c.name)

    def _statement(self, change: RowChange) -> tuple[sql.Composed, list[str]] | None:
        """The statement for changes shaped like ``change`` and the column order of its parameters
        (None: nothing to do, an update of a row that has only key columns)."""
        ident = dialect.table_identifier(change.schema, change.table)
        names = list(change.column_names)
        keys = list(change.keys)
        if change.op == DELETE:
            return dialect.delete(ident, keys), keys
        mode = self.config.insert_mode
        if mode == "upsert":
            return dialect.upsert(ident, names, keys), names
        if mode == "update":
            others = [n for n in names if n not in keys]
            if not others:
                return None
            return dialect.update(ident, names, keys), others + keys
        return dialect.insert(ident, names), names

    def apply(self, changes: Sequence[RowChange]) -> None:
        """Execute ``changes`` in order inside the connection's open transaction."""
        with self.conn.cursor() as cur:
            i = 0
            while i < len(changes):
                first = changes[i]
                shape = (first.schema, first.table, first.op, first.column_names)
                j = i
                while j < len(changes) and (changes[j].schema, changes[j].table, changes[j].op,
                                             changes[j].column_names) == shape:
                    j += 1
                self._ensure_table(cur, first)
                if first.op == DELETE and not self.columns.get((first.schema, first.table)):
                    i = j
                    continue
                planned = self._statement(first)
                if planned is None:
                    i = j
                    continue
                statement, order = planned
                params = []
                for change in changes[i:j]:
                    by_name = {c.name: c for c in change.columns}
                    params.append([dialect.bind_value(by_name[n].schema, by_name[n].value) for n in order])
                psycopg2.extras.execute_batch(cur, statement, params, page_size=self.config.batch_size)
                i = j

    def rolled_back(self) -> None:
        """Forget cached columns: DDL of the rolled back transaction is gone."""
        self.columns.clear()
