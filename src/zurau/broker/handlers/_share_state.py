"""Helpers shared by the share-group-state handlers (InitializeShareGroupState ...
ReadShareGroupStateSummary, api keys 83-87, KIP-932).

These APIs are inter-broker: share-partition leaders and the group coordinator call the share
coordinator. As in Kafka's ``KafkaApis``, each needs CLUSTER_ACTION on the cluster; without it
every requested partition is answered CLUSTER_AUTHORIZATION_FAILED. A broker that does not serve
the share coordinator answers COORDINATOR_NOT_AVAILABLE for every partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zurau.broker.handlers._authz import Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.coordinator.share.service import ShareCoordinatorService
from zurau.protocol.errors import ClusterAuthorizationFailedError, CoordinatorNotAvailableError, KafkaError


def share_coordinator(ctx: RequestContext) -> tuple[ShareCoordinatorService | None, KafkaError | None]:
    """The share coordinator, or the error every partition of the request gets instead."""
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # brokers only
        return None, ClusterAuthorizationFailedError("Cluster authorization failed.")
    service = ctx.shares
    if service is None:
        return None, CoordinatorNotAvailableError("The share coordinator is not available on this broker.")
    return service, None


def error_results(topics: Iterable[Mapping[str, Any]], error: KafkaError, **fields: Any) -> list[Any]:
    """The ``results`` of a response answering ``error`` for every requested partition, with the
    partition-level ``fields`` (the response's defaults) alongside."""
    return [
        {
            "topic_id": t["topic_id"],
            "partitions": [
                {
                    "partition": p["partition"],
                    "error_code": error.code,
                    "error_message": error.message,
                    **fields,
                }
                for p in t["partitions"]
            ],
        }
        for t in topics
    ]
