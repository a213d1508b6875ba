"""A real Zurau broker inside the caller's process, for test suites.

``EmbeddedBroker`` listens on an ephemeral 127.0.0.1 port with a temporary data directory (or a
given one) and accepts broker configs as keyword overrides (``log_segment_bytes=1048576`` means
``log.segment.bytes=1048576``; dotted names work through ``**{"log.segment.bytes": ...}``).
Two ways to run it:

* ``with EmbeddedBroker() as b:`` runs the broker on its own event loop (uvloop) in a background
  thread, for synchronous callers; ``__exit__`` stops it and joins the thread.
* ``async with EmbeddedBroker() as b:`` runs it on the caller's running loop.

Clean shutdown, both ways: listeners and connections closed, every task the broker started
(maintenance, request handlers, long polls) finished, logs flushed and their files closed, and a
temporary directory removed. In sync mode the broker's thread, its event loop and the loop's
executor threads are gone when ``__exit__`` returns. In async mode the broker leaves no task on
the caller's loop; file work it handed to the loop's default executor ran on the caller's
executor threads, which belong to (and end with) the caller's loop.

Invariant: a given ``data_dir`` is never deleted; a temporary one always is, also when start-up
fails (bad config, port in use).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zurau.app import Broker
from zurau.config import BrokerConfig

_STOP_GRACE = 5.0  # seconds to wait for the broker's own tasks to finish after stop()


def broker_props(data_dir: Path, overrides: Mapping[str, Any]) -> dict[str, str]:
    """Broker properties: embedded defaults, then ``overrides`` (``a_b_c`` -> ``a.b.c``)."""
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        "log.retention.check.interval.ms": "1000",
    }
    for key, value in overrides.items():
        name = key if "." in key else key.replace("_", ".")
        props[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return props


def _is_broker_task(task: asyncio.Task[Any]) -> bool:
    """A task running broker-side code (not the caller's, not Zurau's client)."""
    coro = task.get_coro()
    frame = getattr(coro, "cr_frame", None)
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return module.startswith("zurau.") and not module.startswith(("zurau.client", "zurau.embedded"))


class EmbeddedBroker:
    """One broker in this process (see the module docstring for the two modes)."""

    def __init__(self, data_dir: str | Path | None = None, **configs: Any) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="zurau-"))
        try:
            self.config = BrokerConfig.from_props(broker_props(self.data_dir, configs))
        except BaseException:
            self._cleanup_dir()
            raise
        self.broker = Broker(self.config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop_event: asyncio.Event | None = None
        self._async_running = False

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.broker.started else "not running"
        return f"EmbeddedBroker({where}, data_dir={str(self.data_dir)!r})"

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        return self.broker.bootstrap_servers

    @property
    def port(self) -> int:
        return self.broker.advertised[1]

    @property
    def running(self) -> bool:
        return self.broker.started

    # ------------------------------------------------------------------ sync mode
    def start(self) -> EmbeddedBroker:
        """Start on a background thread with its own event loop; returns once it listens."""
        if self._thread is not None or self._async_running:
            raise RuntimeError("this EmbeddedBroker is already running")
        from zurau.app import new_event_loop

        loop = new_event_loop()
        started = threading.Event()
        error: list[BaseException] = []

        async def serve() -> None:
            self._stop_event = asyncio.Event()
            try:
                await self.broker.start()
            except BaseException as e:  # reported to the starting thread
                error.append(e)
                started.set()
                await self._stop_broker()
                return
            started.set()
            try:
                await self._stop_event.wait()
            finally:
                await self._stop_broker()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(serve())
                _cancel_remaining(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="zurau-embedded-broker", daemon=True)
        self._thread.start()
        started.wait()
        if error:
            self._thread.join()
            self._thread = None
            self._loop = None
            self._cleanup_dir()
            raise error[0]
        return self

    def stop(self) -> None:
        """Stop the broker, join its thread and remove a temporary data dir (idempotent)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        stop_event = self._stop_event
        if stop_event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop may have just finished
                loop.call_soon_threadsafe(stop_event.set)
        thread.join()
        self._thread = None
        self._loop = None
        self._cleanup_dir()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (awaiting it if it returns a coroutine) on the broker's loop (sync mode)."""
        if self._loop is None:
            raise RuntimeError("call() needs a broker started with start() or `with`")
        fut = asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop)
        return fut.result()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ async mode
    async def __aenter__(self) -> EmbeddedBroker:
        if self._thread is not None or self._async_running:
            raise RuntimeError("this EmbeddedBroker is already running")
        try:
            await self.broker.start()
        except BaseException:
            await self._stop_broker()
            self._cleanup_dir()
            raise
        self._async_running = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._stop_broker()
        finally:
            self._async_running = False
            self._cleanup_dir()

    # ------------------------------------------------------------------ topics
    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> str:
        """Create a topic directly on the broker (no client); returns its name.

        Sync mode: callable from any thread. Async mode: call it from the broker's loop.
        """
        args = (name, partitions, 1, dict(configs or {}))
        if self._loop is not None:
            self.call(self.broker.create_topic, *args)
        else:
            self.broker.create_topic(*args)
        return name

    def delete_topic(self, name: str) -> None:
        """Delete a topic directly on the broker (UnknownTopicOrPartitionError if absent)."""
        if self._loop is not None:
            self.call(self.broker.delete_topic, name)
        else:
            self.broker.delete_topic(name)

    # ------------------------------------------------------------------ internals
    async def _stop_broker(self) -> None:
        """Stop the broker and wait (bounded) for every task it started to finish."""
        try:
            await self.broker.stop()
        finally:
            await self._wait_for_broker_tasks()

    async def _wait_for_broker_tasks(self) -> None:
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _STOP_GRACE
        while True:
            # connection_lost (which cancels a connection's handler tasks) runs a loop turn or
            # two after the transports are closed.
            await asyncio.sleep(0)
            tasks = [t for t in asyncio.all_tasks() if t is not current and _is_broker_task(t)]
            if (not tasks and not self.broker.connections) or loop.time() > deadline:
                break
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks, timeout=0.05) if tasks else await asyncio.sleep(0.001)

    def _cleanup_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does on exit: cancel leftover tasks and let them finish."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


async def _call(fn: Any, *args: Any) -> Any:
    result = fn(*args)
    if asyncio.iscoroutine(result):
        result = await result
    return result
