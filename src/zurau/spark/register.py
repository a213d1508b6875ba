"""Registering the ``zurau`` format with a SparkSession, and a local session for tools and tests.

``register(spark)`` must run once per SparkSession before ``format("zurau")`` is used. Python
workers must be able to import ``zurau``: Spark starts them with ``PYSPARK_PYTHON`` (default
``python3``), so :func:`spark_session` points it at the running interpreter.
:func:`spark_session` takes any Spark master URL, or the one ``spark-submit`` was given.
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


def submitted() -> bool:
    """Whether this Python process was started by ``spark-submit`` (whose JVM, master and
    configuration it then uses): spark-submit passes its gateway's port in the environment."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def is_local_master(master: str | None) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: Spark inside this process."""
    return master is None or master == "local" or master.startswith("local[")


def spark_session(
    app_name: str = "zurau",
    master: str | None = None,
    cores: int = 2,
    shuffle_partitions: int = 2,
    extra_conf: dict[str, str] | None = None,
    quiet: bool = True,
) -> SparkSession:
    """A SparkSession on ``master`` with the ``zurau`` format registered.

    ``master`` is any Spark master URL (``local[4]``, ``spark://host:7077``, ``yarn``,
    ``k8s://...``). ``None`` means the master ``spark-submit`` was given when this process runs
    under it (:func:`submitted`; nothing here then overrides spark-submit's configuration except
    the app name and shuffle partitions), else ``local[cores]``.

    Local masters bind Spark to 127.0.0.1 and start Python workers with this interpreter
    (``PYSPARK_PYTHON``, unless set), so they import the same ``zurau``. On a cluster, every
    worker's ``PYSPARK_PYTHON`` must be a Python with ``zurau[spark]`` installed (or ship one with
    ``spark.archives``); on a cluster on this machine that is this interpreter too, which is the
    default here unless ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` says otherwise.
    ``quiet`` logs only errors from the driver JVM's start on (Spark's start-up warnings included).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    under_submit = master is None and submitted()
    if master is None and not under_submit:
        master = f"local[{cores}]"
    builder = SparkSession.builder.appName(app_name)
    if not under_submit:
        builder = builder.master(master)  # type: ignore[arg-type]
        builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    if is_local_master(master) and not under_submit:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions)).config(
        "spark.sql.session.timeZone", "UTC"
    )
    if quiet and not under_submit:
        path = os.path.join(tempfile.gettempdir(), f"zurau-log4j2-quiet-{os.getuid()}.properties")
        with open(path, "w") as f:  # the same small file every time, rewritten in place
            f.write(_QUIET_LOG4J)
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{path}")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def local_session(
    app_name: str = "zurau",
    cores: int = 2,
    shuffle_partitions: int = 2,
    extra_conf: dict[str, str] | None = None,
    quiet: bool = True,
) -> SparkSession:
    """A ``local[cores]`` SparkSession (UI off, few shuffle partitions) with ``zurau`` registered:
    :func:`spark_session` with a local master."""
    return spark_session(app_name, f"local[{cores}]", cores, shuffle_partitions, extra_conf, quiet)
