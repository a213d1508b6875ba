"""A compacted topic as a service's durable state (Kafka's ``KafkaBasedLog``).

Connect's config, offset and status stores and the schema registry's ``_schemas`` store keep their
state in a topic: every change is written to the topic first and applied when it is read back, so
every instance (and an instance that restarts) ends up with the same state, in the same order.

* :meth:`KafkaBasedLog.start` ensures the topic (:func:`~zurau.client.topic_admin.ensure_topic`:
  created compacted when missing, the replication factor fitted to the live brokers; an existing
  topic keeps its partition count unless ``required_partitions`` says otherwise), starts an
  ``acks=all`` producer and a consumer assigned every partition from offset 0, starts the reader
  task and returns once the reader reached the end of the topic as it was then (:meth:`read_to_end`).
* The reader task calls ``on_record(record)`` for every record, in offset order per partition, one
  at a time on the event loop. If the callback (or the consumer) raises, the reader stops, and
  every wait that is not already satisfied raises :class:`KafkaBasedLogError`.
* :meth:`send` / :meth:`send_many` return once the broker acknowledged (``acks=all``);
  :meth:`write` / :meth:`write_many` also wait until the reader applied the written records
  (read-your-writes); :meth:`read_to_end` waits until every record written before the call, by
  anyone, has been applied (Kafka's ``readToEnd``, used as a flush).
* ``read_committed=True`` reads only committed transactional writes (Connect's offsets topic with
  exactly-once sources); :meth:`read_to_end` then waits for the last stable offset, and a
  partition's position moves past transaction markers and aborted batches too.
* The cluster is the caller's: :meth:`close` stops the reader and closes the producer and the
  consumer, not the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.consumer import READ_COMMITTED, READ_UNCOMMITTED, Consumer
from zurau.client.producer import Producer
from zurau.client.topic_admin import ensure_topic
from zurau.client.types import ConsumerRecord, RecordMetadata, TopicPartition

log = logging.getLogger("zurau.client.kafka_based_log")

COMPACT = {"cleanup.policy": "compact"}


class KafkaBasedLogError(RuntimeError):
    """The reader of the log stopped: a wait for records to be applied cannot succeed."""


class KafkaBasedLog:
    """A topic read from the beginning by a background task (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        topic: NewTopic,
        on_record: Callable[[ConsumerRecord], None],
        *,
        required_partitions: int | None = None,
        poll_timeout_ms: int = 200,
        name: str | None = None,
        read_committed: bool = False,
    ) -> None:
        self.cluster = cluster
        self.isolation_level = READ_COMMITTED if read_committed else READ_UNCOMMITTED
        self.new_topic = topic
        self.topic = topic.name
        self.partitions = topic.num_partitions
        self.on_record = on_record
        self.required_partitions = required_partitions
        self.poll_timeout_ms = poll_timeout_ms
        self.name = name or f"zurau-log-{topic.name}"
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self._positions: dict[int, int] = {}  # partition -> offset after the last applied record
        self._progress = asyncio.Condition()
        self._error: BaseException | None = None

    async def start(self, timeout: float = 30) -> None:
        """Ensure the topic, start the clients and the reader, read to the end (each step bounded
        by ``timeout`` seconds)."""
        ensured = await ensure_topic(
            AdminClient(self.cluster), self.new_topic, fit_to_brokers=True, leader_timeout=timeout,
            required_partitions=self.required_partitions,
        )
        self.partitions = ensured.partitions
        self._producer = Producer(self.cluster, acks="all", linger_ms=0)
        await self._producer.start()
        self._consumer = Consumer(
            self.cluster, auto_offset_reset="earliest", fetch_max_wait_ms=100, isolation_level=self.isolation_level
        )
        await self._consumer.start()
        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        self._consumer.assign(tps)
        for tp in tps:
            self._consumer.seek(tp, 0)
            self._positions[tp.partition] = 0
        self._reader = asyncio.create_task(self._read_forever(), name=self.name)
        await self.read_to_end(timeout)

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None
        for client in (self._producer, self._consumer):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()
        self._producer = self._consumer = None

    # ------------------------------------------------------------------ reading
    async def _read_forever(self) -> None:
        assert self._consumer is not None
        try:
            while True:
                batches = await self._consumer.getmany(timeout_ms=self.poll_timeout_ms)
                moved = bool(batches)
                for tp, records in batches.items():
                    for record in records:
                        self.on_record(record)
                        self._positions[tp.partition] = record.offset + 1
                if self.isolation_level == READ_COMMITTED:
                    # markers and aborted batches carry no record: the position moves past them
                    for p in range(self.partitions):
                        at = await self._consumer.position(TopicPartition(self.topic, p))
                        if at > self._positions.get(p, 0):
                            self._positions[p] = at
                            moved = True
                if not moved:
                    continue
                async with self._progress:
                    self._progress.notify_all()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # surfaced to everyone waiting for records to be applied
            log.exception("the reader of %s stopped", self.topic)
            self._error = e
            async with self._progress:
                self._progress.notify_all()

    def _reached(self, targets: Mapping[int, int]) -> bool:
        return all(self._positions.get(p, 0) >= offset for p, offset in targets.items())

    async def _wait(self, targets: Mapping[int, int], timeout: float) -> None:
        """Until every partition's applied position reaches its target (the offset after a record)."""

        async def reached() -> None:
            async with self._progress:
                await self._progress.wait_for(lambda: self._error is not None or self._reached(targets))

        await asyncio.wait_for(reached(), timeout)
        if self._error is not None and not self._reached(targets):
            raise KafkaBasedLogError(f"the reader of {self.topic} failed: {self._error}") from self._error

    async def wait_for(self, written: Iterable[RecordMetadata], timeout: float = 30) -> None:
        """Until the reader applied the ``written`` records."""
        targets: dict[int, int] = {}
        for meta in written:
            targets[meta.partition] = max(targets.get(meta.partition, 0), meta.offset + 1)
        await self._wait(targets, timeout)

    async def read_to_end(self, timeout: float = 30) -> None:
        """Until every record written before this call has been applied."""
        assert self._consumer is not None
        ends = await self._consumer.admin.list_offsets(
            {TopicPartition(self.topic, p): -1 for p in range(self.partitions)}, isolation_level=self.isolation_level)
        await self._wait({tp.partition: r.offset for tp, r in ends.items() if not isinstance(r, BaseException)},
                         timeout)

    # ------------------------------------------------------------------ writing
    async def send(self, key: bytes, value: bytes | None, *, partition: int | None = None,
                   timeout: float = 30) -> RecordMetadata:
        """Write one record; returns once the broker acknowledged it (``acks=all``)."""
        assert self._producer is not None
        return await asyncio.wait_for(
            self._producer.send_and_wait(self.topic, value, key, partition=partition), timeout)

    async def send_many(self, records: list[tuple[bytes, bytes | None]], timeout: float = 30) -> list[RecordMetadata]:
        """Write ``records`` in order with one flush; returns once the broker acknowledged all."""
        assert self._producer is not None
        futures = [await self._producer.send(self.topic, value, key) for key, value in records]
        await asyncio.wait_for(self._producer.flush(), timeout)
        return [await fut for fut in futures]

    async def write(self, key: bytes, value: bytes | None, *, partition: int | None = None,
                    timeout: float = 30) -> RecordMetadata:
        """:meth:`send`, then wait until the reader applied the record."""
        meta = await self.send(key, value, partition=partition, timeout=timeout)
        await self.wait_for([meta], timeout)
        return meta

    async def write_many(self, records: list[tuple[bytes, bytes | None]], timeout: float = 30) -> None:
        """:meth:`send_many`, then wait until the reader applied them all."""
        await self.wait_for(await self.send_many(records, timeout), timeout)
