"""Composition root: build a broker from configuration and run it until a signal arrives."""

from __future__ import annotations

import asyncio
import logging
import signal

from zurau.broker.server import Broker
from zurau.config import BrokerConfig

log = logging.getLogger("zurau")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop where available (DESIGN.md: one uvloop event loop per broker process)."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency on every supported platform
        return asyncio.new_event_loop()


async def serve(config: BrokerConfig) -> None:
    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await broker.stop()


def run(config: BrokerConfig) -> None:
    loop = new_event_loop()
    try:
        loop.run_until_complete(serve(config))
    finally:
        loop.close()
