"""A Spark driver for the exactly-once sink test, run as its own process so it can be SIGKILLed.

Usage: ``python eos_driver.py BOOTSTRAP SOURCE_TOPIC OUTPUT_TOPIC CHECKPOINT MODE [CRASH_BATCH HOOK_DIR]``

Streams SOURCE_TOPIC (``maxOffsetsPerTrigger`` 200) into OUTPUT_TOPIC through the ``zurau`` sink with
``exactlyOnce=true``, from CHECKPOINT. MODE:

* ``crash-before``: when micro-batch CRASH_BATCH reaches the driver's ``commit``, touch
  ``HOOK_DIR/before-<batch>`` and hang *before* ending its transactions (the test then kills us:
  the tasks' transactions stay open);
* ``crash-after``: end the transactions of CRASH_BATCH, touch ``HOOK_DIR/after-<batch>`` and hang
  (killed before Spark records the batch, so a restart re-runs a batch already in Kafka);
* ``finish``: run with ``Trigger.AvailableNow`` until everything is processed, print ``DONE``.

The hooks wrap the real sink in a data source named ``zurau_eos_test``; the sink code is unchanged.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from zurau.spark import local_session
from zurau.spark.sink import ZurauStreamWriter
from zurau.spark.source import ZurauDataSource


class _HookedWriter(ZurauStreamWriter):
    def __init__(self, options: Any, schema: StructType) -> None:
        super().__init__(options, schema)
        opts = {str(k).lower(): str(v) for k, v in options.items()}
        self.when = opts.get("crashwhen", "")
        self.crash_batch = int(opts.get("crashbatch", "-1"))
        self.hook_dir = opts.get("hookdir", "")

    def _hang(self, name: str) -> None:
        Path(self.hook_dir, name).touch()
        time.sleep(600)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        if batchId == self.crash_batch and self.when == "crash-before":
            self._hang(f"before-{batchId}")
        super().commit(messages, batchId)
        if batchId == self.crash_batch and self.when == "crash-after":
            self._hang(f"after-{batchId}")


class _HookedSource(ZurauDataSource):
    @classmethod
    def name(cls) -> str:
        return "zurau_eos_test"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return _HookedWriter(self.options, schema)


def main() -> None:
    bootstrap, src, dst, checkpoint, mode = sys.argv[1:6]
    crash_batch, hook_dir = (sys.argv[6], sys.argv[7]) if len(sys.argv) > 7 else ("-1", "")
    spark = local_session("zurau-eos-driver", cores=2, shuffle_partitions=2)
    spark.dataSource.register(_HookedSource)
    w = (
        spark.readStream.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", src)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "200")
        .load()
        .selectExpr("key", "value", "partition")
        .writeStream.format("zurau_eos_test")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", dst)
        .option("exactlyOnce", "true")
        .option("crashWhen", mode)
        .option("crashBatch", crash_batch)
        .option("hookDir", hook_dir)
        .option("checkpointLocation", checkpoint)
    )
    if mode == "finish":
        q = w.trigger(availableNow=True).start()
        q.awaitTermination()
        if q.exception() is not None:
            raise SystemExit(f"query failed: {q.exception()}")
        print("DONE", flush=True)
        spark.stop()
    else:
        q = w.trigger(processingTime="100 milliseconds").start()
        q.awaitTermination()  # the test kills us while a commit hangs
        raise SystemExit(f"query ended before the crash hook: {q.exception()}")


if __name__ == "__main__":
    main()
