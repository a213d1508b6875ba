"""A Kafka Connect REST peer for the console's tests, until Zurau runs Connect workers itself.

It serves the part of Kafka Connect's REST API the console uses, with Kafka's shapes (the
``/connectors?expand=status&expand=info`` map, ``/connectors/{c}/status``, ``/config``,
``POST /connectors/{c}/restart`` answering 202 with the status when ``includeTasks`` or
``onlyFailed`` is given and 204 otherwise, ``POST /connectors/{c}/tasks/{n}/restart`` 204, and
``{"error_code": 404, "message": ...}`` for an unknown connector). A restart moves the restarted
connector and tasks to RUNNING, as a worker does once they start again. Every request is kept in
``requests`` (method, path, query) so a test can check what the console asked for.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse


class ConnectRest:
    def __init__(self, connectors: dict[str, dict[str, Any]]) -> None:
        """``connectors``: name -> {"class", "type", "state", "tasks": [state, ...]}."""
        self.connectors = connectors
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="connect-rest", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ConnectRest:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def status(self, name: str) -> dict[str, Any]:
        c = self.connectors[name]
        return {
            "name": name,
            "connector": {"state": c["state"], "worker_id": "127.0.0.1:8083"},
            "tasks": [
                {"id": i, "state": s, "worker_id": "127.0.0.1:8083", **({"trace": "boom"} if s == "FAILED" else {})}
                for i, s in enumerate(c["tasks"])
            ],
            "type": c["type"],
        }

    def info(self, name: str) -> dict[str, Any]:
        c = self.connectors[name]
        return {
            "name": name,
            "config": {"connector.class": c["class"], "name": name, "tasks.max": str(len(c["tasks"]))},
            "tasks": [{"connector": name, "task": i} for i in range(len(c["tasks"]))],
            "type": c["type"],
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                peer.requests.append((method, url.path, query))
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                if parts[:1] != ["connectors"]:
                    return self._send(404, {"error_code": 404, "message": "HTTP 404 Not Found"})
                if len(parts) == 1 and method == "GET":
                    expand = query.get("expand", [])
                    if not expand:
                        return self._send(200, sorted(peer.connectors))
                    out = {}
                    for name in peer.connectors:
                        entry = {}
                        if "status" in expand:
                            entry["status"] = peer.status(name)
                        if "info" in expand:
                            entry["info"] = peer.info(name)
                        out[name] = entry
                    return self._send(200, out)
                name = parts[1]
                if name not in peer.connectors:
                    return self._send(404, {"error_code": 404, "message": f"Connector {name} not found"})
                c = peer.connectors[name]
                rest = parts[2:]
                if method == "GET" and rest == ["status"]:
                    return self._send(200, peer.status(name))
                if method == "GET" and rest == ["config"]:
                    return self._send(200, peer.info(name)["config"])
                if method == "POST" and rest == ["restart"]:
                    include_tasks = query.get("includeTasks", ["false"])[0] == "true"
                    only_failed = query.get("onlyFailed", ["false"])[0] == "true"
                    if not only_failed or c["state"] == "FAILED":
                        c["state"] = "RUNNING"
                    if include_tasks:
                        c["tasks"] = ["RUNNING" if (not only_failed or s == "FAILED") else s for s in c["tasks"]]
                    if "includeTasks" in query or "onlyFailed" in query:
                        return self._send(202, peer.status(name))
                    return self._send(204)
                if method == "POST" and len(rest) == 3 and rest[0] == "tasks" and rest[2] == "restart":
                    task = int(rest[1])
                    if not 0 <= task < len(c["tasks"]):
                        return self._send(404, {"error_code": 404, "message": f"Task {name}-{task} not found"})
                    c["tasks"][task] = "RUNNING"
                    return self._send(204)
                return self._send(405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"})

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

        return Handler
