"""ACL checks as handlers ask them (:mod:`zurau.broker.auth.authorizer` decides).

Every helper is a no-op answer of "allowed" when the broker has no authorizer
(``ctx.services.authorizer is None``); the hot paths (Produce, Fetch) test that attribute
themselves and call in here only when an authorizer is configured.

Requests that arrive on a controller listener come from other nodes (votes, registrations, and
admin requests a broker forwards after authorizing them itself): they are checked once, as a
CLUSTER_ACTION on the cluster by the connection's principal (:func:`controller_listener_allowed`).
"""

from __future__ import annotations

from collections.abc import Iterable

from zurau.broker.auth.authorizer import peer_host
from zurau.broker.request_context import RequestContext
from zurau.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
USER_RESOURCE = ResourceType.USER
Op = AclOperation
# ConfigResource types (Kafka's ConfigResource.Type ids).
TOPIC_CONFIG_RESOURCE, BROKER_CONFIG_RESOURCE, BROKER_LOGGER_CONFIG_RESOURCE, GROUP_CONFIG_RESOURCE = (
    2,
    4,
    8,
    32,
)
CLIENT_METRICS_CONFIG_RESOURCE = 16
CLUSTER_AUTHORIZATION_FAILED = ClusterAuthorizationFailedError.code
TOPIC_AUTHORIZATION_FAILED = TopicAuthorizationFailedError.code
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = TransactionalIdAuthorizationFailedError.code


def _api(ctx: RequestContext) -> str:
    try:
        return ApiKey(ctx.header.api_key).name
    except ValueError:
        return str(ctx.header.api_key)


def allowed(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str, log: bool = True) -> bool:
    """True when the request's principal may do ``op`` on the resource (or no authorizer is set)."""
    authz = ctx.services.authorizer
    if authz is None:
        return True
    return authz.authorize(ctx.principal, peer_host(ctx.peer), op, rtype, name, _api(ctx), log)


def cluster_allowed(ctx: RequestContext, op: AclOperation, log: bool = True) -> bool:
    return allowed(ctx, op, CLUSTER, CLUSTER_NAME, log)


def allowed_names(
    ctx: RequestContext, op: AclOperation, rtype: ResourceType, names: Iterable[str], log: bool = True
) -> set[str]:
    """The subset of ``names`` the principal may do ``op`` on (each name decided once)."""
    authz = ctx.services.authorizer
    if authz is None:
        return set(names)
    host, api = peer_host(ctx.peer), _api(ctx)
    return {n for n in set(names) if authz.authorize(ctx.principal, host, op, rtype, n, api, log)}


def allowed_any(ctx: RequestContext, op: AclOperation, rtype: ResourceType) -> bool:
    """True when the principal may do ``op`` on some resource of ``rtype``."""
    authz = ctx.services.authorizer
    if authz is None:
        return True
    return authz.authorize_any(ctx.principal, peer_host(ctx.peer), op, rtype)


def controller_listener_allowed(ctx: RequestContext) -> bool:
    """For a request on a controller listener: CLUSTER_ACTION on the cluster."""
    return cluster_allowed(ctx, Op.CLUSTER_ACTION)


def config_denied(ctx: RequestContext, resource_type: int, name: str, op: AclOperation) -> KafkaError | None:
    """For a config resource (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs): ``op``
    (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic (2), else TOPIC_AUTHORIZATION_FAILED, on the
    group (32), else GROUP_AUTHORIZATION_FAILED, or on the cluster for a broker (4), broker
    logger (8) or client metrics subscription (16), else CLUSTER_AUTHORIZATION_FAILED; None: allowed (other resource types are left to
    the handler's own errors)."""
    if ctx.services.authorizer is None:
        return None
    if resource_type == TOPIC_CONFIG_RESOURCE:
        if not allowed(ctx, op, TOPIC, name):
            return TopicAuthorizationFailedError("Topic authorization failed.")
    elif resource_type == GROUP_CONFIG_RESOURCE:
        if not allowed(ctx, op, GROUP, name):
            return GroupAuthorizationFailedError("Group authorization failed.")
    elif resource_type in (
        BROKER_CONFIG_RESOURCE,
        BROKER_LOGGER_CONFIG_RESOURCE,
        CLIENT_METRICS_CONFIG_RESOURCE,
    ) and not cluster_allowed(
        ctx, op
    ):
        return ClusterAuthorizationFailedError("Cluster authorization failed.")
    return None


# Every operation a topic has (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
# ALTER_CONFIGS), and that bit set: what Kafka reports with no authorizer configured.
_TOPIC_OPS = (
    Op.READ,
    Op.WRITE,
    Op.CREATE,
    Op.DELETE,
    Op.ALTER,
    Op.DESCRIBE,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
)
TOPIC_OPERATIONS = sum(1 << op for op in _TOPIC_OPS)


def topic_operations(ctx: RequestContext, name: str) -> int:
    """A topic's ``topic_authorized_operations`` bit set: the operations the principal is allowed
    on it (checks not logged), or all of them with no authorizer."""
    if ctx.services.authorizer is None:
        return TOPIC_OPERATIONS
    return sum(1 << op for op in _TOPIC_OPS if allowed(ctx, op, TOPIC, name, log=False))


def topic_or_cluster_allowed(ctx: RequestContext, op: AclOperation, topic: str) -> bool:
    """``op`` on the cluster (not logged when denied) or on the topic (CreateTopics' rule)."""
    return cluster_allowed(ctx, op, log=False) or allowed(ctx, op, TOPIC, topic)


__all__ = [
    "CLUSTER",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TOPIC_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "GROUP",
    "TOPIC",
    "TOPIC_OPERATIONS",
    "TRANSACTIONAL_ID",
    "Op",
    "allowed",
    "allowed_any",
    "allowed_names",
    "cluster_allowed",
    "config_denied",
    "topic_operations",
    "controller_listener_allowed",
    "topic_or_cluster_allowed",
]
