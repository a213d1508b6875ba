"""pytest plugin: a real Zurau broker for a test session, and a fresh topic per test.

Registered through the ``pytest11`` entry point ``zurau``, so installing Zurau is enough:

* ``zurau_broker`` (session scope): an :class:`~zurau.embedded.EmbeddedBroker` on an ephemeral
  port with a temporary data dir, started on first use and stopped at the end of the session.
  Its broker configs come from the session fixture ``zurau_broker_configs`` (a dict of Kafka
  config names or ``snake_case`` keywords, empty by default), which a ``conftest.py`` may
  override.
* ``zurau_secure_broker`` (session scope): an :class:`~zurau.embedded.EmbeddedBroker` with one
  SASL_SSL listener (a generated throwaway CA; PLAIN and SCRAM-SHA-256/512) for the users of the
  session fixture ``zurau_secure_broker_users`` (``{"alice": "alice-secret"}`` by default) and
  the broker configs of ``zurau_secure_broker_configs`` (empty by default; e.g.
  ``delegation.token.secret.key`` to allow delegation tokens);
  ``.client_config("alice")`` gives the client properties, ``.ca_location`` the CA's PEM file.
* ``zurau_registry`` (session scope): an :class:`~zurau.EmbeddedRegistry` (a Confluent-compatible
  schema registry) on an ephemeral port against ``zurau_broker``; ``.url`` for clients.
* ``zurau_rest_proxy`` (session scope): an :class:`~zurau.rest_proxy.embedded_rest_proxy.EmbeddedRestProxy`
  (a Confluent-compatible Kafka REST proxy) on an ephemeral port against ``zurau_broker``, using
  ``zurau_registry`` for schemas; ``.url`` for HTTP clients.
* ``zurau_connect`` (session scope): an :class:`~zurau.EmbeddedConnect` (a standalone Kafka Connect
  worker) on an ephemeral port against ``zurau_broker``; ``.url`` for its REST API.
* ``zurau_postgres`` (session scope): a throwaway PostgreSQL server with ``wal_level=logical``
  (:class:`~zurau.testing.postgres.TemporaryPostgres`), started on first use.
* ``zurau_topic`` (function scope): the name of a topic created for the test on
  ``zurau_broker`` (1 partition unless the test is marked
  ``@pytest.mark.zurau_topic(partitions=3, configs={"cleanup.policy": "compact"})``) and deleted
  after it. The name contains the test's name, so broker logs point at the test.

Both are plain sync fixtures (the broker runs on its own thread), usable from sync and async
tests alike. Heavy imports happen inside the fixtures, so loading the plugin costs nothing for
test suites that do not use it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

MARKER = "zurau_topic"
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]+")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(partitions=1, configs=None): partitions and topic configs of the zurau_topic fixture",
    )


@pytest.fixture(scope="session")
def zurau_broker_configs() -> dict[str, Any]:
    """Broker configs for ``zurau_broker`` (override in a conftest.py to change them)."""
    return {}


@pytest.fixture(scope="session")
def zurau_broker(zurau_broker_configs: dict[str, Any]) -> Iterator[EmbeddedBroker]:
    """One embedded Zurau broker for the whole test session (``.bootstrap_servers``)."""
    from zurau.embedded import EmbeddedBroker

    with EmbeddedBroker(**zurau_broker_configs) as broker:
        yield broker


@pytest.fixture(scope="session")
def zurau_secure_broker_users() -> dict[str, str]:
    """User name -> password for ``zurau_secure_broker`` (override in a conftest.py)."""
    return {"alice": "alice-secret"}


@pytest.fixture(scope="session")
def zurau_secure_broker_configs() -> dict[str, Any]:
    """Broker configs for ``zurau_secure_broker`` (override in a conftest.py to change them)."""
    return {}


@pytest.fixture(scope="session")
def zurau_secure_broker(
    zurau_secure_broker_users: dict[str, str], zurau_secure_broker_configs: dict[str, Any]
) -> Iterator[EmbeddedBroker]:
    """One embedded broker with a SASL_SSL listener for the whole test session."""
    from zurau.embedded import EmbeddedBroker

    with EmbeddedBroker(security="SASL_SSL", users=zurau_secure_broker_users, **zurau_secure_broker_configs) as broker:
        yield broker


@pytest.fixture(scope="session")
def zurau_registry(zurau_broker: EmbeddedBroker) -> Iterator[Any]:
    """A schema registry for the whole test session, storing schemas on ``zurau_broker``."""
    from zurau.schema_registry.embedded_registry import EmbeddedRegistry

    with EmbeddedRegistry(zurau_broker.bootstrap_servers) as registry:
        yield registry


@pytest.fixture(scope="session")
def zurau_rest_proxy(zurau_broker: EmbeddedBroker, zurau_registry: Any) -> Iterator[Any]:
    """A REST proxy for the whole test session, on ``zurau_broker`` with ``zurau_registry``."""
    from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy

    with EmbeddedRestProxy(zurau_broker.bootstrap_servers, **{"schema.registry.url": zurau_registry.url}) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def zurau_connect(zurau_broker: EmbeddedBroker) -> Iterator[Any]:
    """A standalone Kafka Connect worker for the whole test session, on ``zurau_broker``."""
    from zurau.connect.embedded_connect import EmbeddedConnect

    with EmbeddedConnect(zurau_broker.bootstrap_servers) as connect:
        yield connect


@pytest.fixture(scope="session")
def zurau_postgres() -> Iterator[Any]:
    """A throwaway PostgreSQL server (``wal_level=logical``, 127.0.0.1, temp dir) for the session:
    a :class:`~zurau.testing.postgres.TemporaryPostgres` (``.dsn``, ``.connect_kwargs()``)."""
    from zurau.testing.postgres import TemporaryPostgres

    with TemporaryPostgres() as server:
        yield server


def topic_name_for(node_name: str) -> str:
    """A legal, unique topic name derived from a test's name."""
    base = _ILLEGAL.sub("-", node_name).strip("-.") or "test"
    return f"{base[:200]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def zurau_topic(request: pytest.FixtureRequest, zurau_broker: EmbeddedBroker) -> Iterator[str]:
    """A topic created on ``zurau_broker`` for this test and deleted after it."""
    from zurau.protocol.errors import UnknownTopicOrPartitionError

    marker = request.node.get_closest_marker(MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    partitions = int(kwargs.pop("partitions", 1))
    configs = {k: str(v) for k, v in (kwargs.pop("configs", None) or {}).items()}
    if kwargs:
        raise pytest.UsageError(f"unknown zurau_topic marker arguments: {', '.join(sorted(kwargs))}")
    name = topic_name_for(request.node.name)
    zurau_broker.create_topic(name, partitions, configs)
    try:
        yield name
    finally:
        try:
            zurau_broker.delete_topic(name)
        except UnknownTopicOrPartitionError:
            pass  # the test deleted it itself
