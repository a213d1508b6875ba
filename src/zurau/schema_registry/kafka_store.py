"""The ``_schemas`` topic as the registry's store (Confluent's ``KafkaStore``).

* :meth:`KafkaStore.start` creates the topic when it is missing (one partition,
  ``cleanup.policy=compact``, replication factor ``kafkastore.topic.replication.factor`` capped
  at the live brokers), refuses a topic with more than one partition or without compaction, then
  writes a NOOP record and reads the topic until that record is applied: the state then holds
  everything written before this registry started.
* :meth:`KafkaStore.put` writes one record with ``acks=all`` and returns once the reader has
  applied it, so every state change goes through the topic first and a registry that restarts
  replays exactly what it served.
* The store's clients (and the group membership, which shares their connections) use the
  ``kafkastore.security.protocol``/``ssl.*``/``sasl.*`` settings of
  :class:`~zurau.schema_registry.registry_config.RegistryConfig`.
* A background task reads the topic from offset 0 and applies each record to
  :class:`~zurau.schema_registry.registry_state.RegistryState`.

Writes are serialised by the caller. With several instances only the primary writes schemas,
configs and modes; every instance writes NOOP records (:meth:`KafkaStore.catch_up`, as Confluent's
store does to find the end of the topic).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.consumer import Consumer
from zurau.client.producer import Producer
from zurau.client.types import TopicPartition
from zurau.schema_registry.errors import store_error, store_timeout
from zurau.schema_registry.registry_config import RegistryConfig
from zurau.schema_registry.registry_state import RegistryState
from zurau.schema_registry.store_records import NOOP, RegistryKey

log = logging.getLogger("zurau.schema_registry.kafka_store")


class KafkaStore:
    def __init__(self, config: RegistryConfig, state: RegistryState) -> None:
        self.config = config
        self.state = state
        security = config.kafkastore_security
        self.client_config = ClientConfig(
            bootstrap_servers=parse_bootstrap(config.bootstrap_servers), client_id="zurau-schema-registry",
            security=security, security_protocol=security.protocol,
        )
        self.tp = TopicPartition(config.topic, 0)
        self._cluster: Cluster | None = None
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self._applied_offset = -1  # offset of the last applied record
        self._progress = asyncio.Condition()
        self._reader_error: BaseException | None = None

    async def start(self) -> None:
        self._cluster = Cluster(self.client_config)
        await self._cluster.bootstrap()
        await self._ensure_topic()
        self._producer = Producer(self._cluster, acks="all", linger_ms=0)
        await self._producer.start()
        self._consumer = Consumer(self._cluster, auto_offset_reset="earliest", fetch_max_wait_ms=100)
        await self._consumer.start()
        self._consumer.assign([self.tp])
        self._consumer.seek(self.tp, 0)
        self._reader = asyncio.create_task(self._read_forever(), name="zurau-registry-store-reader")
        await self.catch_up(self.config.init_timeout_ms)
        log.info(
            "schema registry store ready: %s, %d records replayed, max id %d",
            self.config.topic, self.state.records_applied, self.state.max_id,
        )

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.close()
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                await self._consumer.close()
        if self._cluster is not None:
            with contextlib.suppress(Exception):
                await self._cluster.close()

    async def _ensure_topic(self) -> None:
        assert self._cluster is not None
        admin = AdminClient(self._cluster)
        name = self.config.topic
        metadata = await admin.topic_metadata([name])
        topic = metadata.get(name)
        if topic is None or topic.error is not None:
            live = max(1, len(self._cluster.metadata.brokers))
            rf = min(self.config.replication_factor, live)
            if rf < self.config.replication_factor:
                log.warning(
                    "kafkastore.topic.replication.factor=%d but only %d brokers are live: creating %s with RF %d",
                    self.config.replication_factor, live, name, rf,
                )
            result = await admin.create_topics([NewTopic(name, 1, rf, {"cleanup.policy": "compact"})])
            error = result.get(name)
            if error is not None and getattr(error, "code", None) != 36:  # 36: TOPIC_ALREADY_EXISTS
                raise store_error(f"cannot create the store topic {name}: {error}")
            await self._wait_for_leader(admin)
            return
        if len(topic.partitions) != 1:
            raise store_error(f"the store topic {name} must have exactly 1 partition, it has {len(topic.partitions)}")

    async def _wait_for_leader(self, admin: AdminClient) -> None:
        """A topic just created is usable once metadata shows its partition with a leader."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.init_timeout_ms / 1000
        while True:
            topic = (await admin.topic_metadata([self.config.topic])).get(self.config.topic)
            if topic is not None and topic.error is None and topic.partitions and topic.partitions[0].leader >= 0:
                return
            if loop.time() > deadline:
                raise store_timeout(f"the store topic {self.config.topic} has no leader")
            await asyncio.sleep(0.05)

    async def _read_forever(self) -> None:
        assert self._consumer is not None
        try:
            while True:
                batches = await self._consumer.getmany(timeout_ms=500)
                last = None
                for records in batches.values():
                    for rec in records:
                        self.state.apply(rec.key, rec.value)
                        last = rec.offset
                if last is not None:
                    async with self._progress:
                        self._applied_offset = last
                        self._progress.notify_all()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # surfaced to writers waiting for their records
            log.exception("the schema registry store reader stopped")
            self._reader_error = e
            async with self._progress:
                self._progress.notify_all()

    async def put(self, key: bytes, value: bytes | None, *, timeout_ms: int | None = None) -> int:
        """Write a record (acks=all) and wait until it is applied; returns its offset."""
        assert self._producer is not None
        timeout = (timeout_ms if timeout_ms is not None else self.config.store_timeout_ms) / 1000
        try:
            meta = await asyncio.wait_for(
                self._producer.send_and_wait(self.config.topic, value, key, partition=0), timeout
            )
        except TimeoutError as e:
            raise store_timeout(f"writing to {self.config.topic} took longer than {timeout}s") from e
        except Exception as e:  # a Kafka error from the cluster
            raise store_error(f"{type(e).__name__}: {e}") from e
        await self.wait_for(meta.offset, timeout)
        return meta.offset

    async def catch_up(self, timeout_ms: int | None = None) -> int:
        """Write a NOOP and wait until it is applied: the state then holds every record written
        to the topic before this call (what a new primary needs before it allocates ids, and a
        secondary after a forwarded write). Returns the NOOP's offset."""
        return await self.put(RegistryKey(NOOP).encode(), None, timeout_ms=timeout_ms)

    async def wait_for(self, offset: int, timeout: float) -> None:
        async def reached() -> None:
            async with self._progress:
                await self._progress.wait_for(lambda: self._applied_offset >= offset or self._reader_error is not None)

        try:
            await asyncio.wait_for(reached(), timeout)
        except TimeoutError as e:
            raise store_timeout(f"the record at offset {offset} was not read back within {timeout}s") from e
        if self._reader_error is not None and self._applied_offset < offset:
            raise store_error(f"the store reader failed: {self._reader_error}")
