"""ACLs over Kafka's CreateAcls, DescribeAcls and DeleteAcls (what ``kafka-acls.sh`` uses).

Bindings and filters are :mod:`zurau.protocol.acl`'s. Any broker accepts the requests (changes
go to the active controller, which writes them to the metadata log); the principal needs ALTER on
the cluster to change ACLs and DESCRIBE to list them.
"""

from __future__ import annotations

from collections.abc import Iterable

from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.typed_api import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.protocol.errors import KafkaError, for_code
from zurau.protocol.messages import (
    CreateAclsRequestCreations,
    DeleteAclsRequestFilters,
    DeleteAclsResponseFilterResultsMatchingAcls,
    DescribeAclsResponseResourcesAcls,
)


def _error(code: int, message: str | None, what: str) -> KafkaError:
    return for_code(code)(message or what)


def _filter_body(f: AclBindingFilter) -> DeleteAclsRequestFilters:
    """A filter as DeleteAcls sends it; DescribeAcls' request has the same fields."""
    return {
        "resource_type_filter": int(f.resource_type),
        "resource_name_filter": f.resource_name,
        "pattern_type_filter": int(f.pattern_type),
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": int(f.operation),
        "permission_type": int(f.permission),
    }


def _binding(
    resource_type: int,
    name: str,
    pattern: int,
    a: DescribeAclsResponseResourcesAcls | DeleteAclsResponseFilterResultsMatchingAcls,
) -> AclBinding:
    return AclBinding(
        ResourceType(resource_type), name, PatternType(pattern), a["principal"], a["host"],
        AclOperation(a["operation"]), AclPermissionType(a["permission_type"]),
    )


class AclAdmin:
    """``async with AclAdmin(config) as admin``: create, list and delete ACL bindings."""

    def __init__(self, config: ClientConfig | Cluster) -> None:
        self.cluster, self._owns = Cluster.of(config)

    async def __aenter__(self) -> AclAdmin:
        await self.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._owns:
            await self.cluster.close()

    async def create(self, bindings: Iterable[AclBinding]) -> list[KafkaError | None]:
        """One outcome per binding, in order: None (created, or existed already) or its error."""
        creations: list[CreateAclsRequestCreations] = [
            {
                "resource_type": int(b.resource_type),
                "resource_name": b.resource_name,
                "resource_pattern_type": int(b.pattern_type),
                "principal": b.principal,
                "host": b.host,
                "operation": int(b.operation),
                "permission_type": int(b.permission),
            }
            for b in bindings
        ]
        conn = await self.cluster.any_connection()
        resp = await conn.call(CREATE_ACLS({"creations": creations}))
        return [
            _error(r["error_code"], r["error_message"], "CreateAcls failed") if r["error_code"] else None
            for r in resp["results"]
        ]

    async def describe(self, flt: AclBindingFilter | None = None) -> list[AclBinding]:
        """The bindings matching ``flt`` (every binding when None); raises the broker's error."""
        conn = await self.cluster.any_connection()
        resp = await conn.call(DESCRIBE_ACLS({**_filter_body(flt or AclBindingFilter())}))
        if resp["error_code"]:
            raise _error(resp["error_code"], resp["error_message"], "DescribeAcls failed")
        return [
            _binding(r["resource_type"], r["resource_name"], r["pattern_type"], a)
            for r in resp["resources"]
            for a in r["acls"]
        ]

    async def delete(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding] | KafkaError]:
        """Per filter, in order: the bindings it removed, or its error."""
        conn = await self.cluster.any_connection()
        resp = await conn.call(DELETE_ACLS({"filters": [_filter_body(f) for f in filters]}))
        out: list[list[AclBinding] | KafkaError] = []
        for r in resp["filter_results"]:
            if r["error_code"]:
                out.append(_error(r["error_code"], r["error_message"], "DeleteAcls failed"))
            else:
                out.append([_binding(m["resource_type"], m["resource_name"], m["pattern_type"], m) for m in r["matching_acls"]])
        return out


__all__ = ["AclAdmin"]
