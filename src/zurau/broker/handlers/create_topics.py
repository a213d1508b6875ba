"""CreateTopics: create topics with a partition count, replication factor or manual assignment,
and topic config overrides.

Per topic, in the order Kafka's controller checks (``ControllerApis.createTopics`` and
``ReplicationControlManager.createTopics``):

* a name given more than once: INVALID_REQUEST "Duplicate topic name." (one result per such name;
  none of them is created);
* ``__cluster_metadata``: TOPIC_AUTHORIZATION_FAILED, as Kafka refuses it ("Authorization failed.");
* an illegal name: INVALID_TOPIC_EXCEPTION; an existing one: TOPIC_ALREADY_EXISTS;
* configs: unknown names, null or malformed values: INVALID_CONFIG with Kafka's message;
* a manual assignment requires ``num_partitions`` and ``replication_factor`` of -1
  (INVALID_REQUEST otherwise); its partition ids must be 0..n-1 without repeats and every replica
  list must name only this node, once, with one replication factor for all partitions
  (INVALID_REPLICA_ASSIGNMENT);
* otherwise -1 takes ``num.partitions`` / ``default.replication.factor``; 0 or below -1 is
  INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR; a replication factor above 1 is
  INVALID_REPLICATION_FACTOR (one live broker).

``validate_only`` runs every check and creates nothing; its answer has a zero topic id. From v5
the result reports the partition count, replication factor and every config of the topic with its
value and source (sensitive values null), as Kafka does.
"""

from __future__ import annotations

import uuid
from typing import Any

from zurau.broker.handlers._common import (
    ZERO_UUID,
    check_topic_configs,
    duplicated,
    error_of,
    validate_replica_list,
)
from zurau.broker.request_context import RequestContext
from zurau.config import describe_topic_config
from zurau.metadata.topic_registry import validate_topic_name
from zurau.protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
)

API_KEY = 19

CLUSTER_METADATA_TOPIC = "__cluster_metadata"


def _error(name: str, code: int, message: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "topic_config_error_code": 0,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


def _manual_assignment(node_id: int, assignments: list[dict[str, Any]]) -> tuple[int, int]:
    """Check a manual replica assignment; returns (partitions, replication factor)."""
    seen: set[int] = set()
    replication_factor: int | None = None
    for a in assignments:
        index = a["partition_index"]
        if index in seen:
            raise InvalidReplicaAssignmentError(
                f"Found multiple manual partition assignments for partition {index}"
            )
        validate_replica_list(node_id, a["broker_ids"], replication_factor)
        replication_factor = len(a["broker_ids"])
        seen.add(index)
    if seen != set(range(len(seen))):
        raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
    assert replication_factor is not None
    return len(seen), replication_factor


def _create(ctx: RequestContext, topic: dict[str, Any], validate_only: bool) -> dict[str, Any]:
    name = topic["name"]
    if name == CLUSTER_METADATA_TOPIC:
        raise TopicAuthorizationFailedError("Authorization failed.")
    validate_topic_name(name)
    if ctx.image.get(name) is not None:
        raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
    configs: dict[str, str | None] = {}
    for c in topic["configs"]:
        configs[c["name"]] = c["value"]
    check_topic_configs(ctx.config, configs)

    partitions = topic["num_partitions"]
    replication_factor = topic["replication_factor"]
    if topic["assignments"]:
        if replication_factor != -1:
            raise InvalidRequestError(
                "A manual partition assignment was specified, but replication factor was not set to -1."
            )
        if partitions != -1:
            raise InvalidRequestError(
                "A manual partition assignment was specified, but numPartitions was not set to -1."
            )
        partitions, replication_factor = _manual_assignment(ctx.node_id, topic["assignments"])
    else:
        if replication_factor < -1 or replication_factor == 0:
            raise InvalidReplicationFactorError(
                "Replication factor was set to an invalid non-positive value."
            )
        if partitions < -1 or partitions == 0:
            raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
        if partitions == -1:
            partitions = ctx.config.get("num.partitions")
        if replication_factor == -1:
            replication_factor = ctx.config.get("default.replication.factor")

    created = ctx.controller.create_topic(name, partitions, replication_factor, configs, validate_only=validate_only)
    stored = created.configs if created is not None else {k: v for k, v in configs.items() if v is not None}
    topic_id: uuid.UUID = created.topic_id if created is not None else ZERO_UUID
    return {
        "name": name,
        "topic_id": topic_id,
        "error_code": 0,
        "error_message": None,
        "topic_config_error_code": 0,
        "num_partitions": partitions,
        "replication_factor": replication_factor,
        "configs": [
            {
                "name": e.name,
                "value": None if e.sensitive else e.value_str,
                "read_only": e.read_only,
                "config_source": e.source,
                "is_sensitive": e.sensitive,
            }
            for e in describe_topic_config(ctx.config, stored)
        ],
    }


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    topics = req["topics"]
    validate_only = bool(req["validate_only"])
    dups = duplicated([t["name"] for t in topics])
    results: list[dict[str, Any]] = []
    for t in topics:
        name = t["name"]
        if name in dups:
            continue
        try:
            results.append(_create(ctx, t, validate_only))
        except Exception as e:
            code, msg = error_of(e)
            results.append(_error(name, code, msg))
    for name in sorted(dups):
        results.append(_error(name, InvalidRequestError.code, "Duplicate topic name."))
    return {"throttle_time_ms": 0, "topics": results}
