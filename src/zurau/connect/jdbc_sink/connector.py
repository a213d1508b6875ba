"""The PostgreSQL sink connector and task (Debezium's ``io.debezium.connector.jdbc.JdbcSinkConnector``
and Confluent's ``io.confluent.connect.jdbc.JdbcSinkConnector`` configurations).

Delivery: each ``put()`` is one PostgreSQL transaction, committed before ``put`` returns (when the
connection breaks, the batch is retried on a new connection, ``max.retries`` times
``retry.backoff.ms`` apart); the worker commits consumer offsets only after ``flush``, so after a
crash records are written again (at least once). With ``insert.mode=upsert`` (or ``update``) and a primary key, writing a record
twice leaves the same row, so the table ends exactly as the topic says.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import psycopg2

from zurau.connect.api import (
    ConfigDef,
    ConfigValue,
    ConnectException,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)
from zurau.connect.jdbc_sink.config import CONFIG_DEF, SinkConfig, validate_config
from zurau.connect.jdbc_sink.rows import RowChange, row_change
from zurau.connect.jdbc_sink.writer import TableWriter

log = logging.getLogger("zurau.connect.jdbc_sink")


class PostgresSinkTask(SinkTask):
    """Writes each ``put`` batch in one transaction."""

    def start(self, config: dict[str, str]) -> None:
        self.config = SinkConfig.from_props(config)
        self.conn: Any = None
        self._connect()

    def _connect(self) -> None:
        target = self.config.target
        try:
            self.conn = psycopg2.connect(**target.connect_kwargs())
        except psycopg2.Error as e:
            raise ConnectException(f"cannot connect to PostgreSQL at {target.host}:{target.port}/{target.dbname}: "
                                   f"{str(e).strip()}") from e
        self.writer = TableWriter(self.config, self.conn)

    def put(self, records: list[SinkRecord]) -> None:
        changes: list[RowChange] = []
        for record in records:
            change = row_change(self.config, record)
            if change is not None:
                changes.append(change)
        if not changes:
            return
        attempt = 0
        while True:
            try:
                if self.conn is None or self.conn.closed:
                    self._connect()
                self.writer.apply(changes)
                self.conn.commit()
                return
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
                # The connection broke (server restart, backend terminated): the transaction is
                # gone, so the whole batch is written again on a new connection.
                self._rollback()
                attempt += 1
                if attempt > self.config.max_retries:
                    raise ConnectException(f"writing to PostgreSQL failed {attempt} times, last: "
                                           f"{str(e).strip()}") from e
                log.warning("PostgreSQL connection lost (%s); retry %d of %d", str(e).strip(), attempt,
                            self.config.max_retries)
                if self.conn is not None and not self.conn.closed:
                    self.conn.close()
                time.sleep(self.config.retry_backoff_ms / 1000)
            except psycopg2.Error as e:
                self._rollback()
                raise ConnectException(f"writing {len(changes)} row change(s) to PostgreSQL failed: "
                                       f"{(e.pgerror or str(e)).strip()}") from e
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        self.writer.rolled_back()
        if self.conn is not None and not self.conn.closed:
            try:
                self.conn.rollback()
            except psycopg2.Error:
                self.conn.close()

    def flush(self, current_offsets: dict[TopicPartition, int]) -> None:
        """Every ``put`` committed its transaction already; nothing is pending here."""

    def stop(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None and not conn.closed:
            conn.close()


class PostgresSinkConnector(SinkConnector):
    """``tasks.max`` tasks, each with the connector's configuration (the worker splits the
    partitions among them)."""

    def start(self, config: dict[str, str]) -> None:
        SinkConfig.from_props(config)
        self.config = dict(config)

    def task_class(self) -> type[Task]:
        return PostgresSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_config(config)
