"""Kafka Connect's REST API over a :class:`~zurau.connect.worker.Worker`.

Status codes follow Kafka Connect: create 201 (409 when the connector exists), ``PUT /config``
201 on create and 200 on update, ``DELETE`` 204, ``/pause`` ``/resume`` ``/stop`` 202, a plain
``/restart`` 200 (no body) and one with ``includeTasks``/``onlyFailed`` 202 with the planned statuses, a task
restart 204, offsets changes 200 with a message (400 unless the connector is STOPPED). Errors are
``{"error_code": <HTTP status>, "message": "..."}``; unknown connectors are 404, malformed bodies
400, bad configs 400 with the validation errors listed.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zurau.connect.config_infos import config_key_info
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

log = logging.getLogger("zurau.connect.rest")

MAX_BODY = 16 * 1024 * 1024


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status_code=status, media_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json({"error_code": status, "message": message}, status)


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").strip().lower() == "true"


async def _body(request: Request) -> Any:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise ConnectError(413, f"Request body larger than {MAX_BODY} bytes")
    if not raw.strip():
        raise ConnectError(400, "Request body is empty")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConnectError(400, f"Cannot deserialize the request body: {e}") from None


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
        ]
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
        return _error(405, "HTTP 405 Method Not Allowed")

    async def _internal(self, request: Request, exc: Exception) -> Response:
        log.exception("request %s %s failed", request.method, request.url.path)
        return _error(500, f"{type(exc).__name__}: {exc}")

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
        config = body.get("config")
        if not isinstance(config, dict):
            raise ConnectError(400, "Connector config must be a JSON object under \"config\"")
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
        config = await _object(request)
        created, info = await self.worker.put_connector_config(request.path_params["connector"], config)
        return _json(info, 201 if created else 200)

    async def patch_config(self, request: Request) -> Response:
        patch = await _object(request)
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
        if planned is None:  # the connector instance only: 200 without a body, as Kafka since 3.0
            return Response(status_code=200)
        return _json(planned, 202)

    async def pause(self, request: Request) -> Response:
        await self.worker.set_target_state(request.path_params["connector"], PAUSED)
        return Response(status_code=202)

    async def resume(self, request: Request) -> Response:
        await self.worker.set_target_state(request.path_params["connector"], STARTED)
        return Response(status_code=202)

    async def stop(self, request: Request) -> Response:
        await self.worker.set_target_state(request.path_params["connector"], STOPPED)
        return Response(status_code=202)

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
        return _json({"message": await self.worker.alter_offsets(request.path_params["connector"], body)})

    async def reset_offsets(self, request: Request) -> Response:
        return _json({"message": await self.worker.alter_offsets(request.path_params["connector"], None, reset=True)})

    # ------------------------------------------------------------------ plugins
    async def plugins(self, request: Request) -> Response:
        connectors_only = request.query_params.get("connectorsOnly", "true").strip().lower() != "false"
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
        config = await _object(request)
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
        return _json(self.worker.validate({str(k): v for k, v in config.items()}))
