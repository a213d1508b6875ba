"""``zurau delegation-tokens --create | --renew | --expire | --describe``: delegation tokens
(KIP-48), as ``kafka-delegation-tokens.sh`` manages them, through
:class:`zurau.client.delegation_token_admin.DelegationTokenAdmin`.

* ``--create [--renewer-principal User:b ...] [--owner-principal User:o] [--max-life-time-period MS]``
  (-1: the broker's ``delegation.token.max.lifetime.ms``; another owner needs CreateTokens on it);
* ``--renew --hmac H [--renew-time-period MS]`` (-1: ``delegation.token.expiry.time.ms``);
* ``--expire --hmac H [--expiry-time-period MS]`` (-1: now, the token is removed);
* ``--describe [--owner-principal User:o ...]`` (none: every token the caller may see).

Output as the Kafka tool prints it (dates ``yyyy-MM-ddTHH:mm`` in local time); ``--format json``
prints the tokens (or the new expiry) as JSON instead. The connection must be SASL or TLS with a
client certificate (``--command-config`` holds ``security.protocol``, ``sasl.*``, ``ssl.*``); a
refused request prints the Kafka error and exits 1.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, fail, run
from zurau.cli.output import FormatOption, JsonOption, OutputFormat, print_json, resolve_format

if TYPE_CHECKING:
    from zurau.client.delegation_token_admin import DelegationToken


def _date(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%dT%H:%M")


def _row(*cells: str) -> str:
    widths = (15, 30, 15, 15, 25, 15, 15, 15)
    return " ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)).rstrip()


def _print_tokens(tokens: list[DelegationToken]) -> None:
    typer.echo("")
    typer.echo(
        _row("TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE")
    )
    for t in tokens:
        typer.echo("")
        typer.echo(
            _row(
                t.token_id,
                t.hmac_base64,
                t.owner,
                t.requester,
                "[" + ", ".join(t.renewers) + "]",
                _date(t.issue_timestamp_ms),
                _date(t.expiry_timestamp_ms),
                _date(t.max_timestamp_ms),
            )
        )


def _as_json(t: DelegationToken) -> dict[str, object]:
    return {
        "token_id": t.token_id,
        "hmac": t.hmac_base64,
        "owner": t.owner,
        "requester": t.requester,
        "renewers": list(t.renewers),
        "issue_timestamp_ms": t.issue_timestamp_ms,
        "expiry_timestamp_ms": t.expiry_timestamp_ms,
        "max_timestamp_ms": t.max_timestamp_ms,
    }


def delegation_tokens(
    create: bool = typer.Option(False, "--create", help="Create a new delegation token."),
    renew: bool = typer.Option(False, "--renew", help="Renew the token named by --hmac."),
    expire: bool = typer.Option(False, "--expire", help="Expire the token named by --hmac."),
    describe: bool = typer.Option(
        False, "--describe", help="Describe tokens (of --owner-principal, else all)."
    ),
    renewer_principal: list[str] = typer.Option(
        [], "--renewer-principal", help="Renewer, Type:name (repeatable)."
    ),
    owner_principal: list[str] = typer.Option(
        [],
        "--owner-principal",
        help="--create: the token's owner; --describe: owners/renewers to list (repeatable).",
    ),
    max_life_time_period: int = typer.Option(
        -1, "--max-life-time-period", help="Max life of the token in ms (-1: the broker's maximum)."
    ),
    renew_time_period: int = typer.Option(
        -1, "--renew-time-period", help="Renew period in ms (-1: the broker's)."
    ),
    expiry_time_period: int = typer.Option(
        -1, "--expiry-time-period", help="Expire after this many ms (-1: now)."
    ),
    hmac: str | None = typer.Option(
        None, "--hmac", help="The token's HMAC (base64), for --renew and --expire."
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
    output_format: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
) -> None:
    """Create, renew, expire or describe delegation tokens (kafka-delegation-tokens.sh)."""
    from zurau.client.delegation_token_admin import DelegationTokenAdmin

    try:
        if create + renew + expire + describe != 1:
            raise CommandError("give exactly one of --create, --renew, --expire, --describe")
        if (renew or expire) and not hmac:
            raise CommandError("--renew and --expire need --hmac")
        if create and len(owner_principal) > 1:
            raise CommandError("--create takes at most one --owner-principal")
        for p in [*renewer_principal, *owner_principal]:
            if ":" not in p:
                raise CommandError(f"principal {p!r} is not in principalType:name format")
        json_out = resolve_format(output_format, as_json) is OutputFormat.json
        cfg = client_config(bootstrap_server, command_config)
    except CommandError as e:
        fail(str(e))
        return

    async def main() -> None:
        async with DelegationTokenAdmin(cfg) as admin:
            if create:
                if not json_out:
                    typer.echo(
                        f"Calling create token operation with renewers :[{', '.join(renewer_principal)}] , "
                        f"max-life-time-period :{max_life_time_period}"
                    )
                token = await admin.create(
                    renewers=renewer_principal,
                    max_lifetime_ms=max_life_time_period,
                    owner=owner_principal[0] if owner_principal else None,
                )
                if json_out:
                    print_json(_as_json(token))
                    return
                typer.echo(f"Created delegation token with tokenId : {token.token_id}")
                _print_tokens([token])
            elif renew or expire:
                assert hmac is not None
                what = "renew" if renew else "expire"
                period = renew_time_period if renew else expiry_time_period
                if not json_out:
                    typer.echo(
                        f"Calling {what} token operation with hmac :{hmac} , {what}-time-period :{period}"
                    )
                expiry = await (admin.renew(hmac, period) if renew else admin.expire(hmac, period))
                if json_out:
                    print_json({"expiry_timestamp_ms": expiry})
                else:
                    typer.echo(f"Completed {what} operation. New expiry date : {_date(expiry)}")
            else:
                if not json_out:
                    typer.echo(
                        f"Calling describe token operation for owners: [{', '.join(owner_principal)}]"
                        if owner_principal
                        else "Calling describe token operation for current user."
                    )
                tokens = await admin.describe(owner_principal or None)
                if json_out:
                    print_json([_as_json(t) for t in tokens])
                    return
                typer.echo(f"Total number of tokens : {len(tokens)}")
                _print_tokens(tokens)

    run(main)
