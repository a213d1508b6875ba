"""``zurau storage``: format log directories, as Kafka's ``kafka-storage.sh``.

* ``zurau storage random-uuid`` prints a new cluster id (and only that).
* ``zurau storage format --cluster-id ID --config server.properties [-o key=value ...]`` writes
  ``meta.properties`` (cluster id, node id) into every ``log.dirs`` directory and the
  ``metadata.log.dir``. A directory already formatted for the same cluster and node is left as it
  is with ``--ignore-formatted``, otherwise refused; one formatted for another cluster or node is
  always refused. A static quorum (``controller.quorum.voters``) needs no further flag; a dynamic
  one (``controller.quorum.bootstrap.servers``) takes ``--standalone`` or
  ``--initial-controllers``, which Zurau does not support yet and says so.

A broker whose configuration names several controllers refuses to start on unformatted
directories (format them first, with one cluster id for every node); with no configuration, or
one naming only this node, the broker formats itself on first start.
"""

from __future__ import annotations

from pathlib import Path

import typer

from zurau.cli.common import CommandError, parse_kv
from zurau.cli.output import print_error

app = typer.Typer(help="Format log directories (like kafka-storage.sh).", no_args_is_help=True)


def _fail(message: str) -> None:
    print_error(message)
    raise typer.Exit(1)


@app.command("random-uuid")
def random_uuid() -> None:
    """Print a new random cluster id."""
    from zurau.metadata.topic_names import new_cluster_id

    typer.echo(new_cluster_id())


@app.command("format")
def format_(
    cluster_id: str = typer.Option(..., "--cluster-id", "-t", help="the cluster id (zurau storage random-uuid)"),
    config: Path = typer.Option(..., "--config", "-c", help="server.properties file"),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    ignore_formatted: bool = typer.Option(False, "--ignore-formatted", "-g", help="skip formatted directories"),
    standalone: bool = typer.Option(False, "--standalone", "-s", help="dynamic quorum: this node alone"),
    initial_controllers: str | None = typer.Option(None, "--initial-controllers", "-I", help="dynamic quorum voters"),
) -> None:
    """Write meta.properties into every log directory of this node."""
    from zurau.config import BrokerConfig, ConfigError, load_properties
    from zurau.metadata.metadata_log import MetaProperties, format_dirs, valid_cluster_id

    if not config.exists():
        _fail(f"config file {config} does not exist")
    props = dict(load_properties(config))
    try:
        props.update((k, v or "") for k, v in parse_kv(override, "--override"))
        cfg = BrokerConfig.from_props(props)
    except (CommandError, ConfigError) as e:
        _fail(str(e))
        return
    if not valid_cluster_id(cluster_id):
        _fail(f"Cluster ID string {cluster_id} does not appear to be a valid UUID (use zurau storage random-uuid)")
    dynamic = not cfg.controller_quorum_voters and bool(cfg.get("controller.quorum.bootstrap.servers"))
    if standalone or initial_controllers:
        if not dynamic:
            _fail("--standalone and --initial-controllers are for dynamic quorums "
                  "(controller.quorum.bootstrap.servers); this config names static controller.quorum.voters")
        _fail("dynamic controller quorums (KIP-853) are not supported by Zurau yet; use controller.quorum.voters")
    if dynamic:
        _fail("a dynamic quorum needs --standalone or --initial-controllers")
    dirs = sorted({*cfg.log_dirs, cfg.metadata_log_dir})
    try:
        written = format_dirs(dirs, MetaProperties(cluster_id, cfg.node_id), ignore_formatted=ignore_formatted)
    except OSError as e:
        _fail(f"cannot format: {e}")
        return
    except ValueError as e:
        _fail(str(e))
        return
    for d in dirs:
        typer.echo(f"{'Formatting' if d in written else 'Skipping already formatted'} {d} with cluster.id {cluster_id}")
