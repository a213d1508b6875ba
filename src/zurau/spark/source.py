"""The ``zurau`` Python data source: Kafka reads (batch and streaming) and writes for PySpark >= 4.2.

Reading follows Spark's built-in Kafka source (``format("kafka")``): same options
(:mod:`zurau.spark.options`), same schema (:mod:`zurau.spark.schema`), same offset JSON
(:mod:`zurau.spark.offsets`), same data-loss rules. Differences: clients are librdkafka's
(confluent-kafka), ``read()`` yields Arrow record batches, and Spark's Java-only settings are
translated or ignored.

Where each piece runs (PySpark's Python Data Source runtime):

* ``DataSource.schema()``/``reader()``/``streamReader()`` run in short-lived planner workers, so
  constructors validate options but open no connection.
* The streaming reader's ``initialOffset``/``latestOffset``/``partitions``/``commit`` run in one
  long-lived driver-side worker per query; the :class:`KafkaOffsetReader` it keeps there is
  created on first use.
* ``read()`` runs in executor workers on a pickled copy of the reader and depends only on its
  options and the :class:`KafkaInputPartition` it is given (stateless).

Streaming offsets are Spark's ``{"topic": {"partition": next_offset}}``; a restarted query
continues from its checkpointed offsets. New partitions of subscribed topics are read from their
earliest offset (a new partition not starting at 0, or a vanished partition, is data loss).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from zurau.spark.errors import KafkaOptionError, report_data_loss
from zurau.spark.offset_reader import KafkaOffsetReader
from zurau.spark.offsets import (
    OffsetRange,
    PartitionOffsets,
    TopicPartition,
    format_tps,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_ranges,
)
from zurau.spark.options import SourceOptions, include_headers, parse_source_options
from zurau.spark.partition_reader import read_range
from zurau.spark.schema import schema_ddl

log = logging.getLogger(__name__)

FORMAT = "zurau"


class KafkaInputPartition(InputPartition):
    """One Spark task's work: records ``[from_offset, until_offset)`` of one topic-partition."""

    def __init__(self, topic: str, partition: int, from_offset: int, until_offset: int) -> None:
        self.topic = topic
        self.partition = partition
        self.from_offset = from_offset
        self.until_offset = until_offset

    @property
    def range(self) -> OffsetRange:
        return OffsetRange(TopicPartition(self.topic, self.partition), self.from_offset, self.until_offset)

    @classmethod
    def of(cls, r: OffsetRange) -> KafkaInputPartition:
        return cls(r.tp.topic, r.tp.partition, r.from_offset, r.until_offset)


class ZurauDataSource(DataSource):
    """``spark.read/readStream/write/writeStream.format("zurau")`` (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return schema_ddl(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return ZurauBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ZurauStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from zurau.spark.sink import ZurauBatchWriter

        if overwrite:
            raise KafkaOptionError(
                "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and ErrorIfExists (default)."
            )
        return ZurauBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from zurau.spark.sink import ZurauStreamWriter

        return ZurauStreamWriter(self.options, schema)


def _read_partition(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Executor side of both readers: the records of one :class:`KafkaInputPartition`."""
    if not isinstance(partition, KafkaInputPartition):  # Spark's placeholder when nothing to read
        return iter(())
    return read_range(
        options.consumer_config(),
        partition.range,
        include_headers=options.include_headers,
        fail_on_data_loss=options.fail_on_data_loss,
        poll_timeout_ms=options.poll_timeout_ms,
    )


DEFAULT_MAX_RECORDS_PER_TASK = 1_000_000
"""Without ``maxRecordsPerPartition``, larger ranges are still split so that a big backlog of one
partition is read by several tasks (connections) in parallel; Spark's Kafka source does not."""


def _plan(options: SourceOptions, ranges: list[OffsetRange]) -> list[KafkaInputPartition]:
    """One Spark task per non-empty range, big ranges split (see ``split_ranges``)."""
    max_records = options.max_records_per_partition or DEFAULT_MAX_RECORDS_PER_TASK
    pieces = split_ranges(ranges, options.min_partitions, max_records)
    return [KafkaInputPartition.of(r) for r in pieces]


# --------------------------------------------------------------------------- batch
class ZurauBatchReader(DataSourceReader):
    """A batch read of ``[startingOffsets, endingOffsets)`` of every assigned partition."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        reader = KafkaOffsetReader(self.options)
        try:
            start = reader.resolve(self.options.starting, is_starting=True)
            end = reader.resolve(self.options.ending, is_starting=False)
        finally:
            reader.close()
        if set(start) != set(end):
            raise RuntimeError(
                f"different topic partitions for starting offsets topics[{format_tps(start)}] "
                f"and ending offsets topics[{format_tps(end)}]"
            )
        ranges = []
        for tp in sorted(end):
            if start[tp] > end[tp]:
                raise KafkaOptionError(
                    f"The resolved starting offset ({start[tp]}) is greater than the resolved ending "
                    f"offset ({end[tp]}) for {tp}"
                )
            ranges.append(OffsetRange(tp, start[tp], end[tp]))
        return list(_plan(self.options, ranges))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.options, partition)


# --------------------------------------------------------------------------- streaming
class ZurauStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads with Spark's admission control and ``Trigger.AvailableNow``.

    Driver-side state (in the query's long-lived source worker): the offset reader, the latest
    offsets last seen (for progress reports), the ``Trigger.AvailableNow`` target and the time of
    the last batch let through by ``minOffsetsPerTrigger``. Executors see only ``options``.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._reader: KafkaOffsetReader | None = None
        self._latest: PartitionOffsets | None = None
        self._available_now = False
        self._available_now_target: PartitionOffsets | None = None
        self._last_trigger_s = 0.0

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    @property
    def offset_reader(self) -> KafkaOffsetReader:
        if self._reader is None:
            self._reader = KafkaOffsetReader(self.options)
        return self._reader

    # ------------------------------------------------------------------ offsets
    def initialOffset(self) -> dict[str, dict[str, int]]:
        offsets = self.offset_reader.resolve(self.options.starting, is_starting=True)
        log.info("Initial offsets: %s", offsets_to_json(offsets))
        return offsets_to_json(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        start_offsets = offsets_from_json(start)
        if self._available_now:
            if self._available_now_target is None:
                self._available_now_target = self.offset_reader.fetch_latest(start_offsets)
            latest = self._available_now_target
        else:
            latest = self.offset_reader.fetch_latest(start_offsets)
        self._latest = latest
        if isinstance(limit, ReadAllAvailable):
            return offsets_to_json(latest)
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else self.options.min_offsets_per_trigger
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.options.max_offsets_per_trigger
        if (
            min_rows is not None
            and not self._available_now
            and self._delay_batch(min_rows, start_offsets, latest)
        ):
            return offsets_to_json(start_offsets)
        if max_rows is not None:
            new = [tp for tp in latest if tp not in start_offsets]
            earliest_new = self.offset_reader.fetch_earliest(new) if new else {}
            return offsets_to_json(rate_limit(max_rows, start_offsets, latest, earliest_new))
        return offsets_to_json(latest)

    def _delay_batch(self, min_rows: int, start: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """Spark's ``minOffsetsPerTrigger``: wait for ``min_rows`` new records or ``maxTriggerDelay``."""
        now = time.monotonic()
        if (now - self._last_trigger_s) * 1000 >= self.options.max_trigger_delay_ms:
            self._last_trigger_s = now
            return False
        new_records = sum(off - start.get(tp, 0) for tp, off in latest.items())
        if new_records < min_rows:
            return True
        self._last_trigger_s = now
        return False

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return offsets_to_json(self._latest) if self._latest else None

    # ------------------------------------------------------------------ planning
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        start_offsets = offsets_from_json(start)
        end_offsets = offsets_from_json(end)
        if start_offsets == end_offsets:
            return []
        if self._available_now_target is not None:
            self._verify_available_now_end(end_offsets)
        return _plan(self.options, self._ranges(start_offsets, end_offsets))

    def _ranges(self, start: PartitionOffsets, end: PartitionOffsets) -> list[OffsetRange]:
        """Spark's ``getOffsetRangesFromResolvedOffsets``, with its data-loss reports."""
        fail = self.options.fail_on_data_loss
        new = set(end) - set(start)
        earliest_new = self.offset_reader.fetch_earliest(new) if new else {}
        if set(earliest_new) != new:
            report_data_loss(
                f"Cannot find earliest offsets of {format_tps(new - set(earliest_new))}. Some data may have been missed",
                fail,
            )
        for tp, off in sorted(earliest_new.items()):
            if off != 0:
                report_data_loss(
                    f"Added partition {tp} starts from {off} instead of 0. Some data may have been missed",
                    fail,
                )
        gone = set(start) - set(end)
        if gone:
            report_data_loss(f"{format_tps(gone)} are gone. Some data may have been missed", fail)
        ranges = []
        for tp in sorted(end):
            if tp not in start and tp not in earliest_new:
                continue
            begin = start.get(tp, earliest_new.get(tp, 0))
            until = end[tp]
            if until < begin:
                report_data_loss(
                    f"Partition {tp}'s offset was changed from {begin} to {until}, some data may have been missed",
                    fail,
                )
            ranges.append(OffsetRange(tp, begin, until))
        return ranges

    def _verify_available_now_end(self, end: PartitionOffsets) -> None:
        target = self._available_now_target or {}
        if set(target) != set(end):
            raise RuntimeError(
                "The end offset of this batch names other topic-partitions than the offsets "
                f"prefetched for Trigger.AvailableNow: {format_tps(end)} vs {format_tps(target)}"
            )
        beyond = {str(tp): off for tp, off in end.items() if off > target[tp]}
        if beyond:
            raise RuntimeError(
                f"The end offset {beyond} is greater than the offsets prefetched for Trigger.AvailableNow"
            )

    # ------------------------------------------------------------------ executors
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the checkpoint holds the offsets (Spark's Kafka source commits nothing)."""

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
