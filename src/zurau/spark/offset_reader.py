"""Driver-side offset look-ups (Spark's ``KafkaOffsetReaderAdmin``), over confluent-kafka's AdminClient.

Which partitions a query reads comes from its :class:`Strategy`: ``assign`` gives them outright,
``subscribe`` takes every partition of the listed topics that exist (a missing topic has none
yet and is picked up once created), ``subscribePattern`` every partition of the non-internal
topics whose whole name matches. Offsets come from ListOffsets with the query's isolation level,
so "latest" is the high watermark for ``read_uncommitted`` and the last stable offset for
``read_committed``. Every look-up is retried ``fetchOffset.numRetries`` times,
``fetchOffset.retryIntervalMs`` apart, with a fresh client after a failure.

Not thread-safe; one instance per driver-side reader. Creates its client lazily, so building a
reader costs no network round trip (Spark builds readers in several processes).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from zurau.spark.errors import KafkaOptionError
from zurau.spark.offsets import (
    EARLIEST,
    LATEST,
    PartitionOffsets,
    TopicPartition,
    format_tps,
)
from zurau.spark.options import (
    EarliestLimit,
    GlobalTimestampLimit,
    LatestLimit,
    OffsetLimit,
    SourceOptions,
    SpecificOffsetsLimit,
    SpecificTimestampsLimit,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
_REQUEST_TIMEOUT_S = 30.0


class KafkaOffsetReader:
    """Resolves partitions and offsets for one query (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._admin: AdminClient | None = None
        self._pattern = (
            re.compile(options.strategy.pattern) if options.strategy.kind == "subscribePattern" else None
        )
        level = options.isolation_level
        self._isolation = (
            IsolationLevel.READ_COMMITTED if level == "read_committed" else IsolationLevel.READ_UNCOMMITTED
        )

    def __repr__(self) -> str:
        return f"KafkaOffsetReader({self.options.strategy})"

    # ------------------------------------------------------------------ client
    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            try:
                self._admin = AdminClient(self.options.admin_config())
            except (KafkaException, ValueError, TypeError) as e:
                raise KafkaOptionError(f"Invalid Kafka client configuration: {e}") from None
        return self._admin

    def close(self) -> None:
        self._admin = None  # AdminClient has no close(); dropping it ends its threads.

    def _with_retries(self, body: Callable[[], T]) -> T:
        attempts = max(1, self.options.fetch_offset_num_retries)
        last: BaseException | None = None
        for attempt in range(1, attempts + 1):
            try:
                return body()
            except KafkaOptionError:
                raise
            except Exception as e:  # noqa: BLE001 - transient client errors are retried, the last re-raised
                last = e
                log.warning("Error in attempt %d getting Kafka offsets: %s", attempt, e)
                if attempt < attempts:
                    time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
                    self.close()
        assert last is not None
        raise last

    # ------------------------------------------------------------------ partitions
    def assigned_partitions(self) -> set[TopicPartition]:
        """The topic-partitions the strategy names right now."""
        strategy = self.options.strategy
        if strategy.kind == "assign":
            return set(strategy.partitions)
        md = self.admin.list_topics(timeout=_REQUEST_TIMEOUT_S)
        out: set[TopicPartition] = set()
        for name, topic in md.topics.items():
            if strategy.kind == "subscribe":
                wanted = name in strategy.topics
            else:
                assert self._pattern is not None
                wanted = not name.startswith("__") and self._pattern.fullmatch(name) is not None
            if not wanted or topic.error is not None:
                continue
            out.update(TopicPartition(name, p) for p in topic.partitions)
        return out

    # ------------------------------------------------------------------ offsets
    def _list_offsets(self, specs: Mapping[TopicPartition, Any]) -> dict[TopicPartition, int]:
        if not specs:
            return {}
        request = {CKTopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}
        futures = self.admin.list_offsets(
            request, isolation_level=self._isolation, request_timeout=_REQUEST_TIMEOUT_S
        )
        return {
            TopicPartition(ctp.topic, ctp.partition): int(fut.result().offset) for ctp, fut in futures.items()
        }

    def fetch_earliest(self, tps: Iterable[TopicPartition] | None = None) -> PartitionOffsets:
        """Earliest offsets of ``tps`` that still exist (all assigned partitions by default)."""

        def body() -> PartitionOffsets:
            assigned = self.assigned_partitions()
            wanted = assigned if tps is None else {tp for tp in tps if tp in assigned}
            return self._list_offsets({tp: OffsetSpec.earliest() for tp in wanted})

        return self._with_retries(body)

    def fetch_latest(self, known: Mapping[TopicPartition, int] | None = None) -> PartitionOffsets:
        """Latest offsets of all assigned partitions.

        With ``known`` offsets (the previous batch's end), a fetched offset below a known one is
        taken as a stale answer and asked again up to ``fetchOffset.numRetries`` times (as Spark
        does); if it persists, it is returned and the caller reports the data loss.
        """

        def body() -> PartitionOffsets:
            assigned = self.assigned_partitions()
            specs = {tp: OffsetSpec.latest() for tp in assigned}
            attempts = max(1, self.options.fetch_offset_num_retries)
            for attempt in range(1, attempts + 1):
                offsets = self._list_offsets(specs)
                wrong = [
                    (tp, known[tp], off) for tp, off in offsets.items() if known and known.get(tp, -1) > off
                ]
                if not wrong:
                    return offsets
                log.warning(
                    "Found incorrect offsets in some partitions (partition, previous, fetched): %s", wrong
                )
                if attempt < attempts:
                    time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
            return offsets

        return self._with_retries(body)

    def resolve(self, limit: OffsetLimit, *, is_starting: bool) -> PartitionOffsets:
        """Concrete offsets for every assigned partition from a starting or ending limit."""

        def body() -> PartitionOffsets:
            assigned = self.assigned_partitions()
            if isinstance(limit, EarliestLimit):
                return self._list_offsets({tp: OffsetSpec.earliest() for tp in assigned})
            if isinstance(limit, LatestLimit):
                return self._list_offsets({tp: OffsetSpec.latest() for tp in assigned})
            if isinstance(limit, SpecificOffsetsLimit):
                if set(limit.offsets) != assigned:
                    raise KafkaOptionError(
                        "If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n"
                        "Use -1 for latest, -2 for earliest, if you don't care.\n"
                        f"Specified: {format_tps(limit.offsets)} Assigned: {format_tps(assigned)}"
                    )
                return self._resolve_special(dict(limit.offsets))
            if isinstance(limit, SpecificTimestampsLimit):
                if set(limit.timestamps) != assigned:
                    raise KafkaOptionError(
                        "If starting/endingOffsetsByTimestamp contains specific offsets, you must specify "
                        f"all topics. Specified: {format_tps(limit.timestamps)} Assigned: {format_tps(assigned)}"
                    )
                by_ts = self._by_timestamp(limit.timestamps, is_starting, limit.strategy_on_no_match)
                return self._resolve_special(by_ts)
            assert isinstance(limit, GlobalTimestampLimit)
            stamps = dict.fromkeys(assigned, limit.timestamp)
            return self._resolve_special(self._by_timestamp(stamps, is_starting, limit.strategy_on_no_match))

        return self._with_retries(body)

    def _by_timestamp(
        self, stamps: Mapping[TopicPartition, int], is_starting: bool, strategy: str
    ) -> PartitionOffsets:
        found = self._list_offsets({tp: OffsetSpec.for_timestamp(ts) for tp, ts in stamps.items()})
        out: PartitionOffsets = {}
        for tp, off in found.items():
            if off < 0:  # no record at or after the timestamp
                if is_starting and strategy == "error":
                    raise KafkaOptionError(
                        f"No offset matched from request of topic-partition {tp} and timestamp {stamps[tp]}."
                    )
                off = LATEST
            out[tp] = off
        return out

    def _resolve_special(self, offsets: PartitionOffsets) -> PartitionOffsets:
        """Replace ``EARLIEST``/``LATEST`` markers with real offsets."""
        specs = {
            tp: OffsetSpec.earliest() if off == EARLIEST else OffsetSpec.latest()
            for tp, off in offsets.items()
            if off in (EARLIEST, LATEST)
        }
        resolved = self._list_offsets(specs)
        return {tp: resolved.get(tp, off) for tp, off in offsets.items()}
