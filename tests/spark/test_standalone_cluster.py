"""The telemetry pipeline on a Spark standalone cluster, submitted with spark-submit: a master and
two workers from PySpark's own classes on 127.0.0.1, executors in JVMs of their own on both
workers. The pipeline command is the same one that runs on ``local[2]``; only spark-submit's
``--master`` differs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zurau.cli import pipeline_submit
from zurau.testing.spark_standalone import SparkStandaloneCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def test_telemetry_pipeline_runs_under_spark_submit_on_a_standalone_cluster(tmp_path: Path) -> None:
    with SparkStandaloneCluster(tmp_path / "spark", workers=2, cores=1, memory="1g") as cluster:
        assert cluster.alive_workers() == 2
        submit = [
            str(cluster.home / "bin" / "spark-submit"),
            "--master", cluster.master_url,
            "--conf", "spark.executor.cores=1",
            "--conf", "spark.executor.memory=512m",
            "--conf", "spark.cores.max=2",
            "--conf", f"spark.pyspark.python={sys.executable}",
            "--conf", "spark.ui.enabled=false",
            pipeline_submit.__file__,
            "telemetry",
            "--events", "2000",
            "--devices", "10",
            "--rate", "0",
            "--span-minutes", "3",
            "--partitions", "2",
            "--output", str(tmp_path / "out"),
            "--timeout", "240",
        ]  # fmt: skip
        result = subprocess.run(submit, env=cluster.env(), capture_output=True, timeout=360, cwd=tmp_path)
        out, err = result.stdout.decode(), result.stderr.decode()
        (tmp_path / "submit.out").write_text(out)
        (tmp_path / "submit.err").write_text(err)
        assert result.returncode == 0, f"stdout:\n{out[-3000:]}\nstderr:\n{err[-5000:]}"
        # spark-submit hands the Python driver's stderr to its own stdout.
        assert f"Spark on {cluster.master_url}" in out + err, out[-3000:]
        assert "readings produced to 'telemetry'" in out and "FAILED" not in out, out
        assert list((tmp_path / "out").glob("run-*/aggregates.parquet/*.parquet")), "no Parquet files"
        # Each worker launched an executor of the application: two JVMs besides the driver's.
        launched = {i: cluster.executor_dirs(i) for i in range(2)}
        assert all(launched.values()), launched
        status = cluster.status()
        apps = [a["name"] for key in ("activeapps", "completedapps") for a in status[key]]  # type: ignore[attr-defined]
        assert apps == ["zurau-telemetry"], status
