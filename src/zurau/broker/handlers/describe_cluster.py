"""DescribeCluster: cluster id, controller id and the live brokers, for admin clients.

A broker describes broker endpoints (endpoint type 1), as Kafka's
``AuthHelper.computeDescribeClusterResponse`` does: a request for controllers (2) answers
MISMATCHED_ENDPOINT_TYPE (114) and any other type UNSUPPORTED_ENDPOINT_TYPE (115); at v0, whose error
table predates KIP-919, both are INVALID_REQUEST. Such refusals carry no cluster id or brokers.
``cluster_authorized_operations`` is Integer.MIN_VALUE unless asked for; with no authorizer every
cluster operation is allowed.

Brokers (KRaft): when the image has broker registrations, the answer lists the live brokers
(unfenced, not in controlled shutdown), or at v2 with ``include_fenced_brokers`` every registered
broker, each with the address of the listener the client connected through (a broker's first
listener when it has none of that name), its rack and whether it is fenced; the controller id is
the active controller's. An image without registrations (a single node that does not register)
is answered with this node alone, at its advertised address, as its own controller.
"""

from __future__ import annotations

from zurau.broker.handlers._common import controller_id
from zurau.broker.request_context import RequestContext
from zurau.metadata.image import MetadataImage
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidRequestError
from zurau.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBrokers,
)

API_KEY = ApiKey.DESCRIBE_CLUSTER

ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115
UNSET_OPERATIONS = -(2**31)
# AclOperation ids a CLUSTER resource supports (Kafka's AclEntry.supportedOperations(CLUSTER)):
# CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def _refusal(code: int, message: str) -> DescribeClusterResponse:
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


def handle(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
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
    image = ctx.image
    include_fenced = version >= 2 and bool(req.get("include_fenced_brokers"))
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": ENDPOINT_BROKERS,
        "cluster_id": image.cluster_id,
        "controller_id": controller_id(ctx, image),
        "brokers": _brokers(ctx, image, include_fenced),
        "cluster_authorized_operations": (
            CLUSTER_OPERATIONS if req.get("include_cluster_authorized_operations") else UNSET_OPERATIONS
        ),
    }


def _brokers(
    ctx: RequestContext, image: MetadataImage, include_fenced: bool
) -> list[DescribeClusterResponseBrokers]:
    if not image.brokers:
        host, port = ctx.advertised
        return [{"broker_id": ctx.node_id, "host": host, "port": port, "rack": _rack(ctx), "is_fenced": False}]
    regs = [image.brokers[b] for b in sorted(image.brokers)] if include_fenced else image.live_brokers()
    out: list[DescribeClusterResponseBrokers] = []
    for b in regs:
        address = b.address_for(ctx.listener)
        if address is not None:
            out.append(
                {"broker_id": b.id, "host": address[0], "port": address[1], "rack": b.rack, "is_fenced": b.fenced}
            )
    return out



def _rack(ctx: RequestContext) -> str | None:
    try:
        rack = ctx.config.get("broker.rack")
    except Exception:  # broker.rack not modelled by this config
        return None
    return rack or None
