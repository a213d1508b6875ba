"""Helpers shared by handlers: topic lookup by name or id, and error-code mapping."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.metadata.topic_registry import TopicMetadata
from zurau.protocol.errors import (
    KafkaError,
    UnknownServerError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)

log = logging.getLogger("zurau.handlers")

ZERO_UUID = uuid.UUID(int=0)


def resolve_topic(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> TopicMetadata:
    """Find a topic by id (when given and non-zero) or by name; raise the matching Kafka error."""
    topics = ctx.image
    if topic_id is not None and topic_id != ZERO_UUID:
        t = topics.by_id(topic_id)
        if t is None:
            raise UnknownTopicIdError(f"unknown topic id {topic_id}")
        return t
    t = topics.get(name or "")
    if t is None:
        raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
    return t


def error_of(exc: BaseException) -> tuple[int, str]:
    """Kafka error code and message for an exception; unexpected ones are logged."""
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    log.exception("unexpected error", exc_info=exc)
    return UnknownServerError.code, f"{type(exc).__name__}: {exc}"


def check_leader_epoch(current_leader_epoch: int, leader_epoch: int) -> None:
    """KIP-320: a client's epoch newer than ours is unknown to us, an older one is fenced."""
    from zurau.protocol.errors import FencedLeaderEpochError, UnknownLeaderEpochError

    if current_leader_epoch < 0 or current_leader_epoch == leader_epoch:
        return
    if current_leader_epoch > leader_epoch:
        raise UnknownLeaderEpochError(f"leader epoch {current_leader_epoch} is newer than {leader_epoch}")
    raise FencedLeaderEpochError(f"leader epoch {current_leader_epoch} is older than {leader_epoch}")


Response = dict[str, Any]


# --------------------------------------------------------------------------- admin helpers
# Kafka's ConfigResource.Type ids, as DescribeConfigs/AlterConfigs/IncrementalAlterConfigs use them.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
KNOWN_RESOURCE_TYPES = frozenset(
    {RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, 16, 32}
)  # 16 CLIENT_METRICS, 32 GROUP


def duplicated(items: list[Any]) -> set[Any]:
    """The items that occur more than once (Kafka answers each such one with INVALID_REQUEST)."""
    seen: set[Any] = set()
    dups: set[Any] = set()
    for item in items:
        if item in seen:
            dups.add(item)
        seen.add(item)
    return dups


def validate_replica_list(node_id: int, broker_ids: list[int], replication_factor: int | None) -> None:
    """One partition's manual replica list, checked as Kafka's controller does on this single node."""
    from zurau.protocol.errors import InvalidReplicaAssignmentError

    if not broker_ids:
        raise InvalidReplicaAssignmentError("The manual partition assignment includes an empty replica list.")
    seen: set[int] = set()
    for b in broker_ids:
        if b in seen:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes the broker {b} more than once."
            )
        seen.add(b)
        if b != node_id:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {b}, but no such broker is registered."
            )
    if replication_factor is not None and len(broker_ids) != replication_factor:
        raise InvalidReplicaAssignmentError(
            f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but this is "
            f"not consistent with previous partitions, which have {replication_factor} replica(s)."
        )


def check_topic_configs(broker_config: Any, configs: dict[str, Any]) -> None:
    """Validate a topic's full set of overrides as the live log would apply them.

    Raises InvalidConfigError (INVALID_CONFIG) with Kafka's message: unknown names, null or
    malformed values, cross-field rules against the broker's topic defaults, and the local log's
    own limits (``LogConfig``), so a config that is accepted can always be applied.
    """
    import dataclasses

    from zurau.config import ConfigError, resolve_topic_config
    from zurau.protocol.errors import InvalidConfigError
    from zurau.storage.log_config import LogConfig

    try:
        typed = resolve_topic_config(broker_config, configs)
    except ConfigError as e:
        raise InvalidConfigError(str(e)) from None
    LogConfig(**{f.name: typed[f.name] for f in dataclasses.fields(LogConfig) if f.name in typed})
