"""What every HTTP edge service (schema registry, Connect worker, console) shares: its listener and
its embedded form.

* :class:`HttpListener` binds a TCP socket first (port 0 picks a free one, so the URL is known
  before anything else starts) and later serves an ASGI app on it with uvicorn, on the running
  event loop. ``close()`` stops serving (uvicorn finishes in-flight requests for up to 5 s) and
  closes the socket; it is safe to call at any point, also when serving never started. Given
  :class:`TlsFiles` it serves https (the certificate and key are loaded when the listener is
  made, so a bad file fails start-up with a message naming it) and its ``url`` says https.
* :func:`run_in_thread` runs a service's ``start()`` coroutine on a new event loop (uvloop where
  installed) in a daemon thread and returns once it finished, re-raising its error after
  ``stop()`` ran; setting the returned event runs ``stop()`` and ends the loop (leftover tasks
  cancelled, async generators and the default executor shut down, the loop closed).
  :class:`zurau.embedded.EmbeddedBroker` runs the broker the same way.
* :class:`HttpService` is the lifecycle every such service shares: bind the listener first (port 0
  picks a free port, known before the service's own state starts), open the service (which
  returns its ASGI app), serve; on any failure while starting, stop what started. ``stop()``
  stops serving, then closes the service.
* :class:`EmbeddedService` is the synchronous, in-process form of a service for test suites
  (``EmbeddedRegistry``, ``EmbeddedConnect``, ``EmbeddedConsole``): ``with`` starts it, ``url``
  addresses it, leaving the block stops it and joins its thread.

This module imports only the standard library (uvicorn and uvloop lazily): the broker and every
edge app may use it. What a service accepts from a client (one body reader with a streaming size
limit, JSON with a nesting limit, Kafka integer ranges, boolean query parameters, the ``Allow``
header of a 405) is checked once, in :mod:`zurau.edge_requests`. The rest of the edge-service kit is in :mod:`zurau.client`: a service's state
in a compacted topic (:mod:`zurau.client.kafka_based_log`), the topics it needs
(:func:`zurau.client.topic_admin.ensure_topic`) and Kafka's error names for its API
(:func:`zurau.client.errors.describe_error`); its command wraps itself in
:func:`zurau.cli.extras.needs_extra` so that a missing optional dependency names the extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop where available, else asyncio's."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency on every supported platform
        return asyncio.new_event_loop()


def url_host(host: str) -> str:
    """The host to put in a URL for a listener bound to ``host`` (wildcards -> 127.0.0.1)."""
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of an https listener: ``certfile`` holds the certificate chain (and the private
    key when ``keyfile`` is None); ``password`` decrypts an encrypted key."""

    certfile: str
    keyfile: str | None = None
    password: str | None = None

    def check(self) -> None:
        """Load the files once; OSError naming them when they are not a usable certificate and key."""
        files = self.certfile if self.keyfile is None else f"{self.certfile} and {self.keyfile}"
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            ctx.load_cert_chain(self.certfile, self.keyfile, self.password or None)
        except ssl.SSLError as e:
            raise OSError(f"the https certificate and key ({files}) cannot be loaded (PEM expected): {e}") from None
        except OSError as e:
            raise OSError(f"the https certificate and key ({files}) cannot be read: {e.strerror or e}") from None


class HttpListener:
    """One HTTP listener: bound at construction, serving an ASGI app after :meth:`serve`."""

    def __init__(self, host: str, port: int, name: str, tls: TlsFiles | None = None) -> None:
        if tls is not None:
            tls.check()
        self.host = host
        self.name = name
        self.tls = tls
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Accepted connections inherit TCP_NODELAY on Linux: without it a response written in
            # two pieces (head, then body) waits for the client's delayed ACK (40 ms) under Nagle.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((host, port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._sock: socket.socket | None = sock
        self.port: int = sock.getsockname()[1]
        self._server: Any = None
        self.task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://{url_host(self.host)}:{self.port}"

    async def serve(self, app: Any) -> None:
        """Start serving ``app``; returns once uvicorn accepts requests."""
        import uvicorn

        assert self._sock is not None, "the listener is closed"
        tls: dict[str, Any] = {}
        if self.tls is not None:
            tls = {"ssl_certfile": self.tls.certfile, "ssl_keyfile": self.tls.keyfile,
                   "ssl_keyfile_password": self.tls.password}
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, loop="none", **tls)
        )
        self._server = server
        self.task = asyncio.create_task(server.serve(sockets=[self._sock]), name=self.name)
        while not server.started:
            if self.task.done():
                await self.task
                raise RuntimeError(f"{self.name} stopped while starting")
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        server, task = self._server, self.task
        if server is not None and task is not None:
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)
        self._server = self.task = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class HttpService:
    """Base of the registry, Connect and console servers (see the module docstring)."""

    def __init__(self, host: str, port: int, name: str) -> None:
        self.host = host
        self.port = port
        self.name = name
        self.listener: HttpListener | None = None
        self.tls: TlsFiles | None = None
        """Set before :meth:`start` to serve https."""

    @property
    def url(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://{url_host(self.host)}:{self.port}"

    async def open(self) -> Any:
        """Start the service's own state once ``self.port`` is known; return its ASGI app."""
        raise TypeError(f"{type(self).__name__} must define open()")

    async def close(self) -> None:
        """Release what :meth:`open` started (also after a partial or failed open)."""

    async def start(self) -> None:
        self.listener = HttpListener(self.host, self.port, self.name, self.tls)
        self.port = self.listener.port
        try:
            await self.listener.serve(await self.open())
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.close()
        await self.close()

    async def serve_forever(self) -> None:
        """Run until cancelled (the CLIs cancel on SIGINT/SIGTERM)."""
        await self.start()
        try:
            assert self.listener is not None and self.listener.task is not None
            await self.listener.task
        finally:
            await self.stop()


def run_in_thread(
    name: str, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
) -> tuple[asyncio.AbstractEventLoop, threading.Thread, asyncio.Event]:
    """See the module docstring."""
    loop = new_event_loop()
    started = threading.Event()
    error: list[BaseException] = []
    stop_event = asyncio.Event()

    async def serve() -> None:
        try:
            await start()
        except BaseException as e:  # reported to the starting thread
            error.append(e)
            started.set()
            await stop()
            return
        started.set()
        try:
            await stop_event.wait()
        finally:
            await stop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve())
            cancel_remaining(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    started.wait()
    if error:
        thread.join()
        raise error[0]
    return loop, thread, stop_event


def cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does on exit: cancel leftover tasks and let them finish."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def set_threadsafe(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    """Set ``event`` of ``loop`` from another thread (nothing if the loop already closed)."""
    if not loop.is_closed():
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(event.set)


class Service(Protocol):
    @property
    def url(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=Service)


class EmbeddedService(Generic[S]):
    """A service on its own thread and event loop (see the module docstring). Subclasses say
    what to run in :meth:`new_server` and name their thread in ``thread_name``."""

    thread_name = "zurau-embedded-service"

    def __init__(self) -> None:
        self.server: S | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    def new_server(self) -> S:
        raise TypeError(f"{type(self).__name__} must define new_server()")

    async def stop_server(self, server: S) -> None:
        """How the thread stops the server (subclasses may stop it differently, e.g. abruptly)."""
        await server.stop()

    @property
    def url(self) -> str:
        if self.server is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return self.server.url

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> EmbeddedService[S]:
        if self._thread is not None:
            raise RuntimeError(f"this {type(self).__name__} is already running")
        server = self.new_server()

        async def stop_it() -> None:
            await self.stop_server(server)

        self._loop, self._thread, self._stop = run_in_thread(self.thread_name, server.start, stop_it)
        self.server = server
        return self

    def stop(self) -> None:
        loop, thread, stop = self._loop, self._thread, self._stop
        if loop is None or thread is None or stop is None:
            return
        set_threadsafe(loop, stop)
        thread.join()
        self.server = None
        self._loop = self._thread = self._stop = None

    def __enter__(self) -> EmbeddedService[S]:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
