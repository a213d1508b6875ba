"""A fault-injecting TCP proxy on 127.0.0.1, and a network of them between the nodes of a cluster.

:class:`FaultProxy` listens on an ephemeral port of 127.0.0.1 and forwards every accepted
connection to one target ``host:port``. Its fault is switched at run time, and every fault is
bounded in time (after ``duration`` seconds the proxy heals by itself; :meth:`FaultProxy.heal`
ends it earlier):

* **pass** (no fault): bytes flow both ways as they arrive.
* **blackhole** (a network partition), in one direction or both: connections stay open and new ones
  are accepted, but nothing is forwarded in a blackholed direction. Like a partition under TCP
  (the peer's kernel retransmits until it heals), bytes are *held*, never dropped: a stream stays
  intact, and what was held is delivered after the heal unless one side gave up and closed first.
  A bounded buffer per direction (then TCP back-pressure) keeps memory bounded.
* **reset**: every open connection is closed with a TCP RST on both sides, and every new one is
  accepted and reset at once, until the fault ends.
* **delay**: each chunk is forwarded ``latency`` (plus up to ``jitter``) seconds after it arrived;
  order within a connection is kept.

Invariants: the proxy never reorders, duplicates or drops bytes within a connection (only a reset,
or a peer closing, ends a stream early, and then the whole connection is closed both ways); a fault
never outlives its ``duration``; a new fault replaces the current one.

The proxy lives on an asyncio loop. In-process on a running loop: ``await FaultProxy(...).start()``
and call the control methods from that loop. From synchronous code (a test driving real processes):
:class:`ProxyThread` runs a loop in a daemon thread and creates proxies on it; the control methods
are thread-safe (from another thread they run on the proxy's loop and wait for it).

:class:`FaultNetwork` keeps one proxy per directed link ``(source node, destination node, kind)``
(``kind`` names the listener: ``"replication"``, ``"controller"``), so a test can cut one link,
one direction, or isolate a node from every other (see :mod:`zurau.testing.cluster_process`).

Like the rest of :mod:`zurau.testing`, only the standard library is imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

HOST = "127.0.0.1"
#: Chunks held per direction of a connection while it is blackholed or delayed (then the proxy
#: stops reading that side, and TCP flow control pushes back on the sender).
QUEUE_CHUNKS = 64
CHUNK_BYTES = 65536
#: Seconds to dial the target for a new connection (then the client's connection is reset).
CONNECT_TIMEOUT = 10.0
#: A fault given no duration ends after this many seconds.
DEFAULT_FAULT_SECONDS = 30.0
#: No fault may last longer than this (a stuck test must not keep a partition forever).
MAX_FAULT_SECONDS = 3600.0

T = TypeVar("T")


class Direction(enum.Flag):
    """Which way bytes flow through a proxy: towards the target (the connecting client's
    requests) or from it (the target's answers)."""

    TO_TARGET = enum.auto()
    FROM_TARGET = enum.auto()
    BOTH = TO_TARGET | FROM_TARGET


class FaultKind(enum.Enum):
    PASS = "pass"
    BLACKHOLE = "blackhole"
    RESET = "reset"
    DELAY = "delay"


@dataclass(frozen=True)
class Fault:
    """The proxy's current behaviour. ``until`` is a ``time.monotonic()`` deadline (None: no fault)."""

    kind: FaultKind = FaultKind.PASS
    direction: Direction = Direction.BOTH
    latency: float = 0.0
    jitter: float = 0.0
    until: float | None = None

    def blocks(self, direction: Direction) -> bool:
        return self.kind is FaultKind.BLACKHOLE and bool(self.direction & direction)


PASS = Fault()


@dataclass
class ProxyStats:
    """Counters since the proxy started (read them from any thread; they only grow)."""

    accepted: int = 0
    reset: int = 0
    bytes_to_target: int = 0
    bytes_from_target: int = 0
    faults: list[tuple[float, str]] = field(default_factory=list)


def _abort_with_rst(writer: asyncio.StreamWriter) -> None:
    """Close a connection so that the peer sees a reset (SO_LINGER 0), not an orderly FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Connection:
    """One proxied connection: two pumps (reader -> bounded queue -> writer) per direction."""

    def __init__(self, proxy: FaultProxy, client: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        self.proxy = proxy
        self.client_reader, self.client_writer = client
        self.target_writer: asyncio.StreamWriter | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.closed = False

    async def run(self) -> None:
        proxy = self.proxy
        try:
            target_reader, target_writer = await asyncio.wait_for(
                asyncio.open_connection(proxy.target_host, proxy.target_port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError):
            # The target is down: the client sees its connection reset, as a real refused dial.
            self.close(rst=True)
            return
        self.target_writer = target_writer
        if self.closed:  # reset while connecting
            self.close(rst=True)
            return
        pairs = (
            (self.client_reader, target_writer, Direction.TO_TARGET),
            (target_reader, self.client_writer, Direction.FROM_TARGET),
        )
        for reader, writer, direction in pairs:
            queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUE_CHUNKS)
            self.tasks.append(asyncio.create_task(self._read(reader, queue)))
            self.tasks.append(asyncio.create_task(self._write(queue, writer, direction)))
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self.tasks, return_exceptions=True)
        self.close(rst=False)

    async def _read(self, reader: asyncio.StreamReader, queue: asyncio.Queue[tuple[float, bytes]]) -> None:
        try:
            while True:
                data = await reader.read(CHUNK_BYTES)
                await queue.put((time.monotonic(), data))  # b"" marks the end of the stream
                if not data:
                    return
        except (OSError, asyncio.IncompleteReadError):
            await queue.put((time.monotonic(), b""))

    async def _write(
        self, queue: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter, direction: Direction
    ) -> None:
        proxy = self.proxy
        try:
            while True:
                received, data = await queue.get()
                await proxy._wait_open(direction)
                fault = proxy.fault
                if fault.kind is FaultKind.DELAY:
                    lag = fault.latency + (random.uniform(0, fault.jitter) if fault.jitter else 0.0)
                    wait = received + lag - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    await proxy._wait_open(direction)  # a blackhole may have started meanwhile
                if not data:
                    # One side finished: close the whole connection (half-closes are not needed
                    # by Kafka's protocol, and a closed peer is what either side then sees).
                    self.close(rst=False)
                    return
                writer.write(data)
                await writer.drain()
                if direction is Direction.TO_TARGET:
                    proxy.stats.bytes_to_target += len(data)
                else:
                    proxy.stats.bytes_from_target += len(data)
        except (OSError, ConnectionError):
            self.close(rst=True)

    def close(self, *, rst: bool) -> None:
        """Close both sides (idempotent); ``rst``: as a reset, not an orderly close."""
        self.closed = True
        for w in (self.client_writer, self.target_writer):
            if w is None or w.transport.is_closing():
                continue
            if rst:
                _abort_with_rst(w)
            else:
                w.close()
        current = asyncio.current_task()
        for t in self.tasks:
            if t is not current:
                t.cancel()


class FaultProxy:
    """See the module docstring. ``port`` is known once :meth:`start` has returned."""

    def __init__(
        self, target_host: str, target_port: int, *, name: str = "", listen_host: str = HOST
    ) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.name = name or f"proxy->{target_host}:{target_port}"
        self.listen_host = listen_host
        self.port = 0
        self.fault: Fault = PASS
        self.stats = ProxyStats()
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connections: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed: asyncio.Event | None = None
        self._expiry: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> Self:
        """Listen on an ephemeral port of ``listen_host`` (sets ``port``)."""
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self._server = await asyncio.start_server(self._accept, self.listen_host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    @property
    def address(self) -> str:
        return f"{self.listen_host}:{self.port}"

    async def aclose(self) -> None:
        """Stop listening and reset every connection."""
        if self._server is not None:
            self._server.close()
        for c in list(self._connections):
            c.close(rst=True)
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        if self._expiry is not None:
            self._expiry.cancel()

    def close(self) -> None:
        """:meth:`aclose` from any thread but the proxy's own."""
        self._call(self.aclose)

    @property
    def connections(self) -> int:
        """Connections open through the proxy now."""
        return len(self._connections)

    # ------------------------------------------------------------------ controls
    def heal(self) -> None:
        """Back to pass-through: held bytes flow again."""
        self._call_sync(lambda: self._set(PASS))

    def blackhole(
        self, duration: float = DEFAULT_FAULT_SECONDS, direction: Direction = Direction.BOTH
    ) -> None:
        """Forward nothing in ``direction`` for ``duration`` seconds (connections are kept and
        accepted; bytes are held, see the module docstring)."""
        self._call_sync(
            lambda: self._set(Fault(FaultKind.BLACKHOLE, direction, until=self._deadline(duration)))
        )

    def reset(self, duration: float = DEFAULT_FAULT_SECONDS) -> None:
        """Reset every connection now and every new one for ``duration`` seconds."""
        self._call_sync(lambda: self._set(Fault(FaultKind.RESET, until=self._deadline(duration))))

    def delay(self, latency: float, duration: float = DEFAULT_FAULT_SECONDS, jitter: float = 0.0) -> None:
        """Forward each chunk ``latency`` (+ uniform [0, ``jitter``]) seconds after it arrived."""
        if latency < 0 or jitter < 0:
            raise ValueError("latency and jitter must be >= 0")
        fault = Fault(FaultKind.DELAY, latency=latency, jitter=jitter, until=self._deadline(duration))
        self._call_sync(lambda: self._set(fault))

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _deadline(duration: float) -> float:
        if not 0 < duration <= MAX_FAULT_SECONDS:
            raise ValueError(f"a fault lasts (0, {MAX_FAULT_SECONDS}] seconds, not {duration}")
        return time.monotonic() + duration

    def _set(self, fault: Fault) -> None:
        """On the proxy's loop: install ``fault`` and schedule its end."""
        assert self._loop is not None and self._changed is not None, "proxy not started"
        self.fault = fault
        self.stats.faults.append((time.monotonic(), fault.kind.value))
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if fault.until is not None:
            self._expiry = self._loop.call_later(
                max(0.0, fault.until - time.monotonic()), self._expire, fault
            )
        if fault.kind is FaultKind.RESET:
            for c in list(self._connections):
                c.close(rst=True)
                self.stats.reset += 1
        # Wake the writers waiting on a blackhole.
        self._changed.set()
        self._changed = asyncio.Event()

    def _expire(self, fault: Fault) -> None:
        if self.fault is fault:
            self._set(PASS)

    async def _wait_open(self, direction: Direction) -> None:
        while self.fault.blocks(direction):
            assert self._changed is not None
            await self._changed.wait()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.accepted += 1
        if self.fault.kind is FaultKind.RESET:
            self.stats.reset += 1
            _abort_with_rst(writer)
            return
        conn = _Connection(self, (reader, writer))
        self._connections.add(conn)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)
            self._tasks.discard(task)

    def _on_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _call_sync(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the proxy's loop: directly when called there, else thread-safely, waiting."""
        assert self._loop is not None, "proxy not started"
        if self._on_loop_thread():
            fn()
            return
        done = threading.Event()
        error: list[BaseException] = []

        def run() -> None:
            try:
                fn()
            except BaseException as e:  # pragma: no cover - re-raised in the caller
                error.append(e)
            finally:
                done.set()

        self._loop.call_soon_threadsafe(run)
        if not done.wait(10):
            raise TimeoutError(f"{self.name}: its event loop did not answer")
        if error:
            raise error[0]

    def _call(self, coro_fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        assert self._loop is not None, "proxy not started"
        if self._on_loop_thread():
            raise RuntimeError("on the proxy's loop, await the coroutine instead")
        return asyncio.run_coroutine_threadsafe(coro_fn(), self._loop).result(10)

    def __repr__(self) -> str:
        return f"<FaultProxy {self.name} {self.address} -> {self.target_host}:{self.target_port} {self.fault.kind.value}>"


class ProxyThread:
    """An asyncio loop in a daemon thread that hosts proxies for synchronous callers."""

    def __init__(self, name: str = "fault-proxies") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self.proxies: list[FaultProxy] = []

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        """Run ``coro`` on the thread's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def proxy(self, target_host: str, target_port: int, name: str = "") -> FaultProxy:
        """A started proxy to ``target_host:target_port`` on this thread's loop."""
        p = self.run(FaultProxy(target_host, target_port, name=name).start())
        self.proxies.append(p)
        return p

    def close(self) -> None:
        """Close every proxy, then stop the loop and join the thread (bounded)."""
        if not self._thread.is_alive():
            return

        async def close_all() -> None:
            await asyncio.gather(*(p.aclose() for p in self.proxies), return_exceptions=True)

        with contextlib.suppress(Exception):
            self.run(close_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Link = tuple[int, int, str]  # (source node, destination node, kind)


class FaultNetwork:
    """Directed links between nodes, one :class:`FaultProxy` each, on one :class:`ProxyThread`.

    ``add(source, destination, kind, target_port)`` creates the proxy that ``source`` dials to
    reach ``destination``'s ``kind`` listener; the returned proxy's ``port`` is what ``source``
    must be configured with. Faults: a link, a node isolated from all others (every link from and
    to it), or a split into groups. Every fault is bounded by ``duration``.
    """

    def __init__(self) -> None:
        self.thread = ProxyThread()
        self.links: dict[Link, FaultProxy] = {}

    def add(
        self, source: int, destination: int, kind: str, target_port: int, target_host: str = HOST
    ) -> FaultProxy:
        proxy = self.thread.proxy(target_host, target_port, name=f"{kind}:{source}->{destination}")
        self.links[(source, destination, kind)] = proxy
        return proxy

    def link(self, source: int, destination: int, kind: str) -> FaultProxy:
        return self.links[(source, destination, kind)]

    def _select(self, nodes: Iterable[int], kinds: Iterable[str] | None) -> list[FaultProxy]:
        nodes, wanted = set(nodes), None if kinds is None else set(kinds)
        return [
            p
            for (s, d, k), p in self.links.items()
            if (s in nodes or d in nodes) and (wanted is None or k in wanted)
        ]

    def isolate(
        self, node: int, duration: float = DEFAULT_FAULT_SECONDS, kinds: Iterable[str] | None = None
    ) -> None:
        """Partition ``node`` from every other node: blackhole each link from or to it."""
        for p in self._select([node], kinds):
            p.blackhole(duration)

    def partition(
        self,
        groups: Iterable[Iterable[int]],
        duration: float = DEFAULT_FAULT_SECONDS,
        kinds: Iterable[str] | None = None,
    ) -> None:
        """Blackhole every link between nodes of different ``groups`` (links within a group pass)."""
        group_of = {n: i for i, g in enumerate(groups) for n in g}
        wanted = None if kinds is None else set(kinds)
        for (s, d, k), p in self.links.items():
            if wanted is not None and k not in wanted:
                continue
            if group_of.get(s, -1) != group_of.get(d, -2):
                p.blackhole(duration)

    def reset_node(
        self, node: int, duration: float = DEFAULT_FAULT_SECONDS, kinds: Iterable[str] | None = None
    ) -> None:
        """Reset every link from or to ``node`` (connections dropped, new ones refused)."""
        for p in self._select([node], kinds):
            p.reset(duration)

    def delay_node(
        self,
        node: int,
        latency: float,
        duration: float = DEFAULT_FAULT_SECONDS,
        kinds: Iterable[str] | None = None,
    ) -> None:
        for p in self._select([node], kinds):
            p.delay(latency, duration)

    def heal(self) -> None:
        """Every link back to pass-through."""
        for p in self.links.values():
            p.heal()

    def close(self) -> None:
        self.thread.close()


__all__ = [
    "DEFAULT_FAULT_SECONDS",
    "Direction",
    "Fault",
    "FaultKind",
    "FaultNetwork",
    "FaultProxy",
    "ProxyStats",
    "ProxyThread",
]
