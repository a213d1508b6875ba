"""Streaming from the replication slot: pgoutput messages in, Debezium change records out.

:class:`LogicalStream` runs one ``START_REPLICATION`` session (psycopg2's
``LogicalReplicationConnection``, protocol version 1, the connector's publication) and turns the
messages into :class:`~zurau.connect.records.SourceRecord`s in commit order; PostgreSQL sends only
committed transactions, each whole, in commit order, so an aborted transaction never shows up.

Positions and offsets. Every transaction is known by the LSN of its commit record (``Begin``'s
``final_lsn``), every change by its own LSN. A change record's source offset is
``{"lsn_commit": C, "lsn": E, "event_part": k, "lsn_proc": E, "txId", "ts_usec"}`` (``k`` numbers
the records of one change: a delete and its tombstone are parts 0 and 1). A position-only offset
(heartbeats) is ``{"lsn_commit": P, "lsn_proc": P}``: every transaction committed before ``P`` is
done. PostgreSQL's own rule makes resuming exact: ``START_REPLICATION`` at ``P`` (or a flush
acknowledgement of ``P``) skips exactly the transactions whose commit record lies before ``P``,
and resends the others whole. So a session resumed at ``C`` from a change offset resends
transaction ``C`` whole, and :class:`LogicalStream` drops its records up to ``(E, k)``; one
resumed from a position-only offset drops nothing.

Signals and incremental snapshots. A :class:`StreamObserver` (the task's) sees every change of
the signaling table (``signal.data.collection``) and the keys of every captured change, in stream
order, and may add records to a change: the rows of an incremental snapshot's window are emitted
as further parts of the change that carries its high watermark. Every record's offset carries the
observer's ``offset_fields()`` (the incremental snapshot's progress). A signal at or before the
resume point (it was handled before the restart) is not seen again: a signal's own position is
part -1 of its change, so records placed just before it (part -2) make it run again after a
restart.

Relation messages (sent before a relation's first change in a session and after every change of
its definition, such as an added column) replace the table's :class:`TableSchema`, built from the
message's columns plus the catalog's nullability and primary key.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg2
import psycopg2.errors

from zurau.connect.api import ConnectException, RetriableException
from zurau.connect.postgres.catalog import describe_table
from zurau.connect.postgres.change_events import SourceInfo, TableSchema
from zurau.connect.postgres.config import PostgresConnectorConfig
from zurau.connect.postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    PgOutputError,
    PgOutputMessage,
    Relation,
    RelationCache,
    Truncate,
    TupleData,
    Type,
    Update,
    decode_message,
    pg_timestamp_to_unix_us,
)
from zurau.connect.postgres.replication import connect_replication, translate
from zurau.connect.postgres.type_mapping import MappingOptions
from zurau.connect.records import SourceRecord

log = logging.getLogger("zurau.connect.postgres")


@dataclass(frozen=True, order=True)
class ResumePoint:
    """The last record already handed over: transaction ``lsn_commit``, change ``lsn``, part."""

    lsn_commit: int
    lsn: int
    event_part: int

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | None) -> ResumePoint | None:
        if not offset or offset.get("lsn") is None or offset.get("lsn_commit") is None:
            return None
        return cls(int(offset["lsn_commit"]), int(offset["lsn"]), int(offset.get("event_part", 0)))


#: One record to make of a change: topic, key schema, key, value schema, value, and offset fields
#: to add (None: the observer's current ones).
Part = tuple[str, Any, Any, Any, Any, "dict[str, Any] | None"]
#: The event part of a signal's own position (see the module docstring).
SIGNAL_PART = -1


class StreamObserver(Protocol):
    def signal_change(self, kind: str, values: TupleData, txn: Begin, lsn: int, last_commit_lsn: int | None) -> list[Part]:
        """A row was inserted (``kind`` "insert") into or deleted ("delete", key columns only)
        from the signaling table; returns records to emit as more parts of this change."""
        ...

    def captured_change(self, collection: str, keys: list[tuple[str | None, ...]] | None) -> None:
        """A change of ``<schema>.<table>`` touched the primary ``keys`` (None: all, a truncate)."""
        ...

    def offset_fields(self) -> dict[str, Any]:
        """Fields every record's offset carries now."""
        ...


def position_offset(lsn: int) -> dict[str, Any]:
    """A position-only offset: every transaction committed before ``lsn`` is done."""
    return {"lsn_commit": lsn, "lsn_proc": lsn}


class LogicalStream:
    """One replication session from ``start_lsn``, skipping records up to ``resume`` (see the
    module docstring). ``catalog_conn`` is an ordinary connection for the catalog lookups."""

    def __init__(
        self,
        config: PostgresConnectorConfig,
        catalog_conn: Any,
        start_lsn: int,
        resume: ResumePoint | None,
        last_commit_lsn: int | None,
        observer: StreamObserver | None = None,
    ) -> None:
        self.config = config
        self.observer = observer
        self.signal_table = config.signal_data_collection
        self.catalog_conn = catalog_conn
        self.start_lsn = start_lsn
        self.resume = resume
        self.options = MappingOptions(config.decimal_handling_mode, config.time_precision_mode, config.binary_handling_mode)
        self.relations = RelationCache()
        self.schemas: dict[int, TableSchema] = {}
        self.txn: Begin | None = None
        #: End LSN of the last transaction fully read: everything committed before it is processed.
        self.processed_lsn = start_lsn
        self.last_commit_lsn = last_commit_lsn
        self.conn: Any = None
        self.cursor: Any = None
        self.flushed_lsn = 0

    # -- session ---------------------------------------------------------------------------------
    def open(self, slot_busy_timeout: float = 15.0) -> None:
        """Start streaming; waits up to ``slot_busy_timeout`` seconds while the slot is still held
        by a session that is going away (the walsender of a stopped task lingers briefly)."""
        deadline = time.monotonic() + slot_busy_timeout
        while True:
            self.conn = connect_replication(self.config)
            self.cursor = self.conn.cursor()
            try:
                self._start()
                return
            except psycopg2.errors.ObjectInUse as e:
                self.close()
                if time.monotonic() >= deadline:
                    raise RetriableException(f"replication slot {self.config.slot_name!r} is in use: {str(e).strip()}") from e
                time.sleep(0.1)

    def _start(self) -> None:
        try:
            self.cursor.start_replication(
                slot_name=self.config.slot_name,
                decode=False,
                start_lsn=self.start_lsn,
                options={"proto_version": "1", "publication_names": self.config.publication_name},
            )
        except psycopg2.errors.ObjectInUse:
            raise
        except psycopg2.Error as e:
            raise translate(e, f"starting replication from slot {self.config.slot_name!r}") from e

    def close(self) -> None:
        conn, self.conn, self.cursor = self.conn, None, None
        if conn is not None:
            try:
                conn.close()
            except psycopg2.Error:
                pass

    @property
    def in_transaction(self) -> bool:
        return self.txn is not None

    def safe_position(self) -> int:
        """An LSN below which every transaction has been read (the server's last reported
        position when between transactions)."""
        position = self.processed_lsn
        if self.txn is None and self.cursor is not None:
            position = max(position, int(self.cursor.wal_end or 0))
        return position

    def send_feedback(self, flush_lsn: int) -> None:
        """Acknowledge ``flush_lsn`` to the server (the slot may then drop older WAL)."""
        if self.cursor is None or flush_lsn <= self.flushed_lsn:
            return
        try:
            # force: psycopg2 otherwise holds feedback back until its status interval (10 s) passed
            self.cursor.send_feedback(write_lsn=flush_lsn, flush_lsn=flush_lsn, apply_lsn=flush_lsn, force=True)
        except psycopg2.Error as e:
            raise translate(e, "sending feedback") from e
        self.flushed_lsn = flush_lsn

    # -- reading ---------------------------------------------------------------------------------
    def read(self, max_records: int, timeout: float, stopping: Callable[[], bool]) -> list[SourceRecord]:
        """Records of the messages that arrive within ``timeout`` seconds (fewer if
        ``max_records`` is reached at a message boundary, or ``stopping()`` turns true)."""
        assert self.cursor is not None, "stream not open"
        records: list[SourceRecord] = []
        deadline = time.monotonic() + timeout
        try:
            while len(records) < max_records and not stopping():
                message = self.cursor.read_message()
                if message is None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or (records and self.txn is None):
                        break
                    select.select([self.conn], [], [], min(remaining, 0.2))
                    continue
                records.extend(self._handle(decode_message(message.payload), int(message.data_start)))
        except psycopg2.Error as e:
            raise translate(e, f"streaming from slot {self.config.slot_name!r}") from e
        except PgOutputError as e:
            raise ConnectException(f"cannot decode a pgoutput message: {e}") from e
        return records

    def _table_schema(self, oid: int) -> TableSchema:
        schema = self.schemas.get(oid)
        if schema is None:
            relation = self.relations.relation(oid)
            try:
                table = describe_table(self.catalog_conn, oid)
            except psycopg2.Error as e:
                raise translate(e, f"describing relation {oid}") from e
            schema = TableSchema.for_relation(
                self.config.topic_prefix, relation, table, self.options, self.config.unavailable_value_placeholder
            )
            self.schemas[oid] = schema
        return schema

    def _handle(self, message: PgOutputMessage, lsn: int) -> list[SourceRecord]:
        if isinstance(message, Begin):
            self.txn = message
            return []
        if isinstance(message, Commit):
            self.txn = None
            self.processed_lsn = max(self.processed_lsn, message.end_lsn)
            self.last_commit_lsn = message.end_lsn
            if self.resume is not None and message.commit_lsn >= self.resume.lsn_commit:
                self.resume = None
            return []
        if isinstance(message, Relation):
            self.relations.add(message)
            self.schemas.pop(message.oid, None)
            return []
        if isinstance(message, Type):
            self.relations.add(message)
            return []
        if isinstance(message, (Insert, Update, Delete, Truncate)):
            if self.txn is None:
                raise ConnectException(f"a {type(message).__name__} message outside a transaction at LSN {lsn}")
            return self._change(message, lsn, self.txn)
        return []  # Origin, Message: nothing to emit

    def _captured(self, oid: int) -> bool:
        relation = self.relations.relation(oid)
        return self.config.table_filter.includes(relation.namespace, relation.name)

    def _change(self, message: Insert | Update | Delete | Truncate, lsn: int, txn: Begin) -> list[SourceRecord]:
        commit_us = pg_timestamp_to_unix_us(txn.commit_ts)
        source = SourceInfo(
            server_name=self.config.topic_prefix,
            db=self.config.dbname,
            ts_us=commit_us,
            snapshot="false",
            last_commit_lsn=self.last_commit_lsn,
            lsn=lsn,
            tx_id=txn.xid,
        )
        skipped = self.config.skipped_operations
        parts: list[Part] = []
        if isinstance(message, Truncate):
            for oid in message.relation_oids:
                if not self._captured(oid):
                    continue
                table = self._table_schema(oid)
                if self.observer is not None:
                    self.observer.captured_change(f"{table.schema_name}.{table.table_name}", None)
                if "t" in skipped:
                    continue
                envelope = table.envelope("t", None, None, source.struct(table.schema_name, table.table_name))
                parts.append((table.topic, None, None, table.envelope_schema, envelope, None))
            return self._records(parts, txn, lsn, commit_us)
        extra = self._signal(message, txn, lsn)
        if not self._captured(message.relation_oid):
            return self._records(extra, txn, lsn, commit_us) if extra else []
        table = self._table_schema(message.relation_oid)
        if self.observer is not None and table.key_schema is not None:
            self.observer.captured_change(f"{table.schema_name}.{table.table_name}", self._keys(table, message))
        src = source.struct(table.schema_name, table.table_name)
        if isinstance(message, Insert):
            if "c" not in skipped:
                parts.append(self._event(table, "c", None, message.new, src))
        elif isinstance(message, Delete):
            if "d" not in skipped:
                parts += self._delete(table, message.old, src)
        else:
            parts += self._update(table, message, src, skipped)
        return self._records(parts + extra, txn, lsn, commit_us)

    @staticmethod
    def _keys(table: TableSchema, message: Insert | Update | Delete) -> list[tuple[str | None, ...]]:
        def text(values: TupleData) -> tuple[str | None, ...]:
            return tuple(v.decode("utf-8") if isinstance(v, bytes) else v if isinstance(v, str) or v is None else str(v)
                         for v in table.key_values(values))

        if isinstance(message, Insert):
            return [text(message.new)]
        if isinstance(message, Delete):
            return [text(message.old)]
        keys = [text(message.new)]
        if message.old is not None:
            keys.append(text(message.old))
        return keys

    def _signal(self, message: Insert | Update | Delete, txn: Begin, lsn: int) -> list[Part]:
        """Hand a change of the signaling table to the observer (unless handled before a restart)."""
        if self.observer is None or self.signal_table is None or isinstance(message, Update):
            return []
        relation = self.relations.relation(message.relation_oid)
        if f"{relation.namespace}.{relation.name}" != self.signal_table:
            return []
        resume = self.resume
        if resume is not None and (
            txn.final_lsn < resume.lsn_commit
            or (txn.final_lsn == resume.lsn_commit and (lsn, SIGNAL_PART) <= (resume.lsn, resume.event_part))
        ):
            return []
        if isinstance(message, Insert):
            return self.observer.signal_change("insert", message.new, txn, lsn, self.last_commit_lsn)
        return self.observer.signal_change("delete", message.old, txn, lsn, self.last_commit_lsn)

    def _event(
        self, table: TableSchema, op: str, before: TupleData | None, after: TupleData | None, src: Any
    ) -> Part:
        keyed = after if after is not None else before
        assert keyed is not None
        envelope = table.envelope(
            op,
            None if before is None else table.row(before),
            None if after is None else table.row(after),
            src,
        )
        return (table.topic, table.key_schema, table.key(keyed), table.envelope_schema, envelope, None)

    def _delete(self, table: TableSchema, old: TupleData, src: Any) -> list[Part]:
        out = [self._event(table, "d", old, None, src)]
        if self.config.tombstones_on_delete:
            out.append((table.topic, table.key_schema, table.key(old), None, None, None))
        return out

    def _update(self, table: TableSchema, message: Update, src: Any, skipped: frozenset[str]) -> list[Part]:
        old = message.old
        if old is not None and table.key_schema is not None and table.key_values(old) != table.key_values(message.new):
            # The primary key changed: Debezium's delete (with tombstone) of the old key, then a create.
            out = [] if "d" in skipped else self._delete(table, old, src)
            if "c" not in skipped:
                out.append(self._event(table, "c", None, message.new, src))
            return out
        if "u" in skipped:
            return []
        before = old if message.old_kind == "O" else None
        return [self._event(table, "u", before, message.new, src)]

    def _records(self, parts: list[Part], txn: Begin, lsn: int, commit_us: int) -> list[SourceRecord]:
        out = []
        fields = self.observer.offset_fields() if self.observer is not None else {}
        for part, (topic, key_schema, key, value_schema, value, extra) in enumerate(parts):
            if self.resume is not None and txn.final_lsn == self.resume.lsn_commit and (lsn, part) <= (
                self.resume.lsn,
                self.resume.event_part,
            ):
                continue
            offset = {
                "lsn_commit": txn.final_lsn,
                "lsn": lsn,
                "event_part": part,
                "lsn_proc": lsn,
                "txId": txn.xid,
                "ts_usec": commit_us,
            }
            offset.update(fields if extra is None else extra)
            out.append(
                SourceRecord(
                    source_partition=self.config.source_partition,
                    source_offset=offset,
                    topic=topic,
                    key_schema=key_schema,
                    key=key,
                    value_schema=value_schema,
                    value=value,
                )
            )
        return out


__all__ = ["SIGNAL_PART", "LogicalStream", "Part", "ResumePoint", "StreamObserver", "position_offset"]
