"""Spark integration: the ``zurau`` Python data source (PySpark >= 4.2).

Reads and writes Kafka topics -- on Zurau or any Kafka cluster -- with the options, schema and
offset JSON of Spark's built-in Kafka source::

    from zurau.spark import register
    register(spark)
    df = (spark.readStream.format("zurau")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "telemetry")
          .load())

An edge app: it talks to brokers only through Kafka clients (confluent-kafka) and never imports
the broker stack. Needs the ``spark`` extra (``pip install 'zurau[spark]'``).
"""

from __future__ import annotations

from zurau.spark.register import local_session, register, spark_session

__all__ = ["register", "local_session", "spark_session", "ZurauDataSource"]


def __getattr__(name: str) -> object:
    if name == "ZurauDataSource":
        from zurau.spark.source import ZurauDataSource

        return ZurauDataSource
    raise AttributeError(name)
