"""Where a broker serves metrics: a configured listener must bind, the CLI's default may not."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from pathlib import Path

import pytest

from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.embedded import broker_props
from zurau.protocol.errors import KafkaStorageError


@pytest.fixture
def taken_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _config(data: Path, **overrides: str) -> BrokerConfig:
    return BrokerConfig.from_props(broker_props(data, overrides))


async def test_a_taken_default_listener_leaves_metrics_off(tmp_path: Path, taken_port: int) -> None:
    broker = Broker(_config(tmp_path), default_metrics_listener=f"http://127.0.0.1:{taken_port}")
    await broker.start()
    try:
        assert broker.metrics_url is None
        assert broker.services.metrics is None  # nothing recorded for nobody
    finally:
        await broker.stop()


async def test_a_taken_configured_listener_stops_the_start(tmp_path: Path, taken_port: int) -> None:
    listener = f"http://127.0.0.1:{taken_port}"
    broker = Broker(_config(tmp_path, **{"metrics.http.listener": listener}))
    with pytest.raises(KafkaStorageError, match=f"cannot serve metrics on {listener}"):
        await broker.start()


async def test_a_configured_listener_wins_over_the_default_and_empty_means_none(tmp_path: Path, taken_port: int) -> None:
    off = Broker(_config(tmp_path / "off", **{"metrics.http.listener": ""}), default_metrics_listener="http://127.0.0.1:0")
    await off.start()
    try:
        assert off.metrics_url is None and off.services.metrics is None
    finally:
        await off.stop()
    on = Broker(
        _config(tmp_path / "on", **{"metrics.http.listener": "http://127.0.0.1:0"}),
        default_metrics_listener=f"http://127.0.0.1:{taken_port}",
    )
    await on.start()
    try:
        url = on.metrics_url
        assert url is not None and f":{taken_port}/" not in url
        loop_free = await _fetch_off_loop(url)
        assert b"kafka_server_replicamanager_partitioncount" in loop_free
    finally:
        await on.stop()


async def _fetch_off_loop(url: str) -> bytes:
    """Scrape from a worker thread: the scrape needs this (the broker's) event loop to answer."""

    def fetch() -> bytes:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read()

    return await asyncio.get_running_loop().run_in_executor(None, fetch)
