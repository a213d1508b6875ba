"""Incremental snapshots: tables read in primary-key chunks while streaming goes on, with
Debezium's watermarks (the DBLog algorithm) so that no streamed change is lost and no snapshot row
lands after a newer change of its key.

One chunk, step by step (:meth:`IncrementalSnapshotter.read_chunk`):

1. the *low watermark*: a row ``(<chunk id>-open, snapshot-window-open, NULL)`` is inserted into
   the signaling table (``signal.data.collection``) and committed;
2. the chunk is read: ``SELECT <columns> FROM t WHERE (pk) > (last key) AND (pk) <= (maximum key)
   [AND (additional condition)] ORDER BY pk LIMIT incremental.snapshot.chunk.size`` (its own
   READ COMMITTED statement, so it sees every transaction committed before it started, which
   includes the low watermark);
3. the rows go into the *window buffer*, keyed by primary key, in key order;
4. the *high watermark*: ``(<chunk id>-close, snapshot-window-close, NULL)`` is inserted (with
   ``incremental.snapshot.watermarking.strategy=insert_delete`` the open row is deleted instead).

The replication stream then delivers, in commit order, the low watermark, every change committed
between the watermarks, and the high watermark (:class:`IncrementalSnapshotContext`):

* once the low watermark is seen the window is *open*: each streamed change of the chunk's table
  removes its key(s) from the buffer (the streamed event itself is emitted as usual);
* at the high watermark the window closes and the remaining buffered rows are emitted as ``op:
  "r"`` events (``source.snapshot = "incremental"``), then the next chunk is read.

Why this is right, per key *k* of the chunk: a change committed before the low watermark is
streamed before the buffer is emitted and the SELECT (which started after the low watermark)
already shows it, so the snapshot row is at least as new; a change committed between the
watermarks may or may not be in the SELECT's view, so the snapshot row is dropped and the streamed
event (at least as new) stands; a change committed after the high watermark is streamed after the
buffer. So the last event of every key is the table's state, and no snapshot read follows a newer
change of its key.

Progress is kept in the connector's source offsets with Debezium's field names, on every record
while a snapshot runs: ``incremental_snapshot_collections`` (JSON: ``[{"incremental_snapshot_
collections_id": "public.t", "incremental_snapshot_collections_additional_condition": ...,
"incremental_snapshot_collections_surrogate_key": null}, ...]``, the current table first),
``incremental_snapshot_primary_key`` (the key of the last snapshot row handed over),
``incremental_snapshot_maximum_key`` and ``incremental_snapshot_correlation_id``. Keys are stored
as the hex of the JSON list of the key columns' text values -- our own encoding (Debezium's is
Java serialization), so offsets written by Debezium are not read back. After a restart the
snapshot resumes with a new chunk after the stored primary key; watermarks of chunks of the
previous run are ignored (their chunk ids do not match).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg2.extensions
from psycopg2 import sql

from zurau.connect.postgres.catalog import CatalogTable, describe_table
from zurau.connect.postgres.replication import pg_errors
from zurau.connect.postgres.type_mapping import BUILTIN_TYPE_NAMES

log = logging.getLogger("zurau.connect.postgres")

WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"

COLLECTIONS = "incremental_snapshot_collections"
COLLECTION_ID = "incremental_snapshot_collections_id"
COLLECTION_CONDITION = "incremental_snapshot_collections_additional_condition"
COLLECTION_SURROGATE_KEY = "incremental_snapshot_collections_surrogate_key"
PRIMARY_KEY = "incremental_snapshot_primary_key"
MAXIMUM_KEY = "incremental_snapshot_maximum_key"
CORRELATION_ID = "incremental_snapshot_correlation_id"
OFFSET_FIELDS = (COLLECTIONS, PRIMARY_KEY, MAXIMUM_KEY, CORRELATION_ID)

#: A primary key as the text values of its columns, in key order.
Key = tuple[str | None, ...]
#: A row as the text values of all its columns, in catalog order.
Row = tuple[str | None, ...]


def encode_key(key: Key | None) -> str | None:
    """A key for the offsets: hex of its JSON list (None stays None)."""
    if key is None:
        return None
    return json.dumps(list(key), separators=(",", ":")).encode("utf-8").hex()


def decode_key(text: Any) -> Key | None:
    if not text:
        return None
    try:
        values = json.loads(bytes.fromhex(str(text)).decode("utf-8"))
    except ValueError:
        log.warning(
            "cannot read incremental snapshot key %r from the offsets (not written by this connector?)", text
        )
        return None
    return tuple(None if v is None else str(v) for v in values)


def text_key(values: Iterable[Any]) -> Key:
    """A key from pgoutput or SELECT values (text, bytes or None)."""
    return tuple(v.decode("utf-8") if isinstance(v, bytes) else None if v is None else str(v) for v in values)


@dataclass(frozen=True)
class DataCollection:
    """One table to snapshot: ``id`` is ``<schema>.<table>``."""

    id: str
    additional_condition: str = ""
    surrogate_key: str = ""

    def as_offset(self) -> dict[str, Any]:
        return {
            COLLECTION_ID: self.id,
            COLLECTION_CONDITION: self.additional_condition or None,
            COLLECTION_SURROGATE_KEY: self.surrogate_key or None,
        }


@dataclass(frozen=True)
class WindowRow:
    """A buffered snapshot row: the table's id, the row's key and all its values."""

    collection: str
    key: Key
    values: Row


class IncrementalSnapshotContext:
    """The state of the incremental snapshot: no I/O, so the watermark rules are testable alone.

    Invariants: ``window`` holds rows of ``current`` only, in key order; ``window_open`` is true only
    between the low and high watermark of chunk ``chunk_id``; ``chunk_end`` (exclusive start of the
    next chunk) never passes the key of a buffered row not yet emitted.
    """

    def __init__(self) -> None:
        self.collections: list[DataCollection] = []
        self.chunk_id: str | None = None
        self.window_open = False
        self.window: dict[Key, WindowRow] = {}
        self.chunk_end: Key | None = None
        self.last_sent: Key | None = None
        self.maximum_key: Key | None = None
        self.correlation_id: str | None = None
        self.paused = False
        #: A chunk was read and its high watermark not yet seen.
        self.awaiting_close = False

    # -- collections ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self.collections)

    @property
    def current(self) -> DataCollection | None:
        return self.collections[0] if self.collections else None

    def add(
        self, collections: Iterable[DataCollection], correlation_id: str | None = None
    ) -> list[DataCollection]:
        """Queue tables (one already queued is not queued twice); returns those added."""
        queued = {c.id for c in self.collections}
        added = []
        for c in collections:
            if c.id not in queued:
                queued.add(c.id)
                added.append(c)
        self.collections.extend(added)
        if added:
            self.correlation_id = correlation_id
        return added

    def next_collection(self) -> None:
        """The current table is done (or skipped): forget its chunk state, move to the next."""
        if self.collections:
            self.collections.pop(0)
        self._reset_table()

    def _reset_table(self) -> None:
        self.window.clear()
        self.window_open = False
        self.chunk_end = None
        self.last_sent = None
        self.maximum_key = None

    def stop(self, patterns: Iterable[str]) -> list[str]:
        """Remove the tables matching any of ``patterns`` (regular expressions over ``<schema>.
        <table>``; none: all). Returns the removed ids. Stopping the current table drops its window
        and chunk, so its watermarks still in the stream are ignored."""
        compiled = [re.compile(p) for p in patterns]
        removed = [c.id for c in self.collections if not compiled or any(p.fullmatch(c.id) for p in compiled)]
        if not removed:
            return []
        current = self.current
        self.collections = [c for c in self.collections if c.id not in removed]
        if current is not None and current.id in removed:
            self._reset_table()
            self.chunk_id = None
            self.awaiting_close = False
        if not self.collections:
            self.correlation_id = None
            self.chunk_id = None
            self.awaiting_close = False
        return removed

    # -- chunks and the window -----------------------------------------------------------------
    def start_chunk(self) -> str:
        self.chunk_id = uuid.uuid4().hex
        self.window.clear()
        self.window_open = False
        self.awaiting_close = True
        return self.chunk_id

    def buffer(self, rows: list[WindowRow]) -> None:
        """The rows of the chunk just read (key order); the next chunk starts after the last."""
        for row in rows:
            self.window[row.key] = row
        if rows:
            self.chunk_end = rows[-1].key

    def _ours(self, signal_id: str) -> bool:
        return self.chunk_id is not None and signal_id.startswith(self.chunk_id)

    def open_window(self, signal_id: str) -> bool:
        """The low watermark ``signal_id`` arrived: deduplicate from now on (False if it is not
        the current chunk's, for example one replayed from before a restart)."""
        if not self._ours(signal_id):
            log.info("ignoring window open %s (current chunk %s)", signal_id, self.chunk_id)
            return False
        self.window_open = True
        return True

    def close_window(self, signal_id: str) -> list[WindowRow] | None:
        """The high watermark ``signal_id`` arrived: the rows to emit now (None if not ours)."""
        if not self._ours(signal_id):
            log.info("ignoring window close %s (current chunk %s)", signal_id, self.chunk_id)
            return None
        self.window_open = False
        self.awaiting_close = False
        rows = list(self.window.values())
        self.window.clear()
        return rows

    def deduplicate(self, collection: str, keys: Iterable[Key]) -> int:
        """A streamed change of ``collection`` touched ``keys``: drop them from the open window.
        Returns how many rows were dropped."""
        current = self.current
        if not self.window_open or current is None or current.id != collection:
            return 0
        dropped = 0
        for key in keys:
            if self.window.pop(key, None) is not None:
                dropped += 1
        return dropped

    def truncated(self, collection: str) -> None:
        """The table was truncated inside the window: none of the buffered rows is current."""
        current = self.current
        if self.window_open and current is not None and current.id == collection:
            self.window.clear()

    def sent(self, key: Key) -> None:
        """A snapshot row with ``key`` was handed over."""
        self.last_sent = key

    # -- offsets -------------------------------------------------------------------------------
    def offset_fields(self) -> dict[str, Any]:
        """Debezium's ``incremental_snapshot_*`` fields while a snapshot runs, else nothing."""
        if not self.running:
            return {}
        return {
            COLLECTIONS: json.dumps([c.as_offset() for c in self.collections], separators=(",", ":")),
            PRIMARY_KEY: encode_key(self.last_sent),
            MAXIMUM_KEY: encode_key(self.maximum_key),
            CORRELATION_ID: self.correlation_id,
        }

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | None) -> IncrementalSnapshotContext:
        """The state stored in ``offset``: the snapshot resumes after its primary key."""
        context = cls()
        if not offset or not offset.get(COLLECTIONS):
            return context
        try:
            entries = json.loads(str(offset[COLLECTIONS]))
        except ValueError:
            log.warning(
                "cannot read %s from the offsets: the incremental snapshot is not resumed", COLLECTIONS
            )
            return context
        for entry in entries:
            context.collections.append(
                DataCollection(
                    str(entry[COLLECTION_ID]),
                    entry.get(COLLECTION_CONDITION) or "",
                    entry.get(COLLECTION_SURROGATE_KEY) or "",
                )
            )
        context.last_sent = context.chunk_end = decode_key(offset.get(PRIMARY_KEY))
        context.maximum_key = decode_key(offset.get(MAXIMUM_KEY))
        context.correlation_id = offset.get(CORRELATION_ID)
        return context


def _as_text(value: str | None, _cursor: Any) -> str | None:
    return value


class ChunkReader:
    """The SQL side: watermarks into the signaling table and chunk queries, on ``conn`` (an
    ordinary autocommit connection)."""

    def __init__(self, conn: Any, signal_table: str, strategy: str = "insert_insert") -> None:
        self.conn = conn
        schema, _, name = signal_table.partition(".")
        self.signal_table = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))
        self.strategy = strategy
        self._registered: set[int] = set()

    def open_window(self, chunk_id: str) -> None:
        with pg_errors("writing the incremental snapshot's low watermark"), self.conn.cursor() as cur:
            cur.execute(
                sql.SQL("INSERT INTO {} VALUES (%s, %s, NULL)").format(self.signal_table),
                (f"{chunk_id}-open", WINDOW_OPEN),
            )

    def close_window(self, chunk_id: str) -> None:
        with pg_errors("writing the incremental snapshot's high watermark"), self.conn.cursor() as cur:
            if self.strategy == "insert_delete":
                cur.execute(
                    sql.SQL("DELETE FROM {} WHERE id = %s").format(self.signal_table), (f"{chunk_id}-open",)
                )
            else:
                cur.execute(
                    sql.SQL("INSERT INTO {} VALUES (%s, %s, NULL)").format(self.signal_table),
                    (f"{chunk_id}-close", WINDOW_CLOSE),
                )

    def describe(self, collection: str) -> CatalogTable | None:
        schema, _, name = collection.partition(".")
        with pg_errors(f"looking up {collection}"), self.conn.cursor() as cur:
            cur.execute("SELECT to_regclass(quote_ident(%s) || '.' || quote_ident(%s))::oid", (schema, name))
            row = cur.fetchone()
            if row is None or row[0] is None:
                return None
            return describe_table(self.conn, int(row[0]))

    def _text_results(self, table: CatalogTable) -> None:
        oids = (set(BUILTIN_TYPE_NAMES) | {c.type.oid for c in table.columns}) - self._registered
        if oids:
            caster = psycopg2.extensions.new_type(tuple(oids), "ZURAU_TEXT", _as_text)
            psycopg2.extensions.register_type(caster, self.conn)
            self._registered |= oids

    @staticmethod
    def _key_columns(table: CatalogTable) -> list[str]:
        keyed = sorted(
            (c for c in table.columns if c.key_position is not None), key=lambda c: c.key_position or 0
        )
        return [c.name for c in keyed]

    def maximum_key(self, table: CatalogTable, condition: str) -> Key | None:
        """The largest key now in the table (among rows meeting ``condition``); None if empty."""
        keys = self._key_columns(table)
        self._text_results(table)
        query = sql.SQL("SELECT {} FROM {}.{}{} ORDER BY {} LIMIT 1").format(
            sql.SQL(", ").join(sql.Identifier(k) for k in keys),
            sql.Identifier(table.schema),
            sql.Identifier(table.name),
            sql.SQL(" WHERE ({})").format(sql.SQL(condition)) if condition else sql.SQL(""),
            sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(k)) for k in keys),
        )
        with pg_errors(f"reading the largest key of {table.qualified_name}"), self.conn.cursor() as cur:
            cur.execute(query)
            row = cur.fetchone()
        return None if row is None else text_key(row)

    def read_chunk(
        self, table: CatalogTable, after: Key | None, maximum: Key, condition: str, limit: int
    ) -> list[WindowRow]:
        """Up to ``limit`` rows with ``after`` < key <= ``maximum`` (and ``condition``), in key order."""
        keys = self._key_columns(table)
        self._text_results(table)
        key_list = sql.SQL(", ").join(sql.Identifier(k) for k in keys)
        placeholders = sql.SQL(", ").join(sql.Placeholder() for _ in keys)
        where = [sql.SQL("({}) <= ({})").format(key_list, placeholders)]
        params: list[Any] = list(maximum)
        if after is not None:
            where.insert(0, sql.SQL("({}) > ({})").format(key_list, placeholders))
            params = list(after) + params
        if condition:
            where.append(sql.SQL("({})").format(sql.SQL(condition)))
        query = sql.SQL("SELECT {} FROM {}.{} WHERE {} ORDER BY {} LIMIT {}").format(
            sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns),
            sql.Identifier(table.schema),
            sql.Identifier(table.name),
            sql.SQL(" AND ").join(where),
            key_list,
            sql.Literal(limit),
        )
        positions = [next(i for i, c in enumerate(table.columns) if c.name == k) for k in keys]
        with pg_errors(f"reading a chunk of {table.qualified_name}"), self.conn.cursor() as cur:
            cur.execute(query, params)
            rows = cur.fetchall()
        return [
            WindowRow(table.qualified_name, text_key(row[i] for i in positions), tuple(row)) for row in rows
        ]


class IncrementalSnapshotter:
    """Drives chunks: :meth:`read_chunk` is Debezium's ``readChunk`` (called when a snapshot
    starts or resumes, and after each high watermark)."""

    def __init__(self, context: IncrementalSnapshotContext, reader: ChunkReader, chunk_size: int) -> None:
        self.context = context
        self.reader = reader
        self.chunk_size = chunk_size
        self.tables: dict[str, CatalogTable] = {}
        self.started_ms = int(time.time() * 1000)

    def read_chunk(self) -> None:
        context = self.context
        if not context.running:
            return
        if context.paused:
            log.info("incremental snapshot paused: no chunk read")
            return
        chunk_id = context.start_chunk()
        self.reader.open_window(chunk_id)
        while context.running:
            current = context.current
            assert current is not None
            table = self.reader.describe(current.id)
            if table is None:
                log.warning("incremental snapshot: table %s does not exist; skipped", current.id)
                context.next_collection()
                continue
            if not any(c.key_position is not None for c in table.columns):
                log.warning("incremental snapshot: table %s has no primary key; skipped", current.id)
                context.next_collection()
                continue
            self.tables[current.id] = table
            if context.maximum_key is None:
                context.maximum_key = self.reader.maximum_key(table, current.additional_condition)
                if context.maximum_key is None:
                    log.info("incremental snapshot of %s finished: the table is empty", current.id)
                    context.next_collection()
                    continue
                log.info("incremental snapshot of %s will end at key %s", current.id, context.maximum_key)
            rows = self.reader.read_chunk(
                table, context.chunk_end, context.maximum_key, current.additional_condition, self.chunk_size
            )
            if not rows:
                log.info("incremental snapshot of %s finished", current.id)
                context.next_collection()
                continue
            context.buffer(rows)
            break
        self.reader.close_window(chunk_id)
        if not context.running:
            log.info("incremental snapshot finished")


__all__ = [
    "COLLECTIONS",
    "MAXIMUM_KEY",
    "OFFSET_FIELDS",
    "PRIMARY_KEY",
    "WINDOW_CLOSE",
    "WINDOW_OPEN",
    "ChunkReader",
    "DataCollection",
    "IncrementalSnapshotContext",
    "IncrementalSnapshotter",
    "WindowRow",
    "decode_key",
    "encode_key",
    "text_key",
]
