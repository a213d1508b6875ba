"""PostgreSQL change data capture in Debezium's event format (pgoutput logical replication).

:class:`PostgresConnector` takes Debezium's PostgreSQL connector configuration unchanged and is
registered under Debezium's class name ``io.debezium.connector.postgresql.PostgresConnector``.
The modules: :mod:`.pgoutput` (the protocol decoder), :mod:`.type_mapping` (column types),
:mod:`.change_events` (the event format), :mod:`.catalog`, :mod:`.replication` (publication,
slot, connections), :mod:`.snapshot`, :mod:`.streaming`, :mod:`.signals` (Debezium's signals and
their channels), :mod:`.incremental_snapshot` (chunks and watermarks), :mod:`.source_task`,
:mod:`.config`.
"""

from zurau.connect.postgres.connector import PostgresConnector
from zurau.connect.postgres.source_task import PostgresSourceTask

__all__ = ["PostgresConnector", "PostgresSourceTask"]
