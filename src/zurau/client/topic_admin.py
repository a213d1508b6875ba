"""Create a topic a service needs unless it exists (Kafka Connect's ``TopicAdmin.createOrFindTopics``).

:func:`ensure_topic` is the one create-if-missing every edge service uses (the registry's
``_schemas``, Connect's config/offset/status topics and the topics its connectors create, the mirror
connectors' topics, the Spark sink's marker topic, ``zurau topics create --if-not-exists``):

* an existing topic (metadata answers it without an error) is taken as it is, after the checks the
  caller asks for: ``required_partitions`` (the exact count) and ``required_configs`` (each config's
  value, compared as a comma-separated set, with ``describe_configs``); a mismatch raises
  :class:`TopicMismatchError` naming the topic, the setting, what it has and what is required;
* a missing one is created with the :class:`~zurau.client.admin.NewTopic`'s partitions, replication
  factor and configs. With ``fit_to_brokers`` the replication factor is capped at the live brokers
  (with a warning) and -1 means "every live broker" (Connect's documented meaning); otherwise -1
  leaves it to the broker's ``default.replication.factor``;
* ``TOPIC_ALREADY_EXISTS`` (another instance won the race) counts as success; the topic is then
  checked as an existing one. Any other CreateTopics error is raised as the broker's
  :class:`~zurau.protocol.errors.KafkaError`;
* with ``leader_timeout`` (seconds) it returns once metadata shows every partition with a leader
  (CreateTopics answers once the controller accepted the topic), raising :class:`TimeoutError`
  after that long; ``None`` returns as soon as CreateTopics answered.

It returns the topic's partition count and whether this call created it. The broker's own
internal topics are created broker-side (``zurau.coordinator``), not here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from zurau.client.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from zurau.client.cluster import TopicMetadata
from zurau.client.errors import ClientError
from zurau.protocol.errors import KafkaError, TopicAlreadyExistsError

log = logging.getLogger("zurau.client.topic_admin")


@dataclass(frozen=True)
class EnsuredTopic:
    name: str
    partitions: int
    created: bool


class TopicMismatchError(ClientError):
    """An existing topic differs from what the service requires; ``setting`` names what differs
    (``partitions`` or a config name), ``actual`` and ``required`` are its values."""

    def __init__(self, topic: str, setting: str, actual: str, required: str) -> None:
        super().__init__(f"topic {topic} has {setting}={actual}, {required} is required")
        self.topic = topic
        self.setting = setting
        self.actual = actual
        self.required = required


async def ensure_topic(
    admin: AdminClient,
    topic: NewTopic,
    *,
    fit_to_brokers: bool = False,
    leader_timeout: float | None = 30.0,
    required_partitions: int | None = None,
    required_configs: Mapping[str, str] | None = None,
) -> EnsuredTopic:
    """See the module docstring."""
    found = (await admin.topic_metadata([topic.name]))[topic.name]
    if found.error is None:
        await _check(admin, found, required_partitions, required_configs)
        return EnsuredTopic(topic.name, len(found.partitions), created=False)
    if fit_to_brokers:
        topic = replace(topic, replication_factor=_fit(admin, topic))
    error = (await admin.create_topics([topic]))[topic.name]
    if error is not None and not isinstance(error, TopicAlreadyExistsError):
        raise error
    created = error is None
    if leader_timeout is not None:
        found = await _wait_for_leaders(admin, topic.name, leader_timeout)
    elif not created:
        found = (await admin.topic_metadata([topic.name]))[topic.name]
    if not created:
        await _check(admin, found, required_partitions, required_configs)
    partitions = len(found.partitions) if found.error is None else topic.num_partitions
    return EnsuredTopic(topic.name, partitions, created=created)


def _fit(admin: AdminClient, topic: NewTopic) -> int:
    """The replication factor capped at the live brokers; -1 (or 0): all of them."""
    live = max(1, len(admin.cluster.metadata.brokers))
    if topic.replication_factor <= 0:
        return live
    if topic.replication_factor > live:
        log.warning(
            "replication factor %d asked for %s but only %d brokers are live: creating it with %d",
            topic.replication_factor, topic.name, live, live,
        )
        return live
    return topic.replication_factor


async def _check(
    admin: AdminClient,
    found: TopicMetadata,
    required_partitions: int | None,
    required_configs: Mapping[str, str] | None,
) -> None:
    if found.error is not None:
        raise found.error
    if required_partitions is not None and len(found.partitions) != required_partitions:
        raise TopicMismatchError(found.name, "partitions", str(len(found.partitions)), str(required_partitions))
    if not required_configs:
        return
    resource = ConfigResource(ResourceType.TOPIC, found.name)
    entries = (await admin.describe_configs([resource], list(required_configs)))[resource]
    if isinstance(entries, KafkaError):
        raise entries
    values = {e.name: e.value for e in entries}
    for name, required in required_configs.items():
        actual = values.get(name) or ""
        if _items(actual) != _items(required):
            raise TopicMismatchError(found.name, name, actual, required)


def _items(value: str) -> set[str]:
    return {v.strip() for v in value.split(",") if v.strip()}


async def _wait_for_leaders(admin: AdminClient, name: str, timeout: float) -> TopicMetadata:
    """A topic just created is usable once metadata shows every partition with a leader."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = (await admin.topic_metadata([name]))[name]
        if found.error is None and found.partitions and all(p.leader >= 0 for p in found.partitions):
            return found
        if loop.time() > deadline:
            raise TimeoutError(f"topic {name} was created but has no leader after {timeout}s")
        await asyncio.sleep(0.05)
