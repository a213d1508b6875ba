"""Shared fixtures: an in-process broker for the session and brokers in separate processes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess


@pytest.fixture(scope="session")
def broker() -> Iterator[object]:
    """One embedded broker (real sockets, background event loop) shared by a test session."""
    from zurau.embedded import EmbeddedBroker

    with EmbeddedBroker() as b:
        yield b


@pytest.fixture
def bootstrap(broker: object) -> str:
    return broker.bootstrap_servers  # type: ignore[attr-defined]


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker in a separate process with a data dir under tmp_path; killed at the end."""
    bp = BrokerProcess(tmp_path / "data")
    bp.start()
    try:
        yield bp
    finally:
        bp.stop()
