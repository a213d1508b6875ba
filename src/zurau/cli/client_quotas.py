"""``zurau client-quotas describe | alter``: client quotas, as ``kafka-configs.sh`` manages them.

Entities are named as kafka-configs.sh names them: ``--entity-type users|clients|ips`` followed
by ``--entity-name NAME`` (``<default>`` for the default entity), repeatable in pairs for a
``user`` + ``client-id`` entity::

    zurau client-quotas alter --entity-type users --entity-name alice \\
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    zurau client-quotas alter --entity-type users --entity-name alice \\
        --entity-type clients --entity-name app --delete-config producer_byte_rate
    zurau client-quotas describe --entity-type users

* ``describe``: with names, exactly those entities; a type without a name: every entity of that
  type (named or default); nothing: every entity with a quota. Only entities of exactly the
  given types are listed (kafka-configs.sh's rule), unless none is given.
* ``alter``: ``--add-config k=v,...`` sets quotas, ``--delete-config k,...`` removes them, in one
  request; ``--validate-only`` checks without changing anything.

Keys: ``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
``controller_mutation_rate`` (users, clients) and ``connection_creation_rate`` (ips). Everything
goes through :class:`zurau.client.quota_admin.QuotaAdmin`; ``--command-config`` carries the
client's security settings. A refused change prints the broker's reason and exits 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, run
from zurau.cli.output import FormatOption, JsonOption, OutputFormat, print_json, print_table, resolve_format

app = typer.Typer(help="Describe and alter client quotas (users, client ids, IPs).", no_args_is_help=True)

DEFAULT = "<default>"
_TYPES = {"users": "user", "user": "user", "clients": "client-id", "client-id": "client-id",
          "client": "client-id", "ips": "ip", "ip": "ip"}
_PLURAL = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}

EntityTypeOption = typer.Option([], "--entity-type", help="users, clients or ips (repeatable).")
EntityNameOption = typer.Option([], "--entity-name", help=f"Name of the entity ({DEFAULT}: the default), in order.")


def parse_entity(types: list[str], names: list[str], *, need_names: bool) -> dict[str, str | None]:
    """``{entity type: name}`` from the ``--entity-type``/``--entity-name`` pairs (a type without
    a name is returned with the name ``"*"`` when names are optional)."""
    if not types:
        if names:
            raise CommandError("--entity-name needs an --entity-type")
        if need_names:
            raise CommandError("name an entity with --entity-type and --entity-name")
        return {}
    if len(names) > len(types) or (need_names and len(names) != len(types)):
        raise CommandError("give one --entity-name for each --entity-type, in order")
    out: dict[str, str | None] = {}
    for i, t in enumerate(types):
        etype = _TYPES.get(t.strip().lower())
        if etype is None:
            raise CommandError(f"unknown entity type {t!r} (users, clients or ips)")
        if etype in out:
            raise CommandError(f"entity type {t} given twice")
        name = names[i] if i < len(names) else "*"
        out[etype] = None if name == DEFAULT else name
    return out


def parse_add_config(value: str) -> dict[str, float]:
    """``k=v,k2=v2`` -> ``{k: v}`` with numeric values."""
    out: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in value.split(","))):
        key, sep, v = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--add-config takes key=value pairs, not {item!r}")
        try:
            out[key.strip()] = float(v)
        except ValueError:
            raise CommandError(f"quota {key.strip()} must be a number, not {v!r}") from None
    return out


def entity_text(entity: dict[str, str | None]) -> str:
    return ", ".join(f"{_PLURAL.get(t, t)} '{DEFAULT if n is None else n}'" for t, n in sorted(entity.items()))


def _value(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


@app.command("describe")
def describe(
    entity_type: list[str] = EntityTypeOption,
    entity_name: list[str] = EntityNameOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
    output_format: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
) -> None:
    """The quotas of the matching entities."""
    output_format = resolve_format(output_format, as_json)
    from zurau.client.quota_admin import ANY, QuotaAdmin

    wanted = parse_entity(entity_type, entity_name, need_names=False)
    components: dict[str, Any] = {t: ANY if n == "*" else n for t, n in wanted.items()}
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        async with QuotaAdmin(cfg) as admin:
            try:
                found = await admin.describe(components, strict=bool(components))
            except Exception as e:
                raise CommandError(str(e)) from None
        if output_format is OutputFormat.json:
            print_json([{"entity": entity, "quotas": {k: _value(v) for k, v in values.items()}}
                        for entity, values in found])
            return
        print_table(
            ["ENTITY", "QUOTAS"],
            [[entity_text(entity), ",".join(f"{k}={_value(v)}" for k, v in sorted(values.items()))]
             for entity, values in found],
        )

    run(main)


@app.command("alter")
def alter(
    entity_type: list[str] = EntityTypeOption,
    entity_name: list[str] = EntityNameOption,
    add_config: str = typer.Option("", "--add-config", help="Quotas to set: key=value,..."),
    delete_config: str = typer.Option("", "--delete-config", help="Quotas to remove: key,..."),
    validate_only: bool = typer.Option(False, "--validate-only", help="Check the change, change nothing."),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Set and remove quotas of one entity."""
    from zurau.client.quota_admin import QuotaAdmin, QuotaAlteration

    entity = parse_entity(entity_type, entity_name, need_names=True)
    ops: dict[str, float | None] = dict(parse_add_config(add_config))
    for key in filter(None, (s.strip() for s in delete_config.split(","))):
        if key in ops:
            raise CommandError(f"quota {key} is both added and deleted")
        ops[key] = None
    if not ops:
        raise CommandError("nothing to change: give --add-config and/or --delete-config")
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        async with QuotaAdmin(cfg) as admin:
            results = await admin.alter([QuotaAlteration(entity, ops)], validate_only=validate_only)
        for found, error in results:
            if error is not None:
                raise CommandError(f"{entity_text(found)}: {error}")
        verb = "Validated" if validate_only else "Completed updating"
        typer.echo(f"{verb} quota configs for {entity_text(entity)}.")

    run(main)
