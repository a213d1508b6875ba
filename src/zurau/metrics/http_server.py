"""The ``/metrics`` endpoint: Prometheus text format over HTTP, served off the event loop.

:class:`MetricsHttpServer` runs the standard library's WSGI server on its own thread (a thread
per request, as ``prometheus_client.start_http_server`` does) around ``prometheus_client``'s
WSGI app, so a slow or stuck scraper never blocks the broker's event loop. Only ``GET /metrics``
(and ``HEAD``, its headers without the body) serves metrics (``?name[]=`` filters by family, ``Accept-Encoding: gzip`` compresses); any other
path answers 404, another method 405, and a scrape whose collection fails (the broker is
stopping, its loop does not answer within ``COLLECT_TIMEOUT_S``) answers 503; the server keeps
serving either way.

:func:`on_loop` is how a collector reads broker state consistently: it runs a function on the
broker's event loop and waits for the result on the HTTP thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

T = TypeVar("T")

COLLECT_TIMEOUT_S = 10.0
METRICS_PATHS = ("/metrics", "/metrics/")


class MetricsUnavailable(Exception):
    """The broker cannot be read now (stopped, or its loop did not answer in time)."""


def on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], T], timeout: float = COLLECT_TIMEOUT_S) -> T:
    """Run ``fn()`` on ``loop`` (from another thread) and return its result; MetricsUnavailable
    if the loop is closed or does not run it within ``timeout`` seconds (it is then skipped)."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def call() -> None:
        if not done.set_running_or_notify_cancel():
            return
        try:
            done.set_result(fn())
        except BaseException as e:
            done.set_exception(e)

    try:
        loop.call_soon_threadsafe(call)
    except RuntimeError as e:  # the loop is closed
        raise MetricsUnavailable("the broker is not running") from e
    try:
        return done.result(timeout)
    except concurrent.futures.TimeoutError as e:
        done.cancel()
        raise MetricsUnavailable(f"the broker did not answer within {timeout} s") from e


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in progress never holds up the process's exit


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged."""


def metrics_app(registry: CollectorRegistry) -> Callable[..., Iterable[bytes]]:
    """A WSGI app serving ``registry`` at /metrics only (see the module docstring)."""
    inner = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") not in METRICS_PATHS:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"Not found: metrics are served at /metrics\n"]
        try:
            if environ.get("REQUEST_METHOD") == "HEAD":  # a GET without the body (RFC 9110 9.3.2)
                body = inner({**environ, "REQUEST_METHOD": "GET"}, start_response)
                close = getattr(body, "close", None)
                if close is not None:
                    close()
                return []
            return inner(environ, start_response)
        except MetricsUnavailable as e:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")])
            return [f"{e}\n".encode()]

    return app


class MetricsHttpServer:
    """An HTTP server for ``registry`` on ``(host, port)`` (port 0: an ephemeral one)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> MetricsHttpServer:
        """Bind (OSError if the address is taken) and serve on a daemon thread."""
        server_class = _Server6 if ":" in self.host else _Server
        httpd = make_server(self.host, self.port, metrics_app(self.registry), server_class, handler_class=_QuietHandler)
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="zurau-metrics-http", daemon=True
        )
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and close the socket (blocks up to the poll interval). Idempotent."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join()
