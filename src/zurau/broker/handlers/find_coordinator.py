"""FindCoordinator: which broker coordinates a group (or a transactional id).

v0-v3 ask for one key, v4+ for a batch (``coordinator_keys``), answered one entry per key. A group
maps to partition ``abs(hash(group)) % offsets.topic.num.partitions`` of ``__consumer_offsets``,
which is created on the first request; the leader of that partition is the coordinator (on a
single node: this broker). Key type 1 (transactional ids) maps the same way to a partition of
``__transaction_state`` (created on the first request). Key type 2 (SHARE, v6+, KIP-932) names
a share-partition as ``groupId:topicId:partition`` (topic id in Kafka's base64 form) and maps it
to a partition of ``__share_group_state`` (created on the first request), whose leader is the
share coordinator; it needs CLUSTER_ACTION on the cluster (brokers ask it, never clients), as
Kafka's ``KafkaApis`` requires; a malformed key, or the SHARE type below v6, is INVALID_REQUEST.

In a cluster (the image has broker registrations) the coordinator of a key is the leader of its
partition, as Kafka answers: a missing internal topic is created and the answer is
COORDINATOR_NOT_AVAILABLE (clients retry); a leader that is unknown, fenced or in controlled
shutdown is COORDINATOR_NOT_AVAILABLE; otherwise the leader's address on the listener the client
connected through. When the leader is this broker, its own coordinator must also be serving the
partition (else COORDINATOR_NOT_AVAILABLE, or COORDINATOR_LOAD_IN_PROGRESS while loading). A
partition whose load failed is still led here: FindCoordinator names this broker, as Kafka's
does, and the group or transaction requests get NOT_COORDINATOR (coordinator_runtime.py).
"""

from __future__ import annotations

from typing import NamedTuple

from zurau.broker.handlers._authz import GROUP as GROUP_RESOURCE
from zurau.broker.handlers._authz import TRANSACTIONAL_ID, Op, allowed, cluster_allowed
from zurau.broker.handlers._groups import coordinator
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.service import GroupCoordinatorService
from zurau.coordinator.share.service import ShareCoordinatorService
from zurau.coordinator.txn.service import TxnCoordinatorService
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ClusterAuthorizationFailedError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    NotCoordinatorError,
    TransactionalIdAuthorizationFailedError,
)
from zurau.protocol.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinators,
)
from zurau.types import parse_kafka_uuid

API_KEY = ApiKey.FIND_COORDINATOR

GROUP, TRANSACTION, SHARE = 0, 1, 2
FIRST_SHARE_VERSION = 6


class Node(NamedTuple):
    """The coordinator's node as the response names it."""

    node_id: int
    host: str
    port: int


NO_NODE = Node(-1, "", -1)


def valid_share_key(key: str) -> bool:
    """Whether ``key`` is a share-partition's ``groupId:topicId:partition`` (Kafka's
    ``SharePartitionKey.validate``): three parts, a group id, a topic id, a partition >= 0."""
    parts = key.split(":")
    if len(parts) != 3 or not parts[0]:
        return False
    try:
        parse_kafka_uuid(parts[1])
        return int(parts[2]) >= 0
    except ValueError:
        return False


def _lookup(ctx: RequestContext, key: str, key_type: int) -> tuple[KafkaError | None, Node]:
    rt: GroupCoordinatorService | TxnCoordinatorService | ShareCoordinatorService
    if key_type == GROUP:
        if not allowed(ctx, Op.DESCRIBE, GROUP_RESOURCE, key):
            return GroupAuthorizationFailedError("Group authorization failed."), NO_NODE
        rt = coordinator(ctx)
    elif key_type == TRANSACTION:
        if not allowed(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, key):
            return TransactionalIdAuthorizationFailedError("Transactional id authorization failed."), NO_NODE
        rt = ctx.txns
    elif key_type == SHARE and ctx.api_version >= FIRST_SHARE_VERSION:
        if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
            return ClusterAuthorizationFailedError("Cluster authorization failed."), NO_NODE
        shares = ctx.shares
        if shares is None:
            return CoordinatorNotAvailableError("The share coordinator is not available."), NO_NODE
        if not valid_share_key(key):
            return InvalidRequestError(f"invalid share coordinator key {key!r}"), NO_NODE
        rt = shares
    else:
        return InvalidRequestError(f"unsupported coordinator key type {key_type}"), NO_NODE
    if ctx.image.brokers:
        return _leader_of(ctx, rt, key)
    err = rt.lookup_error(key)
    if err is not None:
        return err, NO_NODE
    host, port = ctx.advertised
    return None, Node(ctx.node_id, host, port)


def _leader_of(
    ctx: RequestContext,
    rt: GroupCoordinatorService | TxnCoordinatorService | ShareCoordinatorService,
    key: str,
) -> tuple[KafkaError | None, Node]:
    """The live leader of ``key``'s partition of the runtime's internal topic (cluster mode)."""
    image = ctx.image
    topic = image.get(rt.topic)
    if topic is None:
        err = rt.coordinator_error(key)  # creates the topic (in a cluster: starts creating it)
        image = ctx.image
        topic = image.get(rt.topic)
        if topic is None:
            return err or CoordinatorNotAvailableError(f"{rt.topic} is being created"), NO_NODE
    partition = rt.partition_for(key)
    registration = topic.partitions.get(partition)
    leader = image.brokers.get(registration.leader) if registration is not None else None
    if leader is None or not leader.live:
        return CoordinatorNotAvailableError(f"{rt.topic}-{partition} has no live leader"), NO_NODE
    if leader.id == ctx.node_id:
        err = rt.lookup_error(key)
        if isinstance(err, NotCoordinatorError):
            err = CoordinatorNotAvailableError(f"{rt.topic}-{partition} is not loaded on its leader yet")
        if err is not None:
            return err, NO_NODE
    address = leader.address_for(ctx.listener)
    if address is None:
        return CoordinatorNotAvailableError(f"broker {leader.id} has no endpoint"), NO_NODE
    return None, Node(leader.id, address[0], address[1])


def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    key_type = req.get("key_type", GROUP)
    if ctx.api_version >= 4:
        coordinators: list[FindCoordinatorResponseCoordinators] = []
        for key in req["coordinator_keys"]:
            err, node = _lookup(ctx, key, key_type)
            coordinators.append(
                {
                    "key": key,
                    "node_id": node.node_id,
                    "host": node.host,
                    "port": node.port,
                    "error_code": 0 if err is None else err.code,
                    "error_message": None if err is None else err.message,
                }
            )
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    err, node = _lookup(ctx, req["key"], key_type)
    return {
        "throttle_time_ms": 0,
        "error_code": 0 if err is None else err.code,
        "error_message": None if err is None else err.message,
        "node_id": node.node_id,
        "host": node.host,
        "port": node.port,
    }
