"""A real Zurau broker inside the caller's process, for test suites.

``EmbeddedBroker`` listens on an ephemeral 127.0.0.1 port with a temporary data directory (or a
given one) and accepts broker configs as keyword overrides (``log_segment_bytes=1024`` means
``log.segment.bytes=1024``). Two ways to run it:

* ``with EmbeddedBroker() as b:`` runs the broker on its own event loop in a background thread,
  for synchronous callers; ``__exit__`` stops it and joins the thread.
* ``async with EmbeddedBroker() as b:`` runs it on the caller's running loop.

Shutdown is clean: every listener and connection closed, logs flushed and closed, the thread
joined, and a temporary directory removed.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from zurau.broker.server import Broker
from zurau.config import BrokerConfig


def _props(data_dir: Path, overrides: dict[str, Any]) -> dict[str, str]:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        "log.retention.check.interval.ms": "1000",
    }
    for key, value in overrides.items():
        name = key.replace("_", ".") if "." not in key else key
        props[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return props


class EmbeddedBroker:
    def __init__(self, data_dir: str | Path | None = None, **configs: Any) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="zurau-"))
        self.config = BrokerConfig.from_props(_props(self.data_dir, configs))
        self.broker = Broker(self.config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def port(self) -> int:
        return self.broker.advertised[1]

    # ------------------------------------------------------------------ sync
    def start(self) -> EmbeddedBroker:
        from zurau.app import new_event_loop

        loop = new_event_loop()
        started = threading.Event()
        error: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.broker.start())
            except BaseException as e:  # reported to the starting thread
                error.append(e)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.broker.stop())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="zurau-embedded-broker", daemon=True)
        self._thread.start()
        started.wait()
        if error:
            self._thread.join()
            self._cleanup_dir()
            raise error[0]
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = None
        self._loop = None
        self._cleanup_dir()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the broker's loop thread and return its result (sync mode)."""
        assert self._loop is not None
        fut: asyncio.Future[Any] = asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop)  # type: ignore[assignment]
        return fut.result()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ async
    async def __aenter__(self) -> EmbeddedBroker:
        try:
            await self.broker.start()
        except BaseException:
            self._cleanup_dir()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.broker.stop()
        self._cleanup_dir()

    def _cleanup_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


async def _call(fn: Any, *args: Any) -> Any:
    result = fn(*args)
    if asyncio.iscoroutine(result):
        result = await result
    return result
