"""The ``zurau`` command line.

* ``zurau broker start [--config server.properties] [--override key=value ...]`` starts one broker
  with Kafka's broker config names; with no config file it listens on 127.0.0.1:9092 and keeps
  data in ./data; it serves Prometheus metrics on http://127.0.0.1:9404/metrics unless
  ``metrics.http.listener`` says otherwise (empty: none).
* ``zurau storage random-uuid|format`` prepares log directories (``kafka-storage.sh``).
* ``zurau registry start`` runs a Confluent-compatible schema registry (:mod:`zurau.cli.registry`);
  ``zurau schemas list|get|register|check|delete|config`` talks to one (:mod:`zurau.cli.schemas`).
* ``zurau rest-proxy start`` runs a Kafka REST proxy, Confluent's v3 and v2 APIs (:mod:`zurau.cli.rest_proxy`).
* ``zurau connect start`` runs a Kafka Connect worker (:mod:`zurau.cli.connect`).
* ``zurau mirror-maker mm2.properties`` runs MirrorMaker 2 in dedicated mode (:mod:`zurau.cli.mirror_maker`).
* ``zurau console`` runs the web console (:mod:`zurau.cli.console`).
* ``zurau cluster start --nodes 3`` runs a local KRaft cluster of combined nodes, one process each.
* ``zurau metadata-quorum describe --status|--replication`` (``kafka-metadata-quorum.sh``).
* ``zurau features describe|upgrade|downgrade|disable`` (``kafka-features.sh``).
* ``zurau topics list|create|describe|delete|alter``, ``zurau configs describe|alter``,
  ``zurau leader-election`` (kafka-leader-election.sh), ``zurau reassign-partitions``
  (kafka-reassign-partitions.sh),
  ``zurau groups list|describe|delete|reset-offsets``, ``zurau transactions list|describe|abort``,
  ``zurau produce TOPIC`` and ``zurau consume TOPIC`` are Kafka tools: they talk to any
  Kafka-compatible cluster through :mod:`zurau.client` (``--bootstrap-server``,
  ``--command-config``), never through the broker code, and fail with one line on stderr and
  exit status 1.

Command modules are imported eagerly but import their heavy dependencies lazily, so
``zurau --help`` and the client commands start without loading the broker stack.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer

from zurau.cli import (
    balancer,
    cluster,
    configs,
    features,
    groups,
    metadata_quorum,
    registry,
    share_groups,
    storage,
    topics,
    transactions,
)
from zurau.cli import connect as connect_cli
from zurau.cli import rest_proxy as rest_proxy_cli
from zurau.cli import schemas as schemas_cli
from zurau.cli.acls import acls
from zurau.cli.client_metrics import client_metrics
from zurau.cli.client_quotas import app as client_quotas_app
from zurau.cli.common import CommandError, service_properties, setup_service_logging
from zurau.cli.console import console
from zurau.cli.consume import consume
from zurau.cli.delegation_tokens import delegation_tokens
from zurau.cli.leader_election import leader_election
from zurau.cli.mirror_maker import mirror_maker
from zurau.cli.output import print_error
from zurau.cli.pipeline import app as pipeline_app
from zurau.cli.produce import produce
from zurau.cli.reassign_partitions import reassign_partitions
from zurau.cli.user_scram import app as user_scram_app

app = typer.Typer(
    help="Zurau: a Kafka-compatible event streaming platform.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
broker_app = typer.Typer(help="Run a Zurau broker.", no_args_is_help=True)
app.add_typer(broker_app, name="broker")
app.add_typer(topics.app, name="topics")
app.add_typer(configs.app, name="configs")
app.add_typer(groups.app, name="groups")
app.add_typer(share_groups.app, name="share-groups")
app.add_typer(balancer.app, name="balancer")
app.add_typer(transactions.app, name="transactions")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(storage.app, name="storage")
app.add_typer(cluster.app, name="cluster")
app.add_typer(features.app, name="features")
app.add_typer(metadata_quorum.app, name="metadata-quorum")
app.add_typer(registry.app, name="registry")
app.add_typer(rest_proxy_cli.app, name="rest-proxy")
app.add_typer(schemas_cli.app, name="schemas")
app.add_typer(connect_cli.app, name="connect")
app.add_typer(user_scram_app, name="user-scram")
app.add_typer(client_quotas_app, name="client-quotas")
app.command("acls")(acls)
app.command("client-metrics")(client_metrics)
app.command("delegation-tokens")(delegation_tokens)
app.command("produce")(produce)
app.command("consume")(consume)
app.command("leader-election")(leader_election)
app.command("reassign-partitions")(reassign_partitions)
app.command("console")(console)
app.command("mirror-maker")(mirror_maker)


# Where `zurau broker start` serves Prometheus metrics unless metrics.http.listener is set
# (9404: the port Strimzi and the JMX exporter examples give Kafka's metrics).
DEFAULT_METRICS_LISTENER = "http://127.0.0.1:9404"


def _fail(message: str) -> NoReturn:
    print_error(message)
    raise typer.Exit(1)


@broker_app.command("start")
def broker_start(
    config: Path | None = typer.Option(None, "--config", "-c", help="server.properties file"),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Start a broker in the foreground (Ctrl-C or SIGTERM stops it cleanly)."""
    from zurau.app import run
    from zurau.config import BrokerConfig, ConfigError
    from zurau.protocol.errors import KafkaError

    setup_service_logging(log_level)
    try:
        props = service_properties(config, override)
    except CommandError as e:
        _fail(str(e))
    try:
        cfg = BrokerConfig.from_props(props)
    except ConfigError as e:
        _fail(str(e))
    try:
        run(cfg, default_metrics_listener=DEFAULT_METRICS_LISTENER)
    except (OSError, KafkaError, ConfigError) as e:  # ConfigError: a listener's TLS/SASL material
        _fail(f"cannot start the broker: {e}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
