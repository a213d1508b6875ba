"""The file ``spark-submit`` runs for ``zurau pipeline``: its arguments are those of ``zurau pipeline``.

    spark-submit --master spark://host:7077 --conf spark.executor.memory=2g \\
        "$(zurau pipeline script)" telemetry --bootstrap-server host:9092 --output /shared/telemetry

Under spark-submit the pipeline's SparkSession takes spark-submit's master and configuration
(:func:`zurau.spark.spark_session` sees the gateway spark-submit started); ``--master`` given to the
pipeline itself would override it. Every executor needs a Python with ``zurau[spark]`` installed
(``spark.pyspark.python``, or an environment shipped with ``spark.archives``), and ``--output``
must be storage every executor reaches.
"""

from __future__ import annotations

from zurau.cli.pipeline import app

if __name__ == "__main__":
    app(prog_name="zurau pipeline")
