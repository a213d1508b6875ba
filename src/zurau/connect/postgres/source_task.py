"""The CDC source task: snapshot, then stream; acknowledge to PostgreSQL only what Kafka has.

Start-up (``snapshot.mode`` and the committed offset decide):

* the publication is created or checked (``publication.autocreate.mode``);
* if the slot is missing it is created; when a snapshot is due the slot exports its snapshot and
  the snapshot reads the tables in it, so streaming starts exactly where the snapshot ends;
* a committed offset but no slot means the changes since that offset are gone: the task fails
  saying so, unless ``snapshot.mode`` is ``when_needed`` or ``always`` (then it re-snapshots);
* a snapshot interrupted by a crash (its last record's offset never committed) is taken again.

Delivery. Records carry offsets as :mod:`streaming` describes. The worker calls
:meth:`commit_record` for each record Kafka acknowledged and :meth:`commit` after flushing
offsets; the task then acknowledges to PostgreSQL (``flush_lsn``) the commit LSN of the oldest
transaction with a record still unacknowledged (or, with none, the position every handed-over
record is behind), so the slot never drops WAL whose changes are not in Kafka. After a restart the
task resumes from the committed offset; changes between it and the crash are produced again (at
least once, in commit order), except the already-committed records of the transaction the offset
points into, which are skipped.

Signals (``signal.data.collection``, ``signal.enabled.channels``; see :mod:`.signals`) arrive in the
stream (source channel) or are read from Kafka before each stream read (kafka channel). An
incremental snapshot (:mod:`.incremental_snapshot`) reads its chunks on a connection of its own
while streaming goes on; the task is the stream's observer: it keeps the window, emits its rows at
the high watermark and puts the snapshot's progress into every offset, so a restart resumes it. A
blocking snapshot pauses streaming where its signal was seen, reads the chosen tables (``op: "r"``,
``source.snapshot`` first/true/last...) in one REPEATABLE READ transaction, then streaming goes on.
Its rows' offsets point just before the signal (part -2; the last row at the signal itself, part
-1), so a crash during it takes it again and one after it does not.

PostgreSQL going away (a broken connection, a restart) does not fail the task: ``poll`` returns
nothing, and every ``retriable.restart.connector.wait.ms`` it reconnects and resumes after the last
record it handed over, failing only after ``errors.max.retries`` attempts (-1: never). A dropped
replication slot fails the task with a message saying what was lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from zurau.connect.api import ConnectException, RetriableException, SourceRecord, SourceTask
from zurau.connect.postgres.catalog import CatalogTable, list_tables
from zurau.connect.postgres.change_events import (
    HEARTBEAT_KEY_SCHEMA,
    HEARTBEAT_VALUE_SCHEMA,
    SourceInfo,
    TableSchema,
    heartbeat_key,
    heartbeat_value,
)
from zurau.connect.postgres.config import PostgresConnectorConfig
from zurau.connect.postgres.incremental_snapshot import (
    WINDOW_CLOSE,
    WINDOW_OPEN,
    ChunkReader,
    DataCollection,
    IncrementalSnapshotContext,
    IncrementalSnapshotter,
    WindowRow,
)
from zurau.connect.postgres.pgoutput import Begin, TupleData, format_lsn, parse_lsn, pg_timestamp_to_unix_us
from zurau.connect.postgres.replication import (
    check_server,
    connect,
    connect_replication,
    create_slot,
    drop_slot,
    ensure_publication,
    pg_errors,
    slot_info,
)
from zurau.connect.postgres.signals import (
    CHANNEL_OFFSET,
    EXECUTE_SNAPSHOT,
    LOG,
    PAUSE_SNAPSHOT,
    RESUME_SNAPSHOT,
    STOP_SNAPSHOT,
    KafkaSignalChannel,
    Signal,
    SnapshotRequest,
    parse_snapshot_request,
    parse_stop_request,
    signal_from_row,
)
from zurau.connect.postgres.snapshot import SnapshotReader, SnapshotRow
from zurau.connect.postgres.streaming import SIGNAL_PART, LogicalStream, Part, ResumePoint, position_offset
from zurau.connect.postgres.type_mapping import MappingOptions

log = logging.getLogger("zurau.connect.postgres")


@dataclass
class BlockingSnapshot:
    """A requested blocking snapshot: the tables, their SELECTs, and the offsets its rows carry."""

    tables: list[str]
    queries: dict[str, str]
    offset: dict[str, Any]
    last_offset: dict[str, Any]
    lsn: int | None
    channel_offset: int | None = None
    reader: SnapshotReader | None = None
    schemas: dict[int, TableSchema] = field(default_factory=dict)


class PostgresSourceTask(SourceTask):
    """Debezium-compatible change data capture from one PostgreSQL database (one task)."""

    def __init__(self) -> None:
        self.config: PostgresConnectorConfig | None = None
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._stopping = threading.Event()
        self._catalog: Any = None
        self._snapshot: SnapshotReader | None = None
        self._snapshot_lsn = 0
        self._snapshot_schemas: dict[int, TableSchema] = {}
        self._stream: LogicalStream | None = None
        self._stream_after_snapshot: tuple[int, ResumePoint | None] | None = None
        self._idle = False
        # Where streaming resumes after a reconnect: the last record handed to the worker.
        self._handed_resume: ResumePoint | None = None
        self._handed_position = 0
        self._last_commit_lsn: int | None = None
        # Delivery tracking: unacknowledged records per transaction commit LSN.
        self._outstanding: Counter[int] = Counter()
        self._pending_flush = 0
        self._reconnect_at: float | None = None
        self._failures = 0
        self._last_error = ""
        self._last_heartbeat = time.monotonic()
        # Signals and ad-hoc snapshots.
        self._incremental = IncrementalSnapshotContext()
        self._snapshotter: IncrementalSnapshotter | None = None
        self._chunk_conn: Any = None
        self._resume_chunk = False
        self._kafka_signals: KafkaSignalChannel | None = None
        self._channel_offset: int | None = None
        self._blocking: BlockingSnapshot | None = None
        self._incremental_schemas: dict[tuple[str, int], TableSchema] = {}

    def version(self) -> str:
        from zurau import __version__

        return __version__

    # -- start -----------------------------------------------------------------------------------
    def start(self, config: dict[str, str]) -> None:
        try:
            self._start(config)
        except BaseException:
            self._release()  # a failed start leaves no connection behind
            raise

    def _start(self, config: dict[str, str]) -> None:
        cfg = self.config = PostgresConnectorConfig.from_props(config)
        offset = self.context.offset_storage_reader.offset(cfg.source_partition)
        self._catalog = connect(cfg)
        check_server(self._catalog)
        ensure_publication(self._catalog, cfg)
        slot = slot_info(self._catalog, cfg.slot_name)
        if slot is not None and (slot.plugin != "pgoutput" or slot.database != cfg.dbname):
            raise ConnectException(
                f"replication slot {cfg.slot_name!r} exists for plugin {slot.plugin!r} on database {slot.database!r}; "
                f"this connector needs pgoutput on {cfg.dbname!r}: choose another slot.name"
            )
        snapshot_done = offset is not None and not (offset.get("snapshot") and not offset.get("last_snapshot_record"))
        mode = cfg.snapshot_mode
        if slot is None and offset is not None and snapshot_done and mode not in ("when_needed", "always", "initial_only"):
            raise ConnectException(
                f"replication slot {cfg.slot_name!r} does not exist, but this connector already streamed changes up to "
                f"LSN {format_lsn(int(offset.get('lsn_commit', 0)))}: the changes made since are lost. "
                "Delete the connector's offsets to start over with a new snapshot, or set snapshot.mode=when_needed"
            )
        if mode == "always":
            snapshot = True
        elif mode in ("never", "no_data"):
            snapshot = False
        elif mode == "when_needed":
            snapshot = not snapshot_done or slot is None
        else:
            snapshot = not snapshot_done
        if mode == "initial_only":
            if snapshot:
                self._begin_snapshot(None)
            else:
                self._idle = True
            self._stream_after_snapshot = None
            return
        if slot is None:
            repl = connect_replication(cfg)
            try:
                created = create_slot(repl, cfg.slot_name, export_snapshot=snapshot)
                log.info("created replication slot %s at %s", cfg.slot_name, format_lsn(created.consistent_point))
                if snapshot:
                    self._begin_snapshot(created.snapshot_name)
                    self._snapshot_lsn = created.consistent_point
            finally:
                repl.close()
            start_lsn, resume = created.consistent_point, None
        else:
            if snapshot:
                self._begin_snapshot(None)
            start_lsn = int(offset["lsn_commit"]) if offset and snapshot_done and "lsn_commit" in offset else 0
            resume = ResumePoint.from_offset(offset) if snapshot_done and not offset_is_snapshot(offset) else None
        self._handed_position = start_lsn
        self._handed_resume = resume
        self._start_signals(offset if snapshot_done and not offset_is_snapshot(offset) else None)
        if self._snapshot is not None:
            self._stream_after_snapshot = (start_lsn, resume)
        else:
            self._open_stream(start_lsn, resume)

    def _start_signals(self, offset: dict[str, Any] | None) -> None:
        """Open what signals need; restore an incremental snapshot in progress from ``offset``."""
        cfg = self.config
        assert cfg is not None
        self._incremental = IncrementalSnapshotContext.from_offset(offset)
        if offset and offset.get(CHANNEL_OFFSET) is not None:
            self._channel_offset = int(offset[CHANNEL_OFFSET])
        if cfg.signal_data_collection or self._incremental.running:
            if not cfg.signal_data_collection:
                log.warning("an incremental snapshot is in the offsets but signal.data.collection is not set: dropped")
                self._incremental = IncrementalSnapshotContext()
            else:
                self._chunk_conn = connect(cfg)
                reader = ChunkReader(self._chunk_conn, cfg.signal_data_collection, cfg.watermarking_strategy)
                self._snapshotter = IncrementalSnapshotter(self._incremental, reader, cfg.incremental_snapshot_chunk_size)
                self._resume_chunk = self._incremental.running
                if self._resume_chunk:
                    log.info("resuming the incremental snapshot of %s after key %s",
                             [c.id for c in self._incremental.collections], self._incremental.chunk_end)
        if "kafka" in cfg.signal_channels and cfg.signal_kafka_bootstrap_servers:
            start = None if self._channel_offset is None else self._channel_offset + 1
            self._kafka_signals = KafkaSignalChannel(
                cfg.signal_kafka_bootstrap_servers, cfg.signal_kafka_topic, cfg.topic_prefix, start
            )

    def _begin_snapshot(self, snapshot_name: str | None) -> None:
        cfg = self.config
        assert cfg is not None
        tables = list_tables(self._catalog, cfg.table_filter)
        conn = connect(cfg, autocommit=False)
        try:
            self._snapshot = SnapshotReader(conn, tables, snapshot_name, cfg.snapshot_fetch_size)
        except BaseException:
            conn.close()
            raise
        self._snapshot_lsn = parse_lsn(self._snapshot.own_lsn_text)
        log.info("snapshot of %d tables started", len(tables))

    def _open_stream(self, start_lsn: int, resume: ResumePoint | None) -> None:
        cfg = self.config
        assert cfg is not None
        stream = LogicalStream(cfg, self._catalog, start_lsn, resume, self._last_commit_lsn, observer=self)
        stream.open()
        self._stream = stream
        log.info("streaming from slot %s at %s", cfg.slot_name, format_lsn(start_lsn))

    # -- poll ------------------------------------------------------------------------------------
    def poll(self) -> list[SourceRecord] | None:
        cfg = self.config
        assert cfg is not None
        if self._stopping.is_set():
            return []
        with self._poll_lock:
            if self._snapshot is not None:
                return self._poll_snapshot()
            if self._idle:
                time.sleep(cfg.poll_interval_ms / 1000)
                return []
            if self._stream is None and not self._reconnect():
                return []
            stream = self._stream
            assert stream is not None
            try:
                stream.send_feedback(self._flush_target())
                if self._blocking is not None:
                    return self._poll_blocking(stream)
                if self._resume_chunk and self._snapshotter is not None:
                    self._resume_chunk = False
                    self._snapshotter.read_chunk()
                if self._kafka_signals is not None:
                    self._read_kafka_signals(cfg)
                    if self._blocking is not None:
                        return self._poll_blocking(stream)
                records = stream.read(
                    cfg.max_batch_size,
                    cfg.poll_interval_ms / 1000,
                    lambda: self._stopping.is_set() or self._blocking is not None,
                )
            except RetriableException as e:
                self._lost(e)
                return []
            heartbeat = self._heartbeat(stream)
            if heartbeat is not None:
                records.append(heartbeat)
            self._hand_over(records, stream)
            return records

    def _poll_snapshot(self) -> list[SourceRecord]:
        cfg = self.config
        assert cfg is not None and self._snapshot is not None
        rows = self._snapshot.rows(cfg.max_batch_size)
        records = [self._snapshot_record(row) for row in rows]
        if not rows:
            self._snapshot.close()
            self._snapshot = None
            log.info("snapshot complete")
            if self._stream_after_snapshot is None:
                self._idle = True
            else:
                start_lsn, resume = self._stream_after_snapshot
                try:
                    self._open_stream(start_lsn, resume)
                except RetriableException as e:
                    self._lost(e)  # poll reconnects from the same position
        return records

    def _snapshot_record(self, row: SnapshotRow) -> SourceRecord:
        cfg = self.config
        assert cfg is not None and self._snapshot is not None
        table = self._snapshot_table(row.table)
        source = SourceInfo(
            server_name=cfg.topic_prefix,
            db=cfg.dbname,
            ts_us=self._snapshot.ts_us,
            snapshot=row.marker,
            last_commit_lsn=None,
            lsn=self._snapshot_lsn,
            tx_id=int(self._snapshot.tx_id),
        )
        envelope = table.envelope("r", None, table.row(row.values), source.struct(table.schema_name, table.table_name))
        offset = {
            "snapshot": True,
            "last_snapshot_record": row.marker == "last",
            "lsn_commit": self._snapshot_lsn,
            "lsn_proc": self._snapshot_lsn,
            "txId": int(self._snapshot.tx_id),
            "ts_usec": self._snapshot.ts_us,
        }
        return SourceRecord(
            source_partition=cfg.source_partition,
            source_offset=offset,
            topic=table.topic,
            key_schema=table.key_schema,
            key=table.key(row.values),
            value_schema=table.envelope_schema,
            value=envelope,
        )

    def _snapshot_table(self, table: CatalogTable) -> TableSchema:
        cfg = self.config
        assert cfg is not None
        schema = self._snapshot_schemas.get(table.oid)
        if schema is None:
            options = MappingOptions(cfg.decimal_handling_mode, cfg.time_precision_mode, cfg.binary_handling_mode)
            schema = TableSchema.for_table(cfg.topic_prefix, table, options, cfg.unavailable_value_placeholder)
            self._snapshot_schemas[table.oid] = schema
        return schema

    def _heartbeat(self, stream: LogicalStream) -> SourceRecord | None:
        cfg = self.config
        assert cfg is not None
        if cfg.heartbeat_interval_ms <= 0 or stream.in_transaction:
            return None
        now = time.monotonic()
        if now - self._last_heartbeat < cfg.heartbeat_interval_ms / 1000:
            return None
        self._last_heartbeat = now
        return SourceRecord(
            source_partition=cfg.source_partition,
            source_offset={**position_offset(stream.safe_position()), **self.offset_fields()},
            topic=cfg.heartbeat_topic,
            key_schema=HEARTBEAT_KEY_SCHEMA,
            key=heartbeat_key(cfg.topic_prefix),
            value_schema=HEARTBEAT_VALUE_SCHEMA,
            value=heartbeat_value(time.time_ns() // 1_000_000),
        )

    def _hand_over(self, records: list[SourceRecord], stream: LogicalStream) -> None:
        """Note what the worker now holds: the records to wait acknowledgements for, and where a
        reconnect resumes."""
        with self._lock:
            for record in records:
                offset = record.source_offset or {}
                self._outstanding[int(offset["lsn_commit"])] += 1
                point = ResumePoint.from_offset(offset)
                if point is not None:
                    self._handed_resume = point
            self._handed_position = stream.safe_position() if not stream.in_transaction else stream.processed_lsn
            self._last_commit_lsn = stream.last_commit_lsn

    # -- signals (the stream's observer) -------------------------------------------------------
    def offset_fields(self) -> dict[str, Any]:
        fields = self._incremental.offset_fields()
        if self._channel_offset is not None:
            fields[CHANNEL_OFFSET] = self._channel_offset
        return fields

    def captured_change(self, collection: str, keys: list[tuple[str | None, ...]] | None) -> None:
        if keys is None:
            self._incremental.truncated(collection)
        elif self._incremental.deduplicate(collection, keys):
            log.debug("incremental snapshot: %s rows of the window superseded by a streamed change", collection)

    def signal_change(self, kind: str, values: TupleData, txn: Begin, lsn: int, last_commit_lsn: int | None) -> list[Part]:
        if kind == "delete":  # insert_delete watermarking: deleting the open row closes the window
            raw = values[0] if values else None
            signal_id = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw or "")
            if signal_id.endswith("-open"):
                return self._handle_signal(Signal(signal_id, WINDOW_CLOSE), (txn, lsn, last_commit_lsn))
            return []
        signal = signal_from_row(values)
        if signal is None:
            return []
        cfg = self.config
        assert cfg is not None
        if signal.type not in (WINDOW_OPEN, WINDOW_CLOSE) and "source" not in cfg.signal_channels:
            log.info("signal %s (%s) in the signaling table ignored: the source channel is not enabled", signal.id, signal.type)
            return []
        return self._handle_signal(signal, (txn, lsn, last_commit_lsn))

    def _read_kafka_signals(self, cfg: PostgresConnectorConfig) -> None:
        assert self._kafka_signals is not None
        for offset, signal in self._kafka_signals.read(cfg.signal_kafka_poll_timeout_ms):
            log.info("kafka signal %s (%s) at offset %d", signal.id, signal.type, offset)
            self._handle_signal(signal, None, channel_offset=offset)
            if self._blocking is None or self._blocking.channel_offset != offset:
                self._channel_offset = offset
            if self._blocking is not None:
                break  # the rest waits until the blocking snapshot is done

    def _handle_signal(
        self, signal: Signal, position: tuple[Begin, int, int | None] | None, channel_offset: int | None = None
    ) -> list[Part]:
        """Run one signal; ``position`` is where the stream saw it (None: from Kafka)."""
        kind = signal.type
        context = self._incremental
        if kind == WINDOW_OPEN:
            context.open_window(signal.id)
            return []
        if kind == WINDOW_CLOSE:
            rows = context.close_window(signal.id)
            if rows is None:
                return []
            assert position is not None
            parts = [self._window_part(row, *position) for row in rows]
            if self._snapshotter is not None:
                self._snapshotter.read_chunk()
            return parts
        if kind == EXECUTE_SNAPSHOT:
            request = parse_snapshot_request(signal.data)
            if request is not None:
                self._execute_snapshot(signal, request, position, channel_offset)
        elif kind == STOP_SNAPSHOT:
            snapshot_type, patterns = parse_stop_request(signal.data)
            if snapshot_type != "incremental":
                log.warning("stop-snapshot of type %s: only incremental snapshots can be stopped", snapshot_type)
            else:
                removed = context.stop(patterns)
                log.info("stop-snapshot: %s removed from the incremental snapshot", removed or "nothing")
                if removed and context.running and not context.awaiting_close and self._snapshotter is not None:
                    self._snapshotter.read_chunk()
        elif kind == PAUSE_SNAPSHOT:
            if context.running:
                log.info("incremental snapshot paused")
                context.paused = True
        elif kind == RESUME_SNAPSHOT:
            if context.paused:
                log.info("incremental snapshot resumed")
                context.paused = False
                if context.running and not context.awaiting_close and self._snapshotter is not None:
                    self._snapshotter.read_chunk()
        elif kind == LOG:
            message = str(signal.data.get("message", ""))
            where = "{}" if position is None else f"{{lsn_commit={position[0].final_lsn}, lsn={position[1]}}}"
            log.info(message.replace("{}", where, 1) if "{}" in message else message)
        else:
            log.warning("unknown signal type %r (id %s): ignored", kind, signal.id)
        return []

    def _captured_tables(self) -> list[str]:
        cfg = self.config
        assert cfg is not None
        with pg_errors("listing the captured tables"):
            tables = list_tables(self._catalog, cfg.table_filter)
        return [f"{schema}.{name}" for _, schema, name in tables if f"{schema}.{name}" != cfg.signal_data_collection]

    def _execute_snapshot(
        self,
        signal: Signal,
        request: SnapshotRequest,
        position: tuple[Begin, int, int | None] | None,
        channel_offset: int | None,
    ) -> None:
        tables = request.tables(self._captured_tables())
        if not tables:
            log.warning("execute-snapshot %s: no table to snapshot", signal.id)
            return
        if request.kind == "blocking":
            self._blocking = self._blocking_request(request, tables, position, channel_offset)
            log.info("blocking snapshot of %s requested: streaming pauses", tables)
            return
        if self._snapshotter is None:
            log.warning("execute-snapshot %s: incremental snapshots need signal.data.collection (their "
                        "watermarks go there) and the source channel", signal.id)
            return
        if request.surrogate_key:
            log.warning("execute-snapshot %s: surrogate-key is not supported; the primary key is used", signal.id)
        was_running = self._incremental.running
        added = self._incremental.add(
            [DataCollection(t, request.condition_for(t)) for t in tables], signal.id or None
        )
        log.info("incremental snapshot of %s requested (%s)", [c.id for c in added], signal.id)
        if added and not was_running:
            self._snapshotter.read_chunk()

    def _window_part(self, row: WindowRow, txn: Begin, lsn: int, last_commit_lsn: int | None) -> Part:
        cfg = self.config
        assert cfg is not None and self._snapshotter is not None
        table = self._snapshotter.tables[row.collection]
        schema = self._incremental_schemas.get((row.collection, table.oid))
        if schema is None:
            options = MappingOptions(cfg.decimal_handling_mode, cfg.time_precision_mode, cfg.binary_handling_mode)
            schema = TableSchema.for_table(cfg.topic_prefix, table, options, cfg.unavailable_value_placeholder)
            self._incremental_schemas[(row.collection, table.oid)] = schema
        source = SourceInfo(
            server_name=cfg.topic_prefix,
            db=cfg.dbname,
            ts_us=time.time_ns() // 1000,
            snapshot="incremental",
            last_commit_lsn=last_commit_lsn,
            lsn=lsn,
            tx_id=txn.xid,
        )
        envelope = schema.envelope("r", None, schema.row(row.values), source.struct(schema.schema_name, schema.table_name))
        self._incremental.sent(row.key)
        return (schema.topic, schema.key_schema, schema.key(row.values), schema.envelope_schema, envelope, self.offset_fields())

    # -- blocking snapshots ------------------------------------------------------------------------
    def _blocking_request(
        self,
        request: SnapshotRequest,
        tables: list[str],
        position: tuple[Begin, int, int | None] | None,
        channel_offset: int | None,
    ) -> BlockingSnapshot:
        queries = {t: request.condition_for(t) for t in tables if request.condition_for(t)}
        if position is not None:
            txn, lsn, _ = position
            base = {
                "lsn_commit": txn.final_lsn,
                "lsn": lsn,
                "event_part": SIGNAL_PART - 1,
                "lsn_proc": lsn,
                "txId": txn.xid,
                "ts_usec": pg_timestamp_to_unix_us(txn.commit_ts),
            }
            last = {**base, "event_part": SIGNAL_PART}
            return BlockingSnapshot(tables, queries, base, last, lsn)
        with self._lock:
            point = self._handed_position
        base = position_offset(point)
        return BlockingSnapshot(tables, queries, base, dict(base), None, channel_offset)

    def _poll_blocking(self, stream: LogicalStream) -> list[SourceRecord]:
        cfg = self.config
        assert cfg is not None and self._blocking is not None
        blocking = self._blocking
        if blocking.reader is None:
            with pg_errors("listing the tables of the blocking snapshot"):
                listed = {f"{schema}.{name}": (oid, schema, name) for oid, schema, name in list_tables(self._catalog, cfg.table_filter)}
            chosen = [listed[t] for t in blocking.tables if t in listed]
            queries = {listed[t][0]: q for t, q in blocking.queries.items() if t in listed}
            conn = connect(cfg, autocommit=False)
            try:
                blocking.reader = SnapshotReader(conn, chosen, None, cfg.snapshot_fetch_size, queries)
            except BaseException:
                conn.close()
                raise
            log.info("blocking snapshot of %s started", blocking.tables)
        reader = blocking.reader
        rows = reader.rows(cfg.max_batch_size)
        records = []
        for row in rows:
            last = row.marker == "last"
            if last and blocking.channel_offset is not None:
                self._channel_offset = blocking.channel_offset
            offset = {**(blocking.last_offset if last else blocking.offset), **self.offset_fields()}
            records.append(self._blocking_record(row, reader, blocking, offset, stream))
        if not rows or rows[-1].marker == "last":
            reader.close()
            if blocking.channel_offset is not None:
                self._channel_offset = blocking.channel_offset
            self._blocking = None
            log.info("blocking snapshot complete: streaming resumes")
        self._hand_over(records, stream)
        return records

    def _blocking_record(
        self, row: SnapshotRow, reader: SnapshotReader, blocking: BlockingSnapshot, offset: dict[str, Any], stream: LogicalStream
    ) -> SourceRecord:
        cfg = self.config
        assert cfg is not None
        schema = blocking.schemas.get(row.table.oid)
        if schema is None:
            options = MappingOptions(cfg.decimal_handling_mode, cfg.time_precision_mode, cfg.binary_handling_mode)
            schema = blocking.schemas[row.table.oid] = TableSchema.for_table(
                cfg.topic_prefix, row.table, options, cfg.unavailable_value_placeholder
            )
        source = SourceInfo(
            server_name=cfg.topic_prefix,
            db=cfg.dbname,
            ts_us=reader.ts_us,
            snapshot=row.marker,
            last_commit_lsn=stream.last_commit_lsn,
            lsn=blocking.lsn,
            tx_id=int(reader.tx_id),
        )
        envelope = schema.envelope("r", None, schema.row(row.values), source.struct(schema.schema_name, schema.table_name))
        return SourceRecord(
            source_partition=cfg.source_partition,
            source_offset=offset,
            topic=schema.topic,
            key_schema=schema.key_schema,
            key=schema.key(row.values),
            value_schema=schema.envelope_schema,
            value=envelope,
        )

    # -- acknowledgements ------------------------------------------------------------------------
    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        offset = record.source_offset or {}
        if offset.get("snapshot") or "lsn_commit" not in offset:
            return
        key = int(offset["lsn_commit"])
        with self._lock:
            if self._outstanding[key] > 1:
                self._outstanding[key] -= 1
            else:
                self._outstanding.pop(key, None)

    def commit(self) -> None:
        with self._lock:
            target = min(self._outstanding) if self._outstanding else self._handed_position
            self._pending_flush = max(self._pending_flush, target)

    def _flush_target(self) -> int:
        with self._lock:
            return self._pending_flush

    # -- failures --------------------------------------------------------------------------------
    def _lost(self, error: Exception) -> None:
        cfg = self.config
        assert cfg is not None
        self._failures += 1
        self._last_error = str(error)
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if cfg.max_retries >= 0 and self._failures > cfg.max_retries:
            raise ConnectException(
                f"PostgreSQL is unreachable after {self._failures} attempts; the last error: {error}"
            ) from error
        log.warning("lost the PostgreSQL connection (%s); reconnecting in %d ms", error, cfg.retry_wait_ms)
        self._reconnect_at = time.monotonic() + cfg.retry_wait_ms / 1000

    def _reconnect(self) -> bool:
        """Try to resume streaming after a failure; False when it is not time yet or it failed."""
        cfg = self.config
        assert cfg is not None
        if self._reconnect_at is not None and time.monotonic() < self._reconnect_at:
            time.sleep(min(cfg.poll_interval_ms / 1000, self._reconnect_at - time.monotonic()))
            return False
        try:
            if self._catalog is not None:
                try:
                    self._catalog.close()
                except Exception:  # a broken connection may fail to close; it is dropped anyway
                    pass
            self._catalog = connect(cfg)
            slot = slot_info(self._catalog, cfg.slot_name)
            if slot is None:
                raise ConnectException(
                    f"replication slot {cfg.slot_name!r} was dropped: the changes after LSN "
                    f"{format_lsn(self._handed_position)} are lost. Delete the connector's offsets and restart it "
                    "to take a new snapshot"
                )
            with self._lock:
                resume = self._handed_resume
                start = resume.lsn_commit if resume is not None and resume.lsn_commit >= self._handed_position else self._handed_position
                if resume is not None and resume.lsn_commit < start:
                    resume = None
            self._open_stream(start, resume)
        except RetriableException as e:
            self._lost(e)
            return False
        self._resume_chunk = self._incremental.running  # the chunk in flight may have been lost
        self._failures = 0
        self._reconnect_at = None
        log.info("reconnected to PostgreSQL")
        return True

    # -- stop ------------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stopping.set()
        acquired = self._poll_lock.acquire(timeout=10)
        try:
            self._release(drop_slot_now=True)
        finally:
            if acquired:
                self._poll_lock.release()

    def _release(self, drop_slot_now: bool = False) -> None:
        """Close every connection (dropping the slot first when ``slot.drop.on.stop``)."""
        if self._kafka_signals is not None:
            self._kafka_signals.close()
            self._kafka_signals = None
        for conn in (self._chunk_conn, self._blocking.reader.conn if self._blocking and self._blocking.reader else None):
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # already broken
                    pass
        self._chunk_conn = None
        self._blocking = None
        try:
            if self._stream is not None:
                self._stream.close()
                self._stream = None
            if self._snapshot is not None:
                try:
                    self._snapshot.close()
                except Exception:  # the connection may already be gone
                    pass
                self._snapshot = None
            cfg = self.config
            if drop_slot_now and cfg is not None and cfg.slot_drop_on_stop:
                with pg_errors(f"dropping replication slot {cfg.slot_name!r}"):
                    if self._catalog is None or self._catalog.closed:
                        self._catalog = connect(cfg)
                    drop_slot(self._catalog, cfg.slot_name)
        finally:
            if self._catalog is not None:
                try:
                    self._catalog.close()
                except Exception:  # already broken
                    pass
                self._catalog = None


def offset_is_snapshot(offset: Any) -> bool:
    return bool(offset and offset.get("snapshot"))


__all__ = ["PostgresSourceTask"]
