"""DescribeCluster: cluster id, controller id and the live brokers, for admin clients.

A broker describes broker endpoints (endpoint type 1), as Kafka's
``AuthHelper.computeDescribeClusterResponse`` does: a request for controllers (2) answers
MISMATCHED_ENDPOINT_TYPE (114) and any other type UNSUPPORTED_ENDPOINT_TYPE (115); at v0, whose error
table predates KIP-919, both are INVALID_REQUEST. Such refusals carry no cluster id or brokers.
``cluster_authorized_operations`` is Integer.MIN_VALUE unless asked for; with no authorizer every
cluster operation is allowed. On a single node the controller is this broker.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidRequestError

API_KEY = ApiKey.DESCRIBE_CLUSTER

ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115
UNSET_OPERATIONS = -(2**31)
# AclOperation ids a CLUSTER resource supports (Kafka's AclEntry.supportedOperations(CLUSTER)):
# CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def _refusal(code: int, message: str) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "endpoint_type": ENDPOINT_BROKERS,
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
        "cluster_authorized_operations": UNSET_OPERATIONS,
    }


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    version = ctx.api_version
    endpoint_type = req.get("endpoint_type", ENDPOINT_BROKERS)
    if endpoint_type not in (ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS):
        code = InvalidRequestError.code if version == 0 else UNSUPPORTED_ENDPOINT_TYPE
        return _refusal(code, f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type != ENDPOINT_BROKERS:
        code = InvalidRequestError.code if version == 0 else MISMATCHED_ENDPOINT_TYPE
        return _refusal(
            code,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
        )
    host, port = ctx.advertised
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": ENDPOINT_BROKERS,
        "cluster_id": ctx.image.cluster_id,
        "controller_id": ctx.node_id,
        "brokers": [
            {
                "broker_id": ctx.node_id,
                "host": host,
                "port": port,
                "rack": _rack(ctx),
                "is_fenced": False,
            }
        ],
        "cluster_authorized_operations": (
            CLUSTER_OPERATIONS if req.get("include_cluster_authorized_operations") else UNSET_OPERATIONS
        ),
    }


def _rack(ctx: RequestContext) -> str | None:
    try:
        rack = ctx.config.get("broker.rack")
    except Exception:  # broker.rack not modelled by this config
        return None
    return rack or None
