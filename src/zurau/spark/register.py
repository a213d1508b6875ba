"""Registering the ``zurau`` format with a SparkSession, and a local session for tools and tests.

``register(spark)`` must run once per SparkSession before ``format("zurau")`` is used. Python
workers must be able to import ``zurau``: Spark starts them with ``PYSPARK_PYTHON`` (default
``python3``), so :func:`local_session` points it at the running interpreter.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Make ``spark.read/readStream/write/writeStream.format("zurau")`` available."""
    from zurau.spark.source import ZurauDataSource

    spark.dataSource.register(ZurauDataSource)


_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


def local_session(
    app_name: str = "zurau",
    cores: int = 2,
    shuffle_partitions: int = 2,
    extra_conf: dict[str, str] | None = None,
    quiet: bool = True,
) -> SparkSession:
    """A ``local[cores]`` SparkSession (UI off, few shuffle partitions) with ``zurau`` registered.

    Sets ``PYSPARK_PYTHON`` to this interpreter unless it is set already, so executors' Python
    workers import the same ``zurau``, and binds Spark to 127.0.0.1. ``quiet`` logs only errors
    from the JVM's start on (Spark's start-up warnings included).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    if quiet:
        path = os.path.join(tempfile.gettempdir(), f"zurau-log4j2-quiet-{os.getuid()}.properties")
        with open(path, "w") as f:  # the same small file every time, rewritten in place
            f.write(_QUIET_LOG4J)
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{path}")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
