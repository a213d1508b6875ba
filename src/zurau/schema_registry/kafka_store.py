"""The ``_schemas`` topic as the registry's store (Confluent's ``KafkaStore``), on
:class:`~zurau.client.kafka_based_log.KafkaBasedLog`.

* :meth:`KafkaStore.start` creates the topic when it is missing (one partition,
  ``cleanup.policy=compact``, replication factor ``kafkastore.topic.replication.factor`` capped
  at the live brokers), refuses a topic with more than one partition, then writes a NOOP record
  and reads the topic until that record is applied: the state then holds everything written
  before this registry started.
* :meth:`KafkaStore.put` writes one record with ``acks=all`` and returns once the reader has
  applied it, so every state change goes through the topic first and a registry that restarts
  replays exactly what it served.
* The store's clients (and the group membership, which shares their connections) use the
  ``kafkastore.security.protocol``/``ssl.*``/``sasl.*`` settings of
  :class:`~zurau.schema_registry.registry_config.RegistryConfig`.
* The log's reader reads the topic from offset 0 and applies each record to
  :class:`~zurau.schema_registry.registry_state.RegistryState`; a record it cannot apply stops
  the reader, and every later write fails with a store error.

Writes are serialised by the caller. With several instances only the primary writes schemas,
configs and modes; every instance writes NOOP records (:meth:`KafkaStore.catch_up`, as Confluent's
store does to find the end of the topic).
"""

from __future__ import annotations

import contextlib
import logging

from zurau.client.admin import NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.kafka_based_log import COMPACT, KafkaBasedLog, KafkaBasedLogError
from zurau.client.topic_admin import TopicMismatchError
from zurau.client.types import ConsumerRecord
from zurau.protocol.errors import KafkaError
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
        self._cluster: Cluster | None = None
        self._log: KafkaBasedLog | None = None

    async def start(self) -> None:
        self._cluster = Cluster(self.client_config)
        await self._cluster.bootstrap()
        name = self.config.topic
        self._log = KafkaBasedLog(
            self._cluster, NewTopic(name, 1, self.config.replication_factor, COMPACT), self._apply,
            required_partitions=1, poll_timeout_ms=500, name="zurau-registry-store-reader",
        )
        try:
            await self._log.start(self.config.init_timeout_ms / 1000)
        except TopicMismatchError as e:
            raise store_error(f"the store topic {name} must have exactly 1 partition, it has {e.actual}") from e
        except TimeoutError as e:
            raise store_timeout(f"the store topic {name} is not ready: {e}") from e
        except KafkaError as e:
            raise store_error(f"cannot create the store topic {name}: {e}") from e
        await self.catch_up(self.config.init_timeout_ms)
        log.info(
            "schema registry store ready: %s, %d records replayed, max id %d",
            name, self.state.records_applied, self.state.max_id,
        )

    def _apply(self, record: ConsumerRecord) -> None:
        self.state.apply(record.key, record.value)

    async def close(self) -> None:
        if self._log is not None:
            await self._log.close()
        if self._cluster is not None:
            with contextlib.suppress(Exception):
                await self._cluster.close()

    async def put(self, key: bytes, value: bytes | None, *, timeout_ms: int | None = None) -> int:
        """Write a record (acks=all) and wait until it is applied; returns its offset."""
        assert self._log is not None
        timeout = (timeout_ms if timeout_ms is not None else self.config.store_timeout_ms) / 1000
        try:
            meta = await self._log.send(key, value, partition=0, timeout=timeout)
        except TimeoutError as e:
            raise store_timeout(f"writing to {self.config.topic} took longer than {timeout}s") from e
        except Exception as e:  # a Kafka error from the cluster
            raise store_error(f"{type(e).__name__}: {e}") from e
        try:
            await self._log.wait_for([meta], timeout)
        except TimeoutError as e:
            raise store_timeout(f"the record at offset {meta.offset} was not read back within {timeout}s") from e
        except KafkaBasedLogError as e:
            raise store_error(f"the store reader failed: {e.__cause__ or e}") from e
        return meta.offset

    async def catch_up(self, timeout_ms: int | None = None) -> int:
        """Write a NOOP and wait until it is applied: the state then holds every record written
        to the topic before this call (what a new primary needs before it allocates ids, and a
        secondary after a forwarded write). Returns the NOOP's offset."""
        return await self.put(RegistryKey(NOOP).encode(), None, timeout_ms=timeout_ms)
