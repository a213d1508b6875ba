"""Kafka Connect's REST API over a :class:`~zurau.connect.worker.Worker`.

Status codes follow Kafka Connect's ``ConnectorsResource``: create 201 (409 when the connector
exists), ``PUT /config`` 201 on create and 200 on update, ``DELETE`` 204, ``/pause`` ``/resume``
202, ``/stop`` 204, a plain ``/restart`` 204 (no body) and one with ``includeTasks``/``onlyFailed``
202 with the planned statuses, a task restart 204, offsets changes 200 with a message (400 unless
the connector is STOPPED). Errors are ``{"error_code": <HTTP status>, "message": "..."}``;
unknown connectors are 404, malformed bodies 400 (not UTF-8, not JSON, nested deeper than
:data:`zurau.edge_requests.MAX_JSON_DEPTH`), bodies over :data:`MAX_BODY` 413 (checked while
streaming), bad configs 400 with the validation errors listed, a method a path does not serve
405 with an ``Allow`` header.

Config values bind as Kafka binds them to ``Map<String, String>`` (:func:`config_strings`):
strings as given, numbers and booleans as their JSON text, objects and arrays refused (400);
``null`` is a validation error ("Null value can not be supplied as the configuration value.")
except in ``PATCH /config``, where it removes the key (KIP-477). Sink offsets are checked against
Kafka's types (``kafka_partition`` int32, ``kafka_offset`` int64, both non-negative) before they
reach the group coordinator. Boolean query parameters are true only for ``true`` in any case
(``connectorsOnly`` defaults to true). ``GET /metrics`` (not in Kafka's REST API, which has JMX
instead) gives the tasks' error metrics in Prometheus form (:mod:`zurau.connect.connect_metrics`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zurau.config import ConfigKey, ConfigType, ConfigValue
from zurau.connect import connect_metrics
from zurau.connect.config_infos import config_key_info, config_value_info
from zurau.connect.plugins import (
    KIND_CONNECTOR,
    KIND_CONVERTER,
    KIND_PREDICATE,
    KIND_TRANSFORM,
    PluginNotFound,
    zurau_version,
)
from zurau.connect.stores import PAUSED, STARTED, STOPPED
from zurau.connect.worker import ConnectError, Worker
from zurau.edge_requests import BadInput, allowed_methods, kafka_int, parse_json, query_flag, read_body

log = logging.getLogger("zurau.connect.rest")

MAX_BODY = 16 * 1024 * 1024


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status_code=status, media_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json({"error_code": status, "message": message}, status)


NULL_VALUE = "Null value can not be supplied as the configuration value."


def _flag(request: Request, name: str, default: bool = False) -> bool:
    return query_flag(request.query_params, name, default)


async def _body(request: Request) -> Any:
    try:
        raw = await read_body(request, MAX_BODY)
        if not raw.strip():
            raise ConnectError(400, "Request body is empty")
        return parse_json(raw)
    except BadInput as e:
        raise ConnectError(e.status, e.message if e.status == 413 else f"Cannot deserialize the request body: {e.message}") from None


def _json_text(value: Any) -> str:
    """A JSON scalar as Jackson binds it to a ``String``: strings as given, others as JSON text."""
    return value if isinstance(value, str) else json.dumps(value)


def config_strings(config: dict[str, Any], nulls: str) -> tuple[dict[str, str | None], list[str]]:
    """``config`` bound to a string map as Kafka binds it; returns the map and the keys whose
    value is ``null``. ``nulls`` says what a null is: ``"keep"`` (the map holds None: PATCH
    removes the key), ``"drop"`` (left out of the map). Objects and arrays are a 400."""
    out: dict[str, str | None] = {}
    null_keys: list[str] = []
    for k, v in config.items():
        if isinstance(v, dict | list):
            kind = "Object" if isinstance(v, dict) else "Array"
            raise ConnectError(400, f"Cannot deserialize value of type `java.lang.String` from {kind} value "
                                    f"(config {k!r}: connector config values are strings)")
        if v is None:
            null_keys.append(k)
            if nulls == "keep":
                out[k] = None
            continue
        out[k] = _json_text(v)
    return out, null_keys


def _null_values_invalid(null_keys: list[str]) -> ConnectError:
    lines = [f"Invalid value null for configuration {k}: {NULL_VALUE}" for k in null_keys]
    return ConnectError(400, f"Connector configuration is invalid and contains the following {len(lines)} error(s):\n"
                             + "\n".join(lines) + "\nYou can also find the above list of errors at the endpoint "
                             "`/connector-plugins/{connectorType}/config/validate`")


def _check_sink_offsets(body: dict[str, Any]) -> None:
    """Sink partitions and offsets within Kafka's types (400 before any client call)."""
    entries = body.get("offsets")
    for e in entries if isinstance(entries, list) else ():
        p = e.get("partition") if isinstance(e, dict) else None
        o = e.get("offset") if isinstance(e, dict) else None
        try:
            if isinstance(p, dict) and isinstance(p.get("kafka_partition"), int):
                kafka_int(p["kafka_partition"], "int32", "kafka_partition", minimum=0)
            if isinstance(o, dict) and isinstance(o.get("kafka_offset"), int):
                kafka_int(o["kafka_offset"], "int64", "kafka_offset", minimum=0)
        except BadInput as err:
            raise ConnectError(400, err.message) from None


async def _object(request: Request) -> dict[str, Any]:
    body = await _body(request)
    if not isinstance(body, dict):
        raise ConnectError(400, "The request body must be a JSON object")
    return body


def _task(request: Request) -> int:
    raw = request.path_params["task"]
    try:
        return int(raw)
    except ValueError:
        raise ConnectError(404, f"Task {request.path_params['connector']}-{raw} not found") from None


class RestApi:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._routes: list[Route] = []

    def app(self) -> Starlette:
        routes = [
            Route("/", self.root, methods=["GET"]),
            Route("/connectors", self.list_connectors, methods=["GET"]),
            Route("/connectors", self.create_connector, methods=["POST"]),
            Route("/connectors/{connector}", self.get_connector, methods=["GET"]),
            Route("/connectors/{connector}", self.delete_connector, methods=["DELETE"]),
            Route("/connectors/{connector}/config", self.get_config, methods=["GET"]),
            Route("/connectors/{connector}/config", self.put_config, methods=["PUT"]),
            Route("/connectors/{connector}/config", self.patch_config, methods=["PATCH"]),
            Route("/connectors/{connector}/status", self.status, methods=["GET"]),
            Route("/connectors/{connector}/tasks", self.tasks, methods=["GET"]),
            Route("/connectors/{connector}/tasks/{task}/status", self.task_status, methods=["GET"]),
            Route("/connectors/{connector}/tasks/{task}/restart", self.restart_task, methods=["POST"]),
            Route("/connectors/{connector}/restart", self.restart, methods=["POST"]),
            Route("/connectors/{connector}/pause", self.pause, methods=["PUT"]),
            Route("/connectors/{connector}/resume", self.resume, methods=["PUT"]),
            Route("/connectors/{connector}/stop", self.stop, methods=["PUT"]),
            Route("/connectors/{connector}/topics", self.topics, methods=["GET"]),
            Route("/connectors/{connector}/topics/reset", self.reset_topics, methods=["PUT"]),
            Route("/connectors/{connector}/offsets", self.get_offsets, methods=["GET"]),
            Route("/connectors/{connector}/offsets", self.alter_offsets, methods=["PATCH"]),
            Route("/connectors/{connector}/offsets", self.reset_offsets, methods=["DELETE"]),
            Route("/connector-plugins", self.plugins, methods=["GET"]),
            Route("/connector-plugins/{plugin}/config", self.plugin_config, methods=["GET"]),
            Route("/connector-plugins/{plugin}/config/validate", self.validate, methods=["PUT"]),
            Route("/metrics", self.metrics, methods=["GET"]),
        ]
        self._routes = routes
        app = Starlette(routes=routes)
        app.add_exception_handler(ConnectError, self._connect_error)  # type: ignore[arg-type]
        app.add_exception_handler(404, self._not_found)
        app.add_exception_handler(405, self._not_allowed)
        app.add_exception_handler(Exception, self._internal)
        return app

    async def _connect_error(self, request: Request, exc: ConnectError) -> Response:
        return _error(exc.status, exc.message)

    async def _not_found(self, request: Request, exc: Exception) -> Response:
        return _error(404, "HTTP 404 Not Found")

    async def _not_allowed(self, request: Request, exc: Exception) -> Response:
        resp = _error(405, "HTTP 405 Method Not Allowed")
        resp.headers["Allow"] = ", ".join(allowed_methods(self._routes, request.scope))
        return resp

    async def _internal(self, request: Request, exc: Exception) -> Response:
        log.exception("request %s %s failed", request.method, request.url.path)
        return _error(500, f"{type(exc).__name__}: {exc}")

    async def metrics(self, request: Request) -> Response:
        """Prometheus text: Kafka's task-error-metrics of the tasks this worker runs."""
        return Response(connect_metrics.render(self.worker.task_error_metrics),
                        media_type=connect_metrics.CONTENT_TYPE)

    # ------------------------------------------------------------------ root and connectors
    async def root(self, request: Request) -> Response:
        return _json({"version": zurau_version(), "commit": "zurau", "kafka_cluster_id": self.worker.cluster_id})

    async def list_connectors(self, request: Request) -> Response:
        if "expand" not in request.query_params:
            return _json(self.worker.connector_names())
        expand = request.query_params.getlist("expand")  # unknown expansions are ignored, as Kafka does
        names = self.worker.connector_names()
        out: dict[str, Any] = {}
        for name in names:
            entry: dict[str, Any] = {}
            try:
                if "status" in expand:
                    entry["status"] = self.worker.connector_status(name)
                if "info" in expand:
                    entry["info"] = self.worker.connector_info(name)
            except ConnectError:  # deleted meanwhile
                continue
            out[name] = entry
        return _json(out)

    async def create_connector(self, request: Request) -> Response:
        body = await _object(request)
        name = body.get("name")
        raw_config = body.get("config")
        if not isinstance(raw_config, dict):
            raise ConnectError(400, "Connector config must be a JSON object under \"config\"")
        config, null_keys = config_strings(raw_config, "drop")
        if null_keys:
            raise _null_values_invalid(null_keys)
        if name is None:
            name = config.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConnectError(400, "Connector name must not be empty")
        initial = body.get("initial_state")
        if initial is not None and initial not in ("RUNNING", "PAUSED", "STOPPED"):
            raise ConnectError(400, f"Invalid initial state {initial}: must be RUNNING, PAUSED or STOPPED")
        state = {"RUNNING": STARTED, "PAUSED": PAUSED, "STOPPED": STOPPED}.get(initial) if initial else None
        _, info = await self.worker.put_connector_config(name.strip(), config, create_only=True, initial_state=state)
        return _json(info, 201)

    async def get_connector(self, request: Request) -> Response:
        return _json(self.worker.connector_info(request.path_params["connector"]))

    async def delete_connector(self, request: Request) -> Response:
        await self.worker.delete_connector(request.path_params["connector"])
        return Response(status_code=204)

    async def get_config(self, request: Request) -> Response:
        return _json(self.worker.connector_info(request.path_params["connector"])["config"])

    async def put_config(self, request: Request) -> Response:
        config, null_keys = config_strings(await _object(request), "drop")
        if null_keys:
            raise _null_values_invalid(null_keys)
        created, info = await self.worker.put_connector_config(request.path_params["connector"], config)
        return _json(info, 201 if created else 200)

    async def patch_config(self, request: Request) -> Response:
        patch, _ = config_strings(await _object(request), "keep")
        return _json(await self.worker.patch_connector_config(request.path_params["connector"], patch))

    async def status(self, request: Request) -> Response:
        return _json(self.worker.connector_status(request.path_params["connector"]))

    async def tasks(self, request: Request) -> Response:
        return _json(self.worker.tasks_info(request.path_params["connector"]))

    async def task_status(self, request: Request) -> Response:
        return _json(self.worker.task_status(request.path_params["connector"], _task(request)))

    async def restart_task(self, request: Request) -> Response:
        await self.worker.restart_task(request.path_params["connector"], _task(request))
        return Response(status_code=204)

    async def restart(self, request: Request) -> Response:
        planned = await self.worker.restart_connector(request.path_params["connector"],
                                                      _flag(request, "includeTasks"), _flag(request, "onlyFailed"))
        if planned is None:  # the connector instance only: 204, as Kafka's ConnectorsResource
            return Response(status_code=204)
        return _json(planned, 202)

    async def pause(self, request: Request) -> Response:
        await self.worker.set_target_state(request.path_params["connector"], PAUSED)
        return Response(status_code=202)

    async def resume(self, request: Request) -> Response:
        await self.worker.set_target_state(request.path_params["connector"], STARTED)
        return Response(status_code=202)

    async def stop(self, request: Request) -> Response:
        await self.worker.set_target_state(request.path_params["connector"], STOPPED)
        return Response(status_code=204)

    async def topics(self, request: Request) -> Response:
        name = request.path_params["connector"]
        return _json({name: {"topics": self.worker.active_topics(name)}})

    async def reset_topics(self, request: Request) -> Response:
        await self.worker.reset_topics(request.path_params["connector"])
        return Response(status_code=202)

    async def get_offsets(self, request: Request) -> Response:
        return _json(await self.worker.get_offsets(request.path_params["connector"]))

    async def alter_offsets(self, request: Request) -> Response:
        body = await _object(request)
        name = request.path_params["connector"]
        if self.worker.connector_info(name).get("type") == "sink":
            _check_sink_offsets(body)
        return _json({"message": await self.worker.alter_offsets(name, body)})

    async def reset_offsets(self, request: Request) -> Response:
        return _json({"message": await self.worker.alter_offsets(request.path_params["connector"], None, reset=True)})

    # ------------------------------------------------------------------ plugins
    async def plugins(self, request: Request) -> Response:
        connectors_only = _flag(request, "connectorsOnly", default=True)
        kinds = (KIND_CONNECTOR,) if connectors_only else (KIND_CONNECTOR, KIND_CONVERTER, KIND_TRANSFORM, KIND_PREDICATE)
        return _json([{"class": p.name, "type": p.plugin_type, "version": p.version}
                      for p in self.worker.plugins.plugins(kinds)])

    def _plugin(self, name: str) -> Any:
        for kind in (KIND_CONNECTOR, KIND_CONVERTER, KIND_TRANSFORM, KIND_PREDICATE):
            try:
                return self.worker.plugins.resolve(name, kind)
            except PluginNotFound:
                continue
        raise ConnectError(404, f"Unknown plugin {name}.")

    async def plugin_config(self, request: Request) -> Response:
        cls = self._plugin(request.path_params["plugin"])
        try:
            definition = cls().config_def()
        except Exception as e:
            raise ConnectError(500, f"Cannot read the configuration of {request.path_params['plugin']}: {e}") from e
        return _json([config_key_info(k) for k in definition.keys()])

    async def validate(self, request: Request) -> Response:
        plugin = request.path_params["plugin"]
        config, null_keys = config_strings(await _object(request), "drop")
        try:
            wanted = self.worker.plugins.resolve(plugin, KIND_CONNECTOR)
        except PluginNotFound:
            raise ConnectError(404, f"Unknown plugin {plugin}.") from None
        given = config.get("connector.class")
        if given is not None:
            try:
                same = self.worker.plugins.resolve(str(given), KIND_CONNECTOR) is wanted
            except PluginNotFound:
                same = False
            if not same:
                raise ConnectError(400, f"Included connector type {given} does not match request type {plugin}")
        else:
            config = {**config, "connector.class": plugin}
        infos = self.worker.validate({str(k): v for k, v in config.items()})
        for key in null_keys:  # as Kafka: each null is an error of its key
            entry = next((c for c in infos["configs"] if c["value"]["name"] == key), None)
            if entry is None:
                entry = {"definition": config_key_info(ConfigKey(key, ConfigType.STRING, None, doc="")),
                         "value": config_value_info(ConfigValue(key, None))}
                infos["configs"].append(entry)
            entry["value"]["value"] = None
            entry["value"]["errors"].append(NULL_VALUE)
            infos["error_count"] += 1
        return _json(infos)
