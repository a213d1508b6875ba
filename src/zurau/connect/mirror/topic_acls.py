"""MirrorMaker 2's topic ACL sync (the source connector's ``syncTopicAcls``), over DescribeAcls on the
source and CreateAcls on the target.

Every ``sync.topic.acls.interval.seconds`` (while ``sync.topic.acls.enabled``) the source's TOPIC
bindings are listed and, as MM2 does, these are copied:

* only LITERAL patterns (a PREFIXED or wildcard-pattern binding is not copied: its prefix does not
  name one remote topic), whose topic is replicated by this flow;
* not ALLOW WRITE: only MirrorMaker writes to a remote topic;
* renamed to the remote topic, ALLOW ALL downgraded to ALLOW READ (same principal and host);
  every other entry (other ALLOW operations, every DENY) unchanged.

Creating a binding that exists is a no-op, so the sync is idempotent; bindings removed from the
source stay on the target (MM2 never deletes ACLs). A source without an authorizer answers
SECURITY_DISABLED: that is logged once and the sync skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import replace

from zurau.client.acl_admin import AclAdmin
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.protocol.errors import KafkaError, SecurityDisabledError

log = logging.getLogger("zurau.connect.mirror")

ANY_TOPIC_ACL = AclBindingFilter(resource_type=ResourceType.TOPIC, pattern_type=PatternType.ANY)


def should_replicate_acl(binding: AclBinding) -> bool:
    return not (binding.permission == AclPermissionType.ALLOW and binding.operation == AclOperation.WRITE)


def target_acl_binding(binding: AclBinding, remote_topic: str) -> AclBinding:
    """The binding for the remote topic (ALLOW ALL becomes ALLOW READ)."""
    operation = binding.operation
    if binding.permission == AclPermissionType.ALLOW and operation == AclOperation.ALL:
        operation = AclOperation.READ
    return replace(binding, resource_name=remote_topic, pattern_type=PatternType.LITERAL, operation=operation)


def bindings_to_sync(
    bindings: Iterable[AclBinding], replicates: Callable[[str], bool], remote_topic: Callable[[str], str]
) -> list[AclBinding]:
    """The target bindings for the source's ``bindings`` (see the module docstring)."""
    out: list[AclBinding] = []
    for b in bindings:
        if (
            b.resource_type == ResourceType.TOPIC
            and b.pattern_type == PatternType.LITERAL
            and should_replicate_acl(b)
            and replicates(b.resource_name)
        ):
            target = target_acl_binding(b, remote_topic(b.resource_name))
            if target not in out:
                out.append(target)
    return out


class TopicAclSync:
    """One flow's ACL sync; remembers whether the source said it has no authorizer."""

    def __init__(self, replicates: Callable[[str], bool], remote_topic: Callable[[str], str]) -> None:
        self.replicates = replicates
        self.remote_topic = remote_topic
        self.no_authorizer = False

    async def run(self, source: AclAdmin, target: AclAdmin) -> list[AclBinding]:
        """Copy the bindings; returns those sent to the target."""
        try:
            found = await source.describe(ANY_TOPIC_ACL)
        except SecurityDisabledError:
            if not self.no_authorizer:
                log.info(
                    "mirror: the source cluster has no ACL authorizer, so no topic ACLs are synced "
                    "(sync.topic.acls.enabled=false turns the sync off)"
                )
            self.no_authorizer = True
            return []
        wanted = bindings_to_sync(found, self.replicates, self.remote_topic)
        if not wanted:
            return []
        for binding, error in zip(wanted, await target.create(wanted), strict=False):
            if isinstance(error, KafkaError):
                log.warning("mirror: cannot create ACL %s on the target: %s", binding, error)
        return wanted
