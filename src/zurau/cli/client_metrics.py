"""``zurau client-metrics``: client metrics subscriptions (KIP-714), as ``kafka-client-metrics.sh``
manages them::

    zurau client-metrics --bootstrap-server HOST:PORT --alter --name producers \\
        --metrics org.apache.kafka.producer. --interval 10000 \\
        --match client_software_name=confluent-kafka-python
    zurau client-metrics --alter --generate-name --metrics '*' --interval 60000
    zurau client-metrics --alter --name producers --block      # push no metric
    zurau client-metrics --describe [--name producers]
    zurau client-metrics --list
    zurau client-metrics --delete --name producers

A subscription is a CLIENT_METRICS config resource (type 16): ``--metrics`` sets ``metrics``
(comma-separated name prefixes; ``*`` every metric; ``--block`` the empty list), ``--interval``
``interval.ms`` (100 ..= 3,600,000) and ``--match`` ``match`` (comma-separated
``selector=regex``: ``client_id``, ``client_instance_id``, ``client_software_name``,
``client_software_version``, ``client_source_address``, ``client_source_port``). ``--alter``
sets only what it is given (IncrementalAlterConfigs SET); ``--delete`` removes the three configs,
which removes the subscription. ``--describe`` without ``--name`` describes every subscription
(their names from ListConfigResources). A refused change prints the broker's reason and exits 1.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, run
from zurau.cli.output import FormatOption, JsonOption, OutputFormat, fail, print_json, resolve_format

CONFIG_NAMES = ("interval.ms", "match", "metrics")


def client_metrics(
    alter: bool = typer.Option(False, "--alter", help="Create or change a subscription."),
    describe: bool = typer.Option(False, "--describe", help="Show subscriptions (all, or --name)."),
    list_: bool = typer.Option(False, "--list", help="List the subscriptions' names."),
    delete: bool = typer.Option(False, "--delete", help="Delete the subscription --name."),
    name: str | None = typer.Option(None, "--name", help="The subscription's name."),
    generate_name: bool = typer.Option(
        False, "--generate-name", help="--alter a new subscription named by a uuid."
    ),
    metrics: str | None = typer.Option(
        None, "--metrics", help="Metric name prefixes, comma-separated ('*': all)."
    ),
    interval: int | None = typer.Option(None, "--interval", help="Push interval in ms (100..3600000)."),
    match: str | None = typer.Option(
        None,
        "--match",
        help="Client selectors, comma-separated selector=regex (client_id, client_software_name, ...).",
    ),
    block: bool = typer.Option(False, "--block", help="--alter: the matching clients push no metric."),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
    output_format: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
) -> None:
    """Manage client metrics subscriptions (KIP-714), like kafka-client-metrics.sh."""
    output_format = resolve_format(output_format, as_json)
    actions = [
        a for a, on in (("alter", alter), ("describe", describe), ("list", list_), ("delete", delete)) if on
    ]
    if len(actions) != 1:
        fail("give exactly one of --alter, --describe, --list, --delete")
    action = actions[0]
    if generate_name and (action != "alter" or name):
        fail("--generate-name goes with --alter and without --name")
    if action in ("alter", "delete") and not (name or generate_name):
        fail(f"--{action} needs --name" + (" or --generate-name" if action == "alter" else ""))
    if action != "alter" and (metrics is not None or interval is not None or match is not None or block):
        fail("--metrics, --interval, --match and --block go with --alter")
    if block and metrics is not None:
        fail("--block and --metrics exclude each other")
    from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ResourceType

    sets: dict[str, str] = {}
    if action == "alter":
        if metrics is not None or block:
            sets["metrics"] = "" if block else metrics or ""
        if interval is not None:
            sets["interval.ms"] = str(interval)
        if match is not None:
            sets["match"] = match
        if not sets:
            fail("nothing to change: give --metrics, --interval, --match or --block")
        name = name or str(uuid.uuid4())
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        async with AdminClient(cfg) as admin:
            if action == "list":
                names = [r.name for r in await admin.list_config_resources([ResourceType.CLIENT_METRICS])]
                if output_format is OutputFormat.json:
                    print_json(sorted(names))
                else:
                    for n in sorted(names):
                        typer.echo(n)
                return
            if action in ("alter", "delete"):
                assert name is not None
                resource = ConfigResource(ResourceType.CLIENT_METRICS, name)
                ops = (
                    [AlterConfigOp(k, AlterOp.SET, v) for k, v in sorted(sets.items())]
                    if action == "alter"
                    else [AlterConfigOp(k, AlterOp.DELETE) for k in CONFIG_NAMES]
                )
                error = (await admin.incremental_alter_configs({resource: ops}))[resource]
                if error is not None:
                    raise CommandError(f"client metrics {name}: {error}")
                verb = "altered" if action == "alter" else "deleted"
                typer.echo(f"Client metrics configs for {name} {verb} successfully.")
                return
            names = (
                [name]
                if name
                else sorted(r.name for r in await admin.list_config_resources([ResourceType.CLIENT_METRICS]))
            )
            found = await admin.describe_configs(
                [ConfigResource(ResourceType.CLIENT_METRICS, n) for n in names]
            )
            doc: dict[str, dict[str, str | None]] = {}
            for n in names:
                entries = found[ConfigResource(ResourceType.CLIENT_METRICS, n)]
                if isinstance(entries, Exception):
                    raise CommandError(f"client metrics {n}: {entries}")
                doc[n] = {e.name: e.value for e in entries}
            if output_format is OutputFormat.json:
                print_json(doc)
                return
            for n, configs in doc.items():
                typer.echo(f"Client metrics configs for {n} are:")
                for k, v in sorted(configs.items()):
                    typer.echo(f"  {k}={v}")

    run(main)
