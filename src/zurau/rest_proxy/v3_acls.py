"""ACLs in Confluent's v3 API: ``GET``/``POST``/``DELETE /v3/clusters/{cluster_id}/acls`` and
``POST /v3/clusters/{cluster_id}/acls:batch``, over Kafka's DescribeAcls, CreateAcls and
DeleteAcls (:class:`~zurau.client.acl_admin.AclAdmin`).

* Enum values (``resource_type``, ``pattern_type``, ``operation``, ``permission``) are Kafka's
  names, in any case (Confluent's proxy converts them case-insensitively); a name that is not
  one answers 400, and so does ``UNKNOWN`` anywhere. Resource types are the spec's (``USER`` is
  not one; a binding on a USER resource is shown as ``UNKNOWN``, as Confluent's proxy does).
* Search (``GET``) filters by the query parameters, each defaulting to ANY / anything; ``DELETE``
  needs ``resource_type``, ``pattern_type``, ``operation`` and ``permission`` (ANY is allowed,
  but must be said: a bare ``DELETE`` never removes every ACL) and answers the removed bindings.
* Creating (``POST``, one binding, 201 with a ``Location``; ``acls:batch``, ``{"data": [...]}``,
  204 like Confluent's proxy, although its spec says 201) checks every binding before any is
  sent: a concrete resource type, ``LITERAL`` or ``PREFIXED``, a concrete operation, ``ALLOW`` or
  ``DENY``, a ``Type:name`` principal, a host, and ``kafka-cluster`` as the only CLUSTER name
  (40002). The broker's own refusals keep their Kafka meaning (403 without ALTER on the
  cluster, 400 for a cluster without an authorizer).
* Bindings are sorted by resource type, name, pattern type, principal, host, operation and
  permission (enum order, as Confluent's proxy does); each one's ``metadata.self`` is the search
  URL that finds exactly it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import IntEnum
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from zurau.protocol.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.protocol.errors import KafkaError
from zurau.rest_proxy.errors import RestProxyError, bad_request, endpoint
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.request_bodies import read_json, required_text
from zurau.rest_proxy.v3_resources import V3Links, collection, resource

E = TypeVar("E", bound=IntEnum)

RESOURCE_TYPES = tuple(t for t in ResourceType if t != ResourceType.USER)
"""The spec's ``AclResourceType`` (a closed enum): Kafka's without USER."""
INVALID_CLUSTER_NAME = 40002
FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")


def _enum(cls: type[E], allowed: tuple[E, ...], name: str, raw: Any) -> E:
    """``raw`` (a name, any case) as a member of ``allowed`` (400 otherwise)."""
    if not isinstance(raw, str):
        raise bad_request(f"{name} must be a string, not {json.dumps(raw)[:60]}")
    member = cls.__members__.get(raw.strip().upper())
    if member is None or member == 0 or (cls is ResourceType and member not in RESOURCE_TYPES):
        names = ", ".join(m.name for m in allowed if m != 0)
        raise bad_request(f"{name} must be one of {names}, not '{raw[:60]}'")
    if member not in allowed:
        raise bad_request(f"{name} cannot be {member.name}")
    return member


def _resource_type_name(t: ResourceType) -> str:
    return t.name if t in RESOURCE_TYPES else "UNKNOWN"


# ---------------------------------------------------------------------------- filters
def _filter(params: Mapping[str, str], *, required: bool) -> AclBindingFilter:
    """The query parameters as a filter; with ``required`` the four enums must be given."""

    def given(key: str) -> str | None:
        raw = params.get(key)
        if raw is None or raw == "":
            if required:
                raise bad_request(f"{key} cannot be unspecified or UNKNOWN")
            return None
        return raw

    rtype, pattern, operation, permission = (given(k) for k in ("resource_type", "pattern_type", "operation", "permission"))
    return AclBindingFilter(
        resource_type=ResourceType.ANY if rtype is None else _enum(ResourceType, RESOURCE_TYPES, "resource_type", rtype),
        resource_name=params.get("resource_name") or None,
        pattern_type=PatternType.ANY if pattern is None else _enum(PatternType, tuple(PatternType), "pattern_type", pattern),
        principal=params.get("principal") or None,
        host=params.get("host") or None,
        operation=AclOperation.ANY if operation is None else _enum(AclOperation, tuple(AclOperation), "operation", operation),
        permission=AclPermissionType.ANY
        if permission is None
        else _enum(AclPermissionType, tuple(AclPermissionType), "permission", permission),
    )


def _search_url(links: V3Links, fields: Mapping[str, str]) -> str:
    return f"{links.url('acls')}?{urlencode(fields, quote_via=quote, safe='*')}"


def _filter_fields(f: AclBindingFilter) -> dict[str, str]:
    return {
        "resource_type": _resource_type_name(f.resource_type),
        "resource_name": f.resource_name or "",
        "pattern_type": f.pattern_type.name,
        "principal": f.principal or "",
        "host": f.host or "",
        "operation": f.operation.name,
        "permission": f.permission.name,
    }


def _binding_fields(b: AclBinding) -> dict[str, str]:
    return {
        "resource_type": _resource_type_name(b.resource_type),
        "resource_name": b.resource_name,
        "pattern_type": b.pattern_type.name,
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation.name,
        "permission": b.permission.name,
    }


def _sort_key(b: AclBinding) -> tuple[Any, ...]:
    return (b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host, b.operation, b.permission)


def acl_data(links: V3Links, b: AclBinding) -> dict[str, Any]:
    fields = _binding_fields(b)
    data = resource("KafkaAcl", _search_url(links, fields), None, {"cluster_id": links.cluster_id, **fields})
    del data["metadata"]["resource_name"]  # an ACL has no CRN of its own
    return data


# ---------------------------------------------------------------------------- creation
def binding(entry: Any, where: str = "") -> AclBinding:
    """One binding to create, checked (see the module docstring); ``where`` prefixes messages."""
    if not isinstance(entry, dict):
        raise bad_request(f"{where}an ACL must be a JSON object with {', '.join(FIELDS)}")
    for key in FIELDS:
        if entry.get(key) is None:
            raise bad_request(f"{where}{key} is required")
    concrete_types = tuple(t for t in RESOURCE_TYPES if t != ResourceType.ANY)
    rtype = _enum(ResourceType, concrete_types, f"{where}resource_type", entry["resource_type"])
    pattern = _enum(PatternType, (PatternType.LITERAL, PatternType.PREFIXED), f"{where}pattern_type", entry["pattern_type"])
    operation = _enum(
        AclOperation, tuple(o for o in AclOperation if o > AclOperation.ANY), f"{where}operation", entry["operation"]
    )
    permission = _enum(
        AclPermissionType, (AclPermissionType.DENY, AclPermissionType.ALLOW), f"{where}permission", entry["permission"]
    )
    name, principal, host = (required_text(entry[k], f"{where}{k}") for k in ("resource_name", "principal", "host"))
    kind, sep, who = principal.partition(":")
    if not sep or not kind or not who:
        raise bad_request(f"{where}principal must be Type:name (User:alice, User:*), not '{principal[:60]}'")
    if rtype == ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise RestProxyError(400, INVALID_CLUSTER_NAME, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    return AclBinding(rtype, name, pattern, principal, host, operation, permission)


def _raise_first(results: list[KafkaError | None]) -> None:
    for err in results:
        if err is not None:
            raise err


# ---------------------------------------------------------------------------- routes
def routes(api: ProxyApi) -> list[BaseRoute]:
    async def links_of(request: Request) -> V3Links:
        return V3Links(api.base_url(request), await api.check_cluster(request))

    @endpoint
    async def search(request: Request) -> Response:
        links = await links_of(request)
        flt = _filter(request.query_params, required=False)
        found = await (await api.clients(request)).acls.describe(flt)
        body = collection(
            "KafkaAclList",
            _search_url(links, _filter_fields(flt)),
            (acl_data(links, b) for b in sorted(found, key=_sort_key)),
        )
        return Response(json.dumps(body), media_type="application/json")

    @endpoint
    async def create(request: Request) -> Response:
        links = await links_of(request)
        b = binding(await read_json(api, request))
        _raise_first(await (await api.clients(request)).acls.create([b]))
        return Response(status_code=201, headers={"Location": _search_url(links, _binding_fields(b))})

    @endpoint
    async def create_batch(request: Request) -> Response:
        await links_of(request)
        body = await read_json(api, request)
        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise bad_request('the body must be {"data": [ACL, ...]}')
        bindings = [binding(entry, f"data[{i}].") for i, entry in enumerate(body["data"])]
        if bindings:
            _raise_first(await (await api.clients(request)).acls.create(bindings))
        return Response(status_code=204)

    @endpoint
    async def delete(request: Request) -> Response:
        links = await links_of(request)
        flt = _filter(request.query_params, required=True)
        (result,) = await (await api.clients(request)).acls.delete([flt])
        if isinstance(result, KafkaError):
            raise result
        body = {"data": [acl_data(links, b) for b in sorted(result, key=_sort_key)]}
        return Response(json.dumps(body), media_type="application/json")

    base = "/v3/clusters/{cluster_id}/acls"
    return [
        Route(base, search, methods=["GET"]),
        Route(base, create, methods=["POST"]),
        Route(base, delete, methods=["DELETE"]),
        Route(base + ":batch", create_batch, methods=["POST"]),
    ]
