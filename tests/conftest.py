"""Shared fixtures.

The embedded broker and per-test topics come from Zurau's own pytest plugin (``zurau_broker``,
``zurau_topic``; see ``src/zurau/pytest_plugin.py``), loaded through its ``pytest11`` entry point.
``bootstrap`` and ``topic_name`` remain as thin aliases for tests written before the plugin.

The codec's strict mode is on for the whole suite: encoding a dict with a key that is no field of
its message raises (a misspelt key would otherwise silently become the field's default). The
environment variable carries it into brokers the tests start in other processes.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from zurau.protocol import codec

os.environ["ZURAU_STRICT_CODEC"] = "1"
codec.set_strict(True)


def pytest_configure(config: pytest.Config) -> None:
    """Register the plugin if entry-point autoloading is off, never twice."""
    import zurau.pytest_plugin as plugin

    pm = config.pluginmanager
    if not pm.is_registered(plugin) and not pm.is_blocked("zurau"):
        pm.register(plugin, "zurau")


#: Test directories whose tests each start several node processes or a JVM: under pytest-xdist
#: (``pytest -n 2``, as ``make test`` runs; its ``solo`` tests then run alone) they all go to one
#: worker, one at a time, so that two of them never share the two cores;
#: every other test file is one unit of its own, its tests on one worker (module fixtures are set
#: up once).
HEAVY_DIRS = ("fault", "spark")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """The scheduler of ``pytest -n N``: whole files, and all of HEAVY_DIRS as one unit.

    A scheduler, not ``xdist_group`` marks: ``--dist loadgroup`` groups by a suffix it writes into
    each test's nodeid, which pytest 9.2 no longer lets it change (pytest-dev/pytest-xdist#1386),
    so the marks were silently ignored and two fault tests could run at once.
    """
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class HeavyApartScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            parts = path.split("/")
            if len(parts) > 2 and parts[0] == "tests" and parts[1] in HEAVY_DIRS:
                return "heavy"
            return path

    return HeavyApartScheduling(config, log)


@pytest.fixture
def bootstrap(zurau_broker: object) -> str:
    """``bootstrap.servers`` of the session's embedded broker (alias of zurau_broker's)."""
    return zurau_broker.bootstrap_servers  # type: ignore[attr-defined]


@pytest.fixture
def topic_name() -> str:
    """A fresh topic name that does not exist yet (zurau_topic gives an existing topic)."""
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
