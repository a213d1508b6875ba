"""A PostgreSQL sink taking Debezium's JDBC sink configuration (Confluent's names as aliases):
upserts by key, deletes from tombstones, tables created and evolved from the records' Connect
schemas. Modules: :mod:`.config`, :mod:`.rows` (record to row change), :mod:`.dialect` (types,
values, statements), :mod:`.writer`, :mod:`.connector`.
"""

from zurau.connect.jdbc_sink.connector import PostgresSinkConnector, PostgresSinkTask

__all__ = ["PostgresSinkConnector", "PostgresSinkTask"]
