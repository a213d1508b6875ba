"""``zurau user-scram describe | alter | delete``: users' SCRAM credentials.

What ``kafka-configs.sh --entity-type users`` does for SCRAM, through :mod:`zurau.client.scram_admin`:

* ``describe [--user U ...]``: each user's mechanisms and iterations (all users when none named);
* ``alter --user U --mechanism SCRAM-SHA-256 --password P [--iterations 4096]``: set a credential
  (the password is salted and hashed on this side; only the salted form is sent);
* ``delete --user U --mechanism SCRAM-SHA-256``.

``--command-config`` takes the client's security settings (``security.protocol``, ``sasl.*``,
``ssl.*``), so it works against a secured listener. A refused change prints the broker's reason
and exits 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, run
from zurau.cli.output import FormatOption, JsonOption, OutputFormat, print_json, print_table, resolve_format

if TYPE_CHECKING:
    from zurau.client.config import ClientConfig

app = typer.Typer(help="Describe, set and delete users' SCRAM credentials.", no_args_is_help=True)


@app.command("describe")
def describe(
    user: list[str] = typer.Option([], "--user", help="User to describe (repeatable); all users when omitted."),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
    output_format: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
) -> None:
    """Each user's SCRAM mechanisms and iterations."""
    output_format = resolve_format(output_format, as_json)
    from zurau.client.scram_admin import ScramAdmin

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        async with ScramAdmin(cfg) as admin:
            found = await admin.describe(user or None)
        rows = []
        for name, result in found.items():
            if isinstance(result, Exception):
                raise CommandError(f"user {name}: {result}")
            for mech, iterations in sorted(result.items()):
                rows.append({"user": name, "mechanism": mech.mechanism_name, "iterations": iterations})
        if output_format is OutputFormat.json:
            print_json(rows)
        else:
            print_table(["USER", "MECHANISM", "ITERATIONS"], [[r["user"], r["mechanism"], r["iterations"]] for r in rows])

    run(main)


@app.command("alter")
def alter(
    user: str = typer.Option(..., "--user", help="User name."),
    mechanism: str = typer.Option("SCRAM-SHA-256", "--mechanism", help="SCRAM-SHA-256 or SCRAM-SHA-512."),
    password: str = typer.Option(..., "--password", help="The user's new password."),
    iterations: int = typer.Option(4096, "--iterations", help="PBKDF2 iterations (4096..16384)."),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Set a user's SCRAM credential for one mechanism."""
    from zurau.client.scram_admin import ScramAdmin, ScramUpsertion
    from zurau.client.scram_admin import mechanism as parse_mechanism

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        async with ScramAdmin(cfg) as admin:
            results = await admin.alter([ScramUpsertion(user, parse_mechanism(mechanism), password, iterations)])
        _report(results, f"set {mechanism} credential of user {user}")

    run(main)


@app.command("delete")
def delete(
    user: str = typer.Option(..., "--user", help="User name."),
    mechanism: str = typer.Option("SCRAM-SHA-256", "--mechanism", help="SCRAM-SHA-256 or SCRAM-SHA-512."),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Delete a user's SCRAM credential for one mechanism."""
    from zurau.client.scram_admin import ScramAdmin, ScramDeletion
    from zurau.client.scram_admin import mechanism as parse_mechanism

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        async with ScramAdmin(cfg) as admin:
            results = await admin.alter(deletions=[ScramDeletion(user, parse_mechanism(mechanism))])
        _report(results, f"deleted {mechanism} credential of user {user}")

    run(main)


def _report(results: Mapping[str, Exception | None], done: str) -> None:
    for name, error in results.items():
        if error is not None:
            raise CommandError(f"user {name}: {error}")
    if done:
        typer.echo(done)


# ------------------------------------------------------------------- kafka-configs.sh --entity-type users
def parse_scram_config(mechanism: str, value: str) -> tuple[str, int]:
    """``iterations=8192,password=secret`` (the inside of ``SCRAM-SHA-256=[...]``): (password, iterations)."""
    fields: dict[str, str] = {}
    for item in value.split(","):
        key, sep, v = item.partition("=")
        if not sep or key.strip() not in ("iterations", "password"):
            raise CommandError(f"{mechanism}=[...] takes iterations=N and password=P, not {item.strip()!r}")
        fields[key.strip()] = v
    if "password" not in fields:
        raise CommandError(f"{mechanism}=[...] needs password=P")
    try:
        iterations = int(fields.get("iterations", "4096"))
    except ValueError:
        raise CommandError(f"{mechanism}: iterations must be an integer") from None
    return fields["password"], iterations


def alter_users(cfg: ClientConfig, user: str, sets: Mapping[str, str], deletes: list[str]) -> str:
    """``configs alter --entity-type users``: SCRAM credentials set (``SCRAM-SHA-256=[password=..]``)
    and deleted (``--delete-config SCRAM-SHA-512``) in one request, as kafka-configs.sh does."""
    from zurau.client.scram_admin import ScramAdmin, ScramDeletion, ScramUpsertion, mechanism

    async def main() -> None:
        try:
            ups = [ScramUpsertion(user, mechanism(m), *parse_scram_config(m, v)) for m, v in sets.items()]
            dels = [ScramDeletion(user, mechanism(m)) for m in deletes]
        except ValueError as e:
            raise CommandError(f"{e} (users take SCRAM credentials only)") from None
        async with ScramAdmin(cfg) as admin:
            _report(await admin.alter(ups, dels), "")

    run(main)
    return f"Completed updating config for user {user}."


def describe_users(cfg: ClientConfig, user: str | None) -> list[str]:
    """``configs describe --entity-type users``: kafka-configs.sh's lines for SCRAM credentials."""
    from zurau.client.scram_admin import ScramAdmin

    async def main() -> list[str]:
        async with ScramAdmin(cfg) as admin:
            found = await admin.describe(None if user is None else [user])
        lines = []
        for name, result in found.items():
            if isinstance(result, Exception):
                raise CommandError(f"user {name}: {result}")
            creds = ",".join(f"{m.mechanism_name}=iterations={i}" for m, i in sorted(result.items()))
            lines.append(f"SCRAM credential configs for user-principal '{name}' are {creds}")
        return lines

    return run(main)
