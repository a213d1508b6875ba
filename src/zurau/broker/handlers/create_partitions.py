"""CreatePartitions: grow topics to a larger partition count.

Per topic, as Kafka's controller does: a name given twice is INVALID_REQUEST ("Duplicate topic
name.", one result for it); an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to or below
the current one INVALID_PARTITIONS; manual ``assignments`` (null lets the broker place the new
partitions) must hold exactly one replica list per new partition, each naming only this node, once,
with the topic's replication factor, else INVALID_REPLICA_ASSIGNMENT. ``validate_only`` checks
everything and changes nothing.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._common import duplicated, error_of, validate_replica_list
from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)

API_KEY = 37


def _grow(
    ctx: RequestContext, name: str, count: int, assignments: list[dict[str, Any]] | None, validate_only: bool
) -> None:
    t = ctx.image.get(name)
    if t is None:
        raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
    current = t.partitions
    if count == current:
        raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
    if count < current:
        raise InvalidPartitionsError(
            f"The topic {name} currently has {current} partition(s); {count} would not be an increase."
        )
    if assignments is not None:
        additional = count - current
        if len(assignments) != additional:
            raise InvalidReplicaAssignmentError(
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified."
            )
        p0 = ctx.replica_manager.get(name, 0)
        replication_factor = len(p0.replicas) if p0 is not None else 1
        for a in assignments:
            validate_replica_list(ctx.node_id, a["broker_ids"], replication_factor)
    ctx.controller.add_partitions(name, count, validate_only=validate_only)


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    topics = req["topics"]
    dups = duplicated([t["name"] for t in topics])
    results: list[dict[str, Any]] = []
    for name in sorted(dups):
        results.append(
            {"name": name, "error_code": InvalidRequestError.code, "error_message": "Duplicate topic name."}
        )
    for t in topics:
        name = t["name"]
        if name in dups:
            continue
        try:
            _grow(ctx, name, t["count"], t["assignments"], bool(req["validate_only"]))
            results.append({"name": name, "error_code": 0, "error_message": None})
        except Exception as e:
            code, msg = error_of(e)
            results.append({"name": name, "error_code": code, "error_message": msg})
    return {"throttle_time_ms": 0, "results": results}
