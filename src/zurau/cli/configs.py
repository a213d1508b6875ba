"""``zurau configs describe | alter``: kafka-configs.sh for topics, brokers, broker loggers and
groups.

Entities are named as in kafka-configs.sh: ``--entity-type topics|brokers|broker-loggers|groups`` with
``--entity-name NAME`` (or ``--entity-default`` for the cluster-wide broker defaults), or the
shortcuts ``--topic NAME`` and ``--broker ID``. ``describe`` lists the dynamic (overridden)
configs, or every config with its source with ``--all``, in Kafka's layout::

    Dynamic configs for topic t are:
      retention.ms=1000 sensitive=false source=DYNAMIC_TOPIC_CONFIG

Groups (``--entity-type groups --entity-name G``) have Kafka's group configs
(``share.auto.offset.reset``, ``consumer.session.timeout.ms`` ...); their overrides show with
source ``DYNAMIC_GROUP_CONFIG`` (Kafka's Admin API name), and without ``--entity-name`` every
group of the cluster is described.

``alter`` takes ``--add-config k1=v1,k2=[a,b]`` (Kafka's syntax, repeatable) and
``--delete-config k1,k2`` and applies them with IncrementalAlterConfigs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import (
    BootstrapOption,
    CommandConfigOption,
    CommandError,
    client_config,
    config_pairs,
    run,
    split_config_list,
)
from zurau.cli.output import FormatOption, JsonOption, OutputFormat, print_json, resolve_format
from zurau.cli.user_scram import alter_users, describe_users

app = typer.Typer(help="Describe and alter topic, broker and group configs.", no_args_is_help=True)

ENTITY_TYPES = {
    "topics": "topic",
    "brokers": "broker",
    "broker-loggers": "broker-logger",
    "groups": "group",
    "users": "user",
}
ENTITY_HELP = "topics, brokers, broker-loggers, groups or users"


def _entity(
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    topic: str | None,
    broker: str | None,
) -> tuple[str, str | None]:
    """(kind, name): kind is topics/brokers/broker-loggers; name None means every entity."""
    if topic is not None:
        entity_type, entity_name = "topics", topic
    elif broker is not None:
        entity_type, entity_name = "brokers", broker
    if entity_type is None:
        raise typer.BadParameter(f"give --entity-type ({ENTITY_HELP}), --topic or --broker")
    kind = entity_type.strip().lower()
    if kind in ("topic", "broker", "broker-logger", "group", "user"):
        kind += "s"
    if kind not in ENTITY_TYPES:
        raise typer.BadParameter(f"--entity-type must be {ENTITY_HELP}, not {entity_type!r}")
    if entity_default:
        if kind != "brokers":
            raise typer.BadParameter("--entity-default applies to brokers only")
        entity_name = ""
    return kind, entity_name


def _resource_type(kind: str) -> Any:
    from zurau.client.admin import ResourceType

    return {
        "topics": ResourceType.TOPIC,
        "brokers": ResourceType.BROKER,
        "broker-loggers": ResourceType.BROKER_LOGGER,
        "groups": ResourceType.GROUP,
    }[kind]


def _source_name(source: Any) -> str:
    """The source as kafka-configs.sh names it (the Admin API's ``DYNAMIC_GROUP_CONFIG``)."""
    return "DYNAMIC_GROUP_CONFIG" if source.name == "GROUP_CONFIG" else str(source.name)


@app.command("describe")
def describe(
    entity_type: str | None = typer.Option(None, "--entity-type", help=ENTITY_HELP),
    entity_name: str | None = typer.Option(
        None, "--entity-name", help="Topic name, broker id or group id (all when omitted)"
    ),
    entity_default: bool = typer.Option(False, "--entity-default", help="The cluster-wide broker defaults"),
    topic: str | None = typer.Option(None, "--topic", help="Shortcut for --entity-type topics --entity-name"),
    broker: str | None = typer.Option(
        None, "--broker", help="Shortcut for --entity-type brokers --entity-name"
    ),
    show_all: bool = typer.Option(False, "--all", help="List every config, not only the overridden ones"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Show the configs of topics, brokers, broker loggers or groups."""
    from zurau.client.admin import AdminClient, ConfigResource, ConfigSource
    from zurau.client.groups_admin import GroupAdmin

    kind, name = _entity(entity_type, entity_name, entity_default, topic, broker)
    cfg = client_config(bootstrap_server, command_config)
    if kind == "users":  # SCRAM credentials (zurau.cli.user_scram)
        for line in describe_users(cfg, name):
            typer.echo(line)
        return
    rtype = _resource_type(kind)

    async def main() -> list[tuple[str, list[Any]]]:
        async with AdminClient(cfg) as admin:
            if name is not None:
                names = [name]
            elif kind == "topics":
                names = await admin.list_topics(include_internal=True)
            elif kind == "groups":
                names = [g.group_id for g in await GroupAdmin(admin).list_groups()]
            else:
                names = [str(n) for n in sorted(admin.cluster.metadata.brokers)]
            resources = [ConfigResource(rtype, n) for n in names]
            found = await admin.describe_configs(resources) if resources else {}
        out = []
        for r in resources:
            entries = found[r]
            if isinstance(entries, BaseException):
                raise entries
            dynamic = (
                ConfigSource.DYNAMIC_TOPIC_CONFIG,
                ConfigSource.DYNAMIC_BROKER_CONFIG,
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                ConfigSource.GROUP_CONFIG,
            )
            shown = [e for e in entries if show_all or e.source in dynamic]
            out.append((r.name, sorted(shown, key=lambda e: e.name)))
        return out

    described = run(main)
    if resolve_format(fmt, as_json) == OutputFormat.json:
        doc = [
            {
                "entity_type": kind,
                "entity_name": n,
                "configs": [
                    {
                        "name": e.name,
                        "value": e.value,
                        "source": _source_name(e.source),
                        "sensitive": e.is_sensitive,
                        "read_only": e.read_only,
                    }  # fmt: skip
                    for e in entries
                ],
            }
            for n, entries in described
        ]
        print_json(doc)
        return
    label = ENTITY_TYPES[kind]
    for n, entries in described:
        who = f"the default {label}" if n == "" else f"{label} {n}"
        typer.echo(f"{'All' if show_all else 'Dynamic'} configs for {who} are:")
        for e in entries:
            value = "null" if e.value is None else e.value
            typer.echo(
                f"  {e.name}={value} sensitive={str(e.is_sensitive).lower()} source={_source_name(e.source)}"
            )


@app.command("alter")
def alter(
    entity_type: str | None = typer.Option(None, "--entity-type", help=ENTITY_HELP),
    entity_name: str | None = typer.Option(None, "--entity-name", help="Topic name, broker id or group id"),
    entity_default: bool = typer.Option(False, "--entity-default", help="The cluster-wide broker defaults"),
    topic: str | None = typer.Option(None, "--topic", help="Shortcut for --entity-type topics --entity-name"),
    broker: str | None = typer.Option(
        None, "--broker", help="Shortcut for --entity-type brokers --entity-name"
    ),
    add_config: list[str] = typer.Option([], "--add-config", help="k1=v1,k2=[a,b] (repeatable)"),
    delete_config: list[str] = typer.Option([], "--delete-config", help="k1,k2 (repeatable)"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Set or remove dynamic configs of a topic, a broker, broker loggers or a group."""
    from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource

    kind, name = _entity(entity_type, entity_name, entity_default, topic, broker)
    if name is None:
        raise typer.BadParameter("alter needs --entity-name (or --topic, --broker, --entity-default)")
    if not add_config and not delete_config:
        raise typer.BadParameter("nothing to alter: give --add-config or --delete-config")
    cfg = client_config(bootstrap_server, command_config)
    if kind == "users":  # SCRAM credentials: SCRAM-SHA-256=[iterations=8192,password=...]
        deleted = [k for item in delete_config for k in split_config_list(item)]
        typer.echo(alter_users(cfg, name, config_pairs(add_config), deleted))
        return

    async def main() -> str:
        sets = config_pairs(add_config)
        deletes = [k for item in delete_config for k in split_config_list(item)]
        both = sorted(set(sets) & set(deletes))
        if both:
            raise CommandError(f"{', '.join(both)} is both added and deleted")
        ops = [AlterConfigOp(k, AlterOp.SET, v) for k, v in sets.items()]
        ops += [AlterConfigOp(k, AlterOp.DELETE, None) for k in deletes]
        resource = ConfigResource(_resource_type(kind), name)
        async with AdminClient(cfg) as admin:
            err = (await admin.incremental_alter_configs({resource: ops}))[resource]
        if err is not None:
            raise err
        who = f"the default {ENTITY_TYPES[kind]}" if name == "" else f"{ENTITY_TYPES[kind]} {name}"
        return f"Completed updating config for {who}."

    typer.echo(run(main))
