"""Connections, the publication and the replication slot.

* :func:`connect` opens an ordinary connection and :func:`connect_replication` a logical
  replication connection (psycopg2's ``LogicalReplicationConnection``), both with the session
  settings whose text output formats :mod:`type_mapping` reads (ISO dates, ``postgres`` interval
  style, hex bytea, round-trip floats) — the walsender formats pgoutput's values with them too.
* :func:`check_server` refuses a server without ``wal_level=logical`` or older than 10, naming
  the setting to change.
* :func:`ensure_publication` applies ``publication.autocreate.mode``; :func:`slot_info` and
  :func:`create_slot` look up and create the slot (``CREATE_REPLICATION_SLOT ... LOGICAL pgoutput
  EXPORT_SNAPSHOT`` returns a snapshot name that a REPEATABLE READ transaction can adopt, so the
  snapshot and the slot's start are the same point); :func:`drop_slot` drops it.

Every PostgreSQL error becomes a :class:`~zurau.connect.api.ConnectException` (or its
:class:`~zurau.connect.api.RetriableException` when the server is unreachable) whose message says
what was being done.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg2
import psycopg2.extensions
import psycopg2.extras
from psycopg2 import sql

from zurau.connect.api import ConnectException, RetriableException
from zurau.connect.postgres.catalog import list_tables
from zurau.connect.postgres.config import PostgresConnectorConfig
from zurau.connect.postgres.pgoutput import parse_lsn

#: Session settings fixing the text formats the type mapping parses.
SESSION_OPTIONS = "-c DateStyle=ISO,MDY -c IntervalStyle=postgres -c bytea_output=hex -c extra_float_digits=3"


def is_transient(error: BaseException) -> bool:
    """Whether a psycopg2 error means the server went away or is restarting, rather than that it
    refused what was asked: no SQLSTATE (the connection broke), class 08 (connection exception),
    57 (operator intervention: shutdown, terminated backend) or 53 (insufficient resources)."""
    if isinstance(error, psycopg2.OperationalError) and getattr(error, "pgcode", None) is None:
        return True
    if not isinstance(error, psycopg2.Error):
        return False
    code = error.pgcode
    return code is None or code[:2] in ("08", "57", "53")


def translate(error: BaseException, doing: str) -> ConnectException:
    """The Connect exception for a psycopg2 error raised while ``doing``."""
    text = str(error).strip() or type(error).__name__
    if is_transient(error):
        return RetriableException(f"PostgreSQL went away while {doing}: {text}")
    return ConnectException(f"PostgreSQL refused {doing}: {text}")


@contextmanager
def pg_errors(doing: str) -> Iterator[None]:
    """Turn psycopg2 errors raised while ``doing`` into Connect exceptions that say so."""
    try:
        yield
    except psycopg2.Error as e:
        raise translate(e, doing) from e


def connect(config: PostgresConnectorConfig, *, autocommit: bool = True) -> Any:
    """An ordinary connection to ``database.dbname``."""
    with pg_errors(f"connecting to {config.hostname}:{config.port}/{config.dbname}"):
        conn = psycopg2.connect(options=SESSION_OPTIONS, **config.connect_kwargs())
        conn.autocommit = autocommit
        return conn


def connect_replication(config: PostgresConnectorConfig) -> Any:
    """A logical replication connection to ``database.dbname``."""
    with pg_errors(f"opening a replication connection to {config.hostname}:{config.port}/{config.dbname}"):
        return psycopg2.connect(
            connection_factory=psycopg2.extras.LogicalReplicationConnection,
            options=SESSION_OPTIONS,
            **config.connect_kwargs(),
        )


def check_server(conn: Any) -> int:
    """The server version number; ConnectException unless it can do logical decoding."""
    with pg_errors("reading the server settings"), conn.cursor() as cur:
        cur.execute("SELECT current_setting('wal_level'), current_setting('server_version_num')::int")
        wal_level, version = cur.fetchone()
    if version < 100000:
        raise ConnectException(f"PostgreSQL {version} is too old: pgoutput needs PostgreSQL 10 or later")
    if wal_level != "logical":
        raise ConnectException(
            f"the server has wal_level={wal_level}; logical decoding needs wal_level=logical "
            "(set it in postgresql.conf and restart the server)"
        )
    return int(version)


def _qualified(schema: str, table: str) -> sql.Composed:
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))


def ensure_publication(conn: Any, config: PostgresConnectorConfig) -> None:
    """Create or check the publication as ``publication.autocreate.mode`` says."""
    name = config.publication_name
    mode = config.publication_autocreate_mode
    with pg_errors(f"setting up publication {name!r}"), conn.cursor() as cur:
        cur.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (name,))
        row = cur.fetchone()
        if mode == "disabled":
            if row is None:
                raise ConnectException(
                    f"publication {name!r} does not exist and publication.autocreate.mode=disabled: "
                    f"create it (CREATE PUBLICATION {name} FOR ...) or choose another mode"
                )
            return
        if mode == "all_tables":
            if row is None:
                cur.execute(sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES").format(sql.Identifier(name)))
            return
        if mode == "no_tables":
            if row is None:
                cur.execute(sql.SQL("CREATE PUBLICATION {}").format(sql.Identifier(name)))
            return
        # filtered: exactly the tables the include/exclude lists select, now
        names = [(schema, table) for _, schema, table in list_tables(conn, config.table_filter)]
        if config.signal_data_collection:  # signals and watermarks come through the stream
            signal_schema, _, signal_table = config.signal_data_collection.partition(".")
            if (signal_schema, signal_table) not in names:
                names.append((signal_schema, signal_table))
        tables = [_qualified(schema, table) for schema, table in names]
        if row is not None and row[0]:
            raise ConnectException(
                f"publication {name!r} is FOR ALL TABLES, which publication.autocreate.mode=filtered cannot narrow: "
                "drop it or use another publication.name"
            )
        if not tables:
            raise ConnectException(
                "publication.autocreate.mode=filtered, but table.include.list/table.exclude.list select no table"
            )
        listed = sql.SQL(", ").join(tables)
        if row is None:
            cur.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(sql.Identifier(name), listed))
        else:
            cur.execute(sql.SQL("ALTER PUBLICATION {} SET TABLE {}").format(sql.Identifier(name), listed))


@dataclass(frozen=True)
class SlotInfo:
    plugin: str
    database: str
    active: bool
    confirmed_flush_lsn: int | None


def slot_info(conn: Any, slot_name: str) -> SlotInfo | None:
    """The slot as ``pg_replication_slots`` shows it, None when there is no such slot."""
    with pg_errors(f"looking up replication slot {slot_name!r}"), conn.cursor() as cur:
        cur.execute(
            "SELECT plugin, database, active, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (slot_name,),
        )
        row = cur.fetchone()
    if row is None:
        return None
    plugin, database, active, confirmed = row
    return SlotInfo(plugin or "", database or "", bool(active), parse_lsn(confirmed) if confirmed else None)


@dataclass(frozen=True)
class CreatedSlot:
    consistent_point: int
    snapshot_name: str | None


def create_slot(repl_conn: Any, slot_name: str, *, export_snapshot: bool) -> CreatedSlot:
    """Create the logical slot on a replication connection. With ``export_snapshot`` the returned
    snapshot name is valid until the next command on ``repl_conn``."""
    mode = "EXPORT_SNAPSHOT" if export_snapshot else "NOEXPORT_SNAPSHOT"
    with pg_errors(f"creating replication slot {slot_name!r}"), repl_conn.cursor() as cur:
        cur.execute(f"CREATE_REPLICATION_SLOT {slot_name} LOGICAL pgoutput {mode}")
        _, consistent_point, snapshot_name, _ = cur.fetchone()
    return CreatedSlot(parse_lsn(consistent_point), snapshot_name if export_snapshot else None)


def drop_slot(conn: Any, slot_name: str, timeout: float = 10.0) -> None:
    """Drop the slot, waiting up to ``timeout`` seconds for its walsender to let go."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                    (slot_name,),
                )
            return
        except psycopg2.errors.ObjectInUse:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


__all__ = [
    "SESSION_OPTIONS",
    "CreatedSlot",
    "SlotInfo",
    "check_server",
    "connect",
    "connect_replication",
    "create_slot",
    "drop_slot",
    "ensure_publication",
    "is_transient",
    "pg_errors",
    "slot_info",
    "translate",
]
