"""The controller's part of ACLs: CreateAcls and DeleteAcls as metadata records, DescribeAcls
from an image.

Validation, as Kafka's ``AclControlManager`` (and the broker's ``AclApis`` in front of it), each
failure an INVALID_REQUEST result for that creation or filter only:

* a creation needs a concrete resource type (not UNKNOWN/ANY), pattern type LITERAL or PREFIXED,
  a concrete operation (not UNKNOWN/ANY), permission ALLOW or DENY, a non-empty resource name
  (``kafka-cluster`` for CLUSTER) and a principal ``Type:name`` with a non-empty name;
* a filter (DescribeAcls, DeleteAcls) must not hold UNKNOWN in any field and its principal, when
  given, must parse.

Creating a binding that already exists (in the image or earlier in the request) succeeds
without a new record; each new binding gets a fresh random id in an ``AccessControlEntryRecord``.
A DeleteAcls filter removes every binding it matches that an earlier filter of the same request
did not already remove (one ``RemoveAccessControlEntryRecord`` per binding), and lists them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord
from zurau.protocol.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    enum_value,
    parse_principal,
)
from zurau.protocol.errors import InvalidRequestError
from zurau.protocol.messages import (
    CreateAclsRequestCreations,
    CreateAclsResponseResults,
    DeleteAclsRequestFilters,
    DeleteAclsResponseFilterResults,
    DeleteAclsResponseFilterResultsMatchingAcls,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseResources,
    DescribeAclsResponseResourcesAcls,
)


def binding_from_creation(c: CreateAclsRequestCreations) -> AclBinding:
    """The binding a CreateAcls creation asks for; InvalidRequestError when it is not a valid one."""
    rtype = enum_value(ResourceType, c["resource_type"])
    ptype = enum_value(PatternType, c.get("resource_pattern_type", PatternType.LITERAL))
    op = enum_value(AclOperation, c["operation"])
    perm = enum_value(AclPermissionType, c["permission_type"])
    name, principal = c["resource_name"], c["principal"]
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidRequestError(f"Invalid patternType {ptype.name}")
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidRequestError(f"Invalid resourceType {rtype.name}")
    if op in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidRequestError(f"Invalid operation {op.name}")
    if perm not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidRequestError(f"Invalid permissionType {perm.name}")
    if not name:
        raise InvalidRequestError("Resource name should not be empty")
    if rtype == ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise InvalidRequestError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    try:
        _, principal_name = parse_principal(principal)
    except ValueError as e:
        raise InvalidRequestError(str(e)) from None
    if not principal_name:
        raise InvalidRequestError("Invalid empty principal")
    return AclBinding(rtype, name, ptype, principal, c["host"], op, perm)  # type: ignore[arg-type]


def filter_from_request(f: DescribeAclsRequest | DeleteAclsRequestFilters) -> AclBindingFilter:
    """A DescribeAcls request / DeleteAcls filter as a filter; InvalidRequestError when invalid."""
    flt = AclBindingFilter(
        enum_value(ResourceType, f["resource_type_filter"]),  # type: ignore[arg-type]
        f["resource_name_filter"],
        enum_value(PatternType, f.get("pattern_type_filter", PatternType.LITERAL)),  # type: ignore[arg-type]
        f["principal_filter"],
        f["host_filter"],
        enum_value(AclOperation, f["operation"]),  # type: ignore[arg-type]
        enum_value(AclPermissionType, f["permission_type"]),  # type: ignore[arg-type]
    )
    unknown = flt.unknown_field()
    if unknown is not None:
        raise InvalidRequestError(f"Unknown {unknown} filter")
    if flt.principal is not None:
        try:
            parse_principal(flt.principal)
        except ValueError as e:
            raise InvalidRequestError(str(e)) from None
    return flt


def _record(acl_id: uuid.UUID, b: AclBinding) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        acl_id, int(b.resource_type), b.resource_name, int(b.pattern_type), b.principal, b.host,
        int(b.operation), int(b.permission),
    )


def create_acls(
    image: MetadataImage, creations: list[CreateAclsRequestCreations]
) -> ControllerResult[list[CreateAclsResponseResults]]:
    """The records and per-creation results (request order) of one CreateAcls request."""
    existing = set(image.acls.values())
    records: list[MetadataRecord] = []
    results: list[CreateAclsResponseResults] = []
    for c in creations:
        try:
            binding = binding_from_creation(c)
        except InvalidRequestError as e:
            results.append({"error_code": e.code, "error_message": str(e)})
            continue
        if binding not in existing:
            existing.add(binding)
            records.append(_record(uuid.uuid4(), binding))
        results.append({"error_code": 0, "error_message": None})
    return ControllerResult(records, results)


def binding_dict(b: AclBinding) -> DeleteAclsResponseFilterResultsMatchingAcls:
    """A binding as DeleteAcls lists it (also the base of DescribeAcls entries)."""
    return {
        "error_code": 0,
        "error_message": None,
        "resource_type": int(b.resource_type),
        "resource_name": b.resource_name,
        "pattern_type": int(b.pattern_type),
        "principal": b.principal,
        "host": b.host,
        "operation": int(b.operation),
        "permission_type": int(b.permission),
    }


def _sorted(acls: Mapping[uuid.UUID, AclBinding]) -> list[tuple[uuid.UUID, AclBinding]]:
    def key(item: tuple[uuid.UUID, AclBinding]) -> tuple[Any, ...]:
        b = item[1]
        return (b.resource_type, b.pattern_type, b.resource_name, b.principal, b.host, b.operation, b.permission)

    return sorted(acls.items(), key=key)


def delete_acls(
    image: MetadataImage, filters: list[DeleteAclsRequestFilters]
) -> ControllerResult[list[DeleteAclsResponseFilterResults]]:
    """The records and per-filter results (request order) of one DeleteAcls request."""
    removed: set[uuid.UUID] = set()
    records: list[MetadataRecord] = []
    results: list[DeleteAclsResponseFilterResults] = []
    ordered = _sorted(image.acls)
    for f in filters:
        try:
            flt = filter_from_request(f)
        except InvalidRequestError as e:
            results.append({"error_code": e.code, "error_message": str(e), "matching_acls": []})
            continue
        matching: list[DeleteAclsResponseFilterResultsMatchingAcls] = []
        for acl_id, b in ordered:
            if acl_id not in removed and flt.matches(b):
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(acl_id))
                matching.append(binding_dict(b))
        results.append({"error_code": 0, "error_message": None, "matching_acls": matching})
    return ControllerResult(records, results)


def describe_acls(image: MetadataImage, req: DescribeAclsRequest) -> DescribeAclsResponse:
    """The DescribeAcls response body (bar throttle time) for one filter, grouped per resource
    pattern in a stable order."""
    try:
        flt = filter_from_request(req)
    except InvalidRequestError as e:
        return {"error_code": e.code, "error_message": str(e), "resources": []}
    groups: dict[tuple[int, str, int], list[DescribeAclsResponseResourcesAcls]] = {}
    for _, b in _sorted(image.acls):
        if flt.matches(b):
            groups.setdefault((int(b.resource_type), b.resource_name, int(b.pattern_type)), []).append(
                {"principal": b.principal, "host": b.host, "operation": int(b.operation),
                 "permission_type": int(b.permission)}
            )
    resources: list[DescribeAclsResponseResources] = [
        {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": acls}
        for (rt, name, pt), acls in groups.items()
    ]
    return {"error_code": 0, "error_message": None, "resources": resources}
