"""Confluent Schema Registry's REST API over :class:`~zurau.schema_registry.registry.SchemaRegistry`.

Requests may be ``application/vnd.schemaregistry.v1+json``, ``application/vnd.schemaregistry+json``,
``application/json`` or ``application/octet-stream`` (or carry no content type); anything else
gets HTTP 415. Bodies larger than ``max.request.bytes`` get HTTP 413 before they are read in
full. Responses are ``application/vnd.schemaregistry.v1+json``; errors are Confluent's
``{"error_code": N, "message": "..."}`` (see :mod:`~zurau.schema_registry.errors`).
Boolean query parameters are parsed as Jersey does: only ``true``, in any case, is true.
The body reader, the JSON nesting limit (400) and the ``Allow`` header of a 405 are the edge
services' shared ones (:mod:`zurau.edge_requests`).

With several instances, every write handler first asks the
:class:`~zurau.schema_registry.forwarding.Forwarder` whether the primary must serve it (a register
of a schema already live in the subject is answered locally first, as Confluent does); reads are
always served from this instance's state.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zurau.edge_requests import BadInput, allowed_methods, kafka_int, parse_json, query_flag, read_body
from zurau.schema_formats.references import Reference
from zurau.schema_formats.schema_types import AVRO, SUPPORTED_TYPES
from zurau.schema_registry import errors
from zurau.schema_registry.errors import RegistryError
from zurau.schema_registry.forwarding import (
    DELETE_CONFIG,
    DELETE_MODE,
    DELETE_SUBJECT,
    DELETE_VERSION,
    REGISTER,
    UPDATE_CONFIG,
    UPDATE_MODE,
    Forwarder,
    WriteOp,
)
from zurau.schema_registry.metrics import RegistryMetrics, RequestMetricsMiddleware
from zurau.schema_registry.registry import NewSchema, SchemaRegistry

log = logging.getLogger("zurau.schema_registry.rest")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_TYPES = (
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
)


class SubjectConvertor(PathConvertor):
    """A subject in a path: any text, "/" and line breaks included (Starlette's ``path``
    convertor stops at a line break, which left such subjects unrouted: 404)."""

    regex = "[\\s\\S]*"


register_url_convertor("subject", SubjectConvertor())


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status_code=status, media_type=CONTENT_TYPE)


def _flag(request: Request, name: str) -> bool:
    return query_flag(request.query_params, name)


class RestApi:
    def __init__(
        self,
        registry: SchemaRegistry,
        max_request_bytes: int,
        cluster_id: str | None = None,
        forwarder: Forwarder | None = None,
        group_id: str = "schema-registry",
    ) -> None:
        self.registry = registry
        self.max_request_bytes = max_request_bytes
        self.cluster_id = cluster_id
        self.forwarder = forwarder
        self.group_id = group_id

    # ------------------------------------------------------------------ request plumbing
    async def _raw(self, request: Request) -> bytes:
        """The request body, checked (415, 413 while streaming) and read once (kept for forwarding)."""
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype and ctype not in ACCEPTED_TYPES:
            raise RegistryError(415, 415, f"HTTP 415 Unsupported Media Type: {ctype}")
        try:
            return await read_body(request, self.max_request_bytes)
        except BadInput as e:
            raise RegistryError(e.status, e.status, e.message) from None

    async def _body(self, request: Request) -> Any:
        try:
            return parse_json(await self._raw(request))
        except BadInput as e:
            raise errors.malformed_body(e.message) from None

    async def _object(self, request: Request) -> dict[str, Any]:
        body = await self._body(request)
        if not isinstance(body, dict):
            raise errors.unprocessable("The request body must be a JSON object")
        return body

    async def _new_schema(self, request: Request) -> tuple[NewSchema, dict[str, Any]]:
        body = await self._object(request)
        schema = body.get("schema")
        if not isinstance(schema, str):
            raise errors.invalid_schema("Empty schema" if schema is None else "schema must be a string")
        schema_type = body.get("schemaType") or AVRO
        if not isinstance(schema_type, str):
            raise errors.unprocessable("schemaType must be a string")
        schema_type = schema_type.upper()
        refs_raw = body.get("references") or []
        if not isinstance(refs_raw, list):
            raise errors.unprocessable("references must be a list")
        refs = []
        for r in refs_raw:
            if not (
                isinstance(r, dict)
                and isinstance(r.get("name"), str)
                and isinstance(r.get("subject"), str)
                and isinstance(r.get("version"), int)
                and not isinstance(r.get("version"), bool)
            ):
                raise errors.unprocessable(f"Invalid reference {r!r}: needs name, subject and an integer version")
            refs.append(Reference(r["name"], r["subject"], r["version"]))
        return NewSchema(schema, schema_type, tuple(refs)), body

    async def _primary_answer(self, request: Request, op: WriteOp, subject: str | None = None) -> Response | None:
        """The primary's answer when another instance is the primary; None to serve it here."""
        if self.forwarder is None:
            return None
        body = await self._raw(request) if request.method in ("POST", "PUT") else b""
        return await self.forwarder.forward(request, body, op, subject)

    def _secondary(self) -> bool:
        elector = self.forwarder.elector if self.forwarder is not None else None
        return elector is not None and not elector.is_primary

    # ------------------------------------------------------------------ app
    def app(self) -> Starlette:
        r = self
        routes = [
            Route("/", r.root, methods=["GET"]),
            Route("/v1/metadata/id", r.metadata_id, methods=["GET"]),
            Route("/master_available", r.master_available, methods=["GET"]),
            Route("/schemas/types", r.schema_types, methods=["GET"]),
            Route("/schemas/ids/{id}", r.schema_by_id, methods=["GET"]),
            Route("/schemas/ids/{id}/schema", r.raw_schema_by_id, methods=["GET"]),
            Route("/schemas/ids/{id}/subjects", r.subjects_by_id, methods=["GET"]),
            Route("/schemas/ids/{id}/versions", r.versions_by_id, methods=["GET"]),
            Route("/subjects", r.list_subjects, methods=["GET"]),
            # Subjects may contain "/" (sent as %2F; protobuf references are named after files):
            # {subject:subject} matches it, and the longer forms come first so they win.
            Route("/subjects/{subject:subject}/versions/{version}/schema", r.raw_version, methods=["GET"]),
            Route("/subjects/{subject:subject}/versions/{version}/referencedby", r.referenced_by, methods=["GET"]),
            Route("/subjects/{subject:subject}/versions/{version}", r.get_version, methods=["GET"]),
            Route("/subjects/{subject:subject}/versions/{version}", r.delete_version, methods=["DELETE"]),
            Route("/subjects/{subject:subject}/versions", r.list_versions, methods=["GET"]),
            Route("/subjects/{subject:subject}/versions", r.register, methods=["POST"]),
            Route("/subjects/{subject:subject}", r.lookup, methods=["POST"]),
            Route("/subjects/{subject:subject}", r.delete_subject, methods=["DELETE"]),
            Route("/compatibility/subjects/{subject:subject}/versions/{version}", r.compatibility, methods=["POST"]),
            Route("/compatibility/subjects/{subject:subject}/versions", r.compatibility, methods=["POST"]),
            Route("/config", r.get_config, methods=["GET"]),
            Route("/config", r.put_config, methods=["PUT"]),
            Route("/config", r.delete_config, methods=["DELETE"]),
            Route("/config/{subject:subject}", r.get_config, methods=["GET"]),
            Route("/config/{subject:subject}", r.put_config, methods=["PUT"]),
            Route("/config/{subject:subject}", r.delete_config, methods=["DELETE"]),
            Route("/mode", r.get_mode, methods=["GET"]),
            Route("/mode", r.put_mode, methods=["PUT"]),
            Route("/mode/{subject:subject}", r.get_mode, methods=["GET"]),
            Route("/mode/{subject:subject}", r.put_mode, methods=["PUT"]),
            Route("/mode/{subject:subject}", r.delete_mode, methods=["DELETE"]),
        ]
        metrics = RegistryMetrics(self.registry.state)
        routes.append(Route("/metrics", metrics.endpoint, methods=["GET"]))

        async def registry_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, RegistryError)
            return _json(exc.body(), exc.http_status)

        async def unexpected(request: Request, exc: Exception) -> Response:
            log.exception("unexpected error serving %s %s", request.method, request.url.path)
            return _json({"error_code": 500, "message": f"Internal Server Error: {type(exc).__name__}"}, 500)

        async def http_error(request: Request, exc: Exception) -> Response:
            status = getattr(exc, "status_code", 500)
            resp = _json({"error_code": status, "message": f"HTTP {status} {getattr(exc, 'detail', '')}".strip()}, status)
            if status == 405:
                resp.headers["Allow"] = ", ".join(allowed_methods(routes, request.scope))
            return resp

        from starlette.exceptions import HTTPException

        return Starlette(
            routes=routes,
            exception_handlers={RegistryError: registry_error, HTTPException: http_error, Exception: unexpected},
            middleware=[Middleware(RequestMetricsMiddleware, routes=routes, metrics=metrics)],
        )

    # ------------------------------------------------------------------ handlers
    async def root(self, request: Request) -> Response:
        return _json({})

    async def metadata_id(self, request: Request) -> Response:
        return _json(
            {
                "scope": {
                    "path": [],
                    "clusters": {"kafka-cluster": self.cluster_id, "schema-registry-cluster": self.group_id},
                }
            }
        )

    async def master_available(self, request: Request) -> Response:
        """Karapace's endpoint: whether a write would find a primary (an election under way is
        waited for, as writes wait for it)."""
        forwarder = self.forwarder
        if forwarder is None or forwarder.elector is None:
            return _json({"master_available": True})
        try:
            await forwarder.primary_url(UPDATE_CONFIG, None)
        except RegistryError:
            return _json({"master_available": False})
        return _json({"master_available": True})

    async def schema_types(self, request: Request) -> Response:
        return _json(list(SUPPORTED_TYPES))

    @staticmethod
    def _schema_id(request: Request) -> int:
        raw = request.path_params["id"]
        try:
            return int(raw)
        except ValueError:
            raise errors.schema_not_found(f"Schema {raw} not found") from None

    async def schema_by_id(self, request: Request) -> Response:
        stored = self.registry.get_schema(self._schema_id(request))
        body: dict[str, Any] = {}
        if stored.schema_type != AVRO:
            body["schemaType"] = stored.schema_type
        if stored.references:
            body["references"] = [ref.to_json() for ref in stored.references]
        body["schema"] = self.registry.formatted(stored, request.query_params.get("format"))
        return _json(body)

    async def raw_schema_by_id(self, request: Request) -> Response:
        stored = self.registry.get_schema(self._schema_id(request))
        return Response(stored.schema, media_type=CONTENT_TYPE)

    async def subjects_by_id(self, request: Request) -> Response:
        pairs = self.registry.subject_versions_for_id(self._schema_id(request), _flag(request, "deleted"))
        return _json(sorted({s for s, _ in pairs}))

    async def versions_by_id(self, request: Request) -> Response:
        pairs = self.registry.subject_versions_for_id(self._schema_id(request), _flag(request, "deleted"))
        return _json([{"subject": s, "version": v} for s, v in pairs])

    async def list_subjects(self, request: Request) -> Response:
        return _json(
            self.registry.subjects(
                deleted=_flag(request, "deleted"),
                prefix=request.query_params.get("subjectPrefix", ""),
                deleted_only=_flag(request, "deletedOnly"),
            )
        )

    async def list_versions(self, request: Request) -> Response:
        return _json(
            self.registry.versions(
                request.path_params["subject"], _flag(request, "deleted"), _flag(request, "deletedOnly")
            )
        )

    async def register(self, request: Request) -> Response:
        subject = request.path_params["subject"]
        new, body = await self._new_schema(request)
        schema_id = body.get("id")
        version = body.get("version")
        for name, value in (("id", schema_id), ("version", version)):
            if value is not None:
                try:
                    kafka_int(value, "int32", name, minimum=1)
                except BadInput:
                    raise errors.unprocessable(f"{name} must be a positive integer below 2^31") from None
        if self._secondary() and schema_id is None and version is None:
            try:  # already registered: answered here, as Confluent's registerOrForward does
                return _json({"id": self.registry.lookup(subject, new, normalize=_flag(request, "normalize")).id})
            except RegistryError:
                pass
        forwarded = await self._primary_answer(request, REGISTER, subject)
        if forwarded is not None:
            return forwarded
        new_id = await self.registry.register(
            subject, new, normalize=_flag(request, "normalize"), schema_id=schema_id, version=version
        )
        return _json({"id": new_id})

    def _version_body(self, sv: Any, request: Request | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"subject": sv.subject, "version": sv.version, "id": sv.id}
        if sv.schema_type != AVRO:
            body["schemaType"] = sv.schema_type
        if sv.references:
            body["references"] = [ref.to_json() for ref in sv.references]
        body["schema"] = self.registry.formatted(sv, request.query_params.get("format") if request else None)
        return body

    async def lookup(self, request: Request) -> Response:
        new, _ = await self._new_schema(request)
        sv = self.registry.lookup(
            request.path_params["subject"],
            new,
            normalize=_flag(request, "normalize"),
            deleted=_flag(request, "deleted"),
        )
        return _json(self._version_body(sv, request))

    async def get_version(self, request: Request) -> Response:
        sv = self.registry.get_version(
            request.path_params["subject"], request.path_params["version"], _flag(request, "deleted")
        )
        return _json(self._version_body(sv, request))

    async def raw_version(self, request: Request) -> Response:
        sv = self.registry.get_version(
            request.path_params["subject"], request.path_params["version"], _flag(request, "deleted")
        )
        return Response(sv.schema, media_type=CONTENT_TYPE)

    async def referenced_by(self, request: Request) -> Response:
        return _json(self.registry.referenced_by(request.path_params["subject"], request.path_params["version"]))

    async def delete_version(self, request: Request) -> Response:
        forwarded = await self._primary_answer(request, DELETE_VERSION, request.path_params["subject"])
        if forwarded is not None:
            return forwarded
        version = await self.registry.delete_version(
            request.path_params["subject"], request.path_params["version"], _flag(request, "permanent")
        )
        return _json(version)

    async def delete_subject(self, request: Request) -> Response:
        forwarded = await self._primary_answer(request, DELETE_SUBJECT, request.path_params["subject"])
        if forwarded is not None:
            return forwarded
        return _json(await self.registry.delete_subject(request.path_params["subject"], _flag(request, "permanent")))

    async def compatibility(self, request: Request) -> Response:
        new, _ = await self._new_schema(request)
        messages = self.registry.test_compatibility(
            request.path_params["subject"],
            request.path_params.get("version"),
            new,
            _flag(request, "normalize"),
        )
        body: dict[str, Any] = {"is_compatible": not messages}
        if _flag(request, "verbose"):
            body["messages"] = messages
        return _json(body)

    async def get_config(self, request: Request) -> Response:
        subject = request.path_params.get("subject")
        level = self.registry.get_config(subject, _flag(request, "defaultToGlobal"))
        return _json({"compatibilityLevel": level})

    async def put_config(self, request: Request) -> Response:
        body = await self._object(request)
        forwarded = await self._primary_answer(request, UPDATE_CONFIG, request.path_params.get("subject"))
        if forwarded is not None:
            return forwarded
        level = await self.registry.set_config(request.path_params.get("subject"), body.get("compatibility"))
        return _json({"compatibility": level})

    async def delete_config(self, request: Request) -> Response:
        forwarded = await self._primary_answer(request, DELETE_CONFIG, request.path_params.get("subject"))
        if forwarded is not None:
            return forwarded
        previous = await self.registry.delete_config(request.path_params.get("subject"))
        return _json({"compatibilityLevel": previous})

    async def get_mode(self, request: Request) -> Response:
        subject = request.path_params.get("subject")
        return _json({"mode": self.registry.get_mode(subject, _flag(request, "defaultToGlobal"))})

    async def put_mode(self, request: Request) -> Response:
        body = await self._object(request)
        forwarded = await self._primary_answer(request, UPDATE_MODE, request.path_params.get("subject"))
        if forwarded is not None:
            return forwarded
        mode = await self.registry.set_mode(
            request.path_params.get("subject"), body.get("mode"), force=_flag(request, "force")
        )
        return _json({"mode": mode})

    async def delete_mode(self, request: Request) -> Response:
        forwarded = await self._primary_answer(request, DELETE_MODE, request.path_params["subject"])
        if forwarded is not None:
            return forwarded
        return _json({"mode": await self.registry.delete_mode(request.path_params["subject"])})
