"""``zurau acls --add | --remove | --list``: ACL bindings, as ``kafka-acls.sh`` manages them.

Resources: ``--topic T``, ``--group G``, ``--transactional-id X``, ``--delegation-token <id>``,
``--user-principal User:u`` (each repeatable) and ``--cluster``; ``--resource-pattern-type`` LITERAL (default) or PREFIXED (``--list`` and
``--remove`` also take ANY and MATCH). Principals: ``--allow-principal User:x`` /
``--deny-principal User:x`` (repeatable), with ``--allow-host`` / ``--deny-host`` (``*`` by default)
and ``--operation`` (repeatable; ALL by default).

Conveniences (``--add`` and ``--remove``), as kafka-acls.sh expands them:

* ``--producer``: WRITE, DESCRIBE and CREATE on the topics; WRITE and DESCRIBE on the
  transactional ids; ``--idempotent`` adds IDEMPOTENT_WRITE on the cluster;
* ``--consumer``: READ and DESCRIBE on the topics, READ on the groups (a group is required).

``--remove`` without a principal removes every ACL of the named resources; ``--list`` lists the
ACLs of the named resources (all ACLs when none is named), optionally of one ``--principal``.
Everything goes through :class:`zurau.client.acl_admin.AclAdmin`; ``--command-config`` carries the
client's security settings. A refused change prints the broker's reason and exits 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, fail, run
from zurau.protocol.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

if TYPE_CHECKING:
    from zurau.client.acl_admin import AclAdmin

Resource = tuple[ResourceType, str]
Entry = tuple[str, str, AclOperation, AclPermissionType]  # principal, host, operation, permission


def _enum(cls: type[AclOperation] | type[PatternType], value: str, what: str) -> AclOperation | PatternType:
    key = value.strip().upper().replace("-", "_")
    aliases = {"IDEMPOTENTWRITE": "IDEMPOTENT_WRITE", "CLUSTERACTION": "CLUSTER_ACTION",
               "DESCRIBECONFIGS": "DESCRIBE_CONFIGS", "ALTERCONFIGS": "ALTER_CONFIGS",
               "CREATETOKENS": "CREATE_TOKENS", "DESCRIBETOKENS": "DESCRIBE_TOKENS"}
    key = aliases.get(key, key)
    try:
        found = cls[key]
    except KeyError:
        valid = ", ".join(m.name for m in cls if m.name not in ("UNKNOWN", "ANY"))
        raise CommandError(f"unknown {what} {value!r} (one of {valid})") from None
    return found


def _resources(
    topics: list[str],
    groups: list[str],
    txn_ids: list[str],
    cluster: bool,
    tokens: Sequence[str] = (),
    users: Sequence[str] = (),
) -> list[Resource]:
    out: list[Resource] = [(ResourceType.TOPIC, t) for t in topics]
    out += [(ResourceType.GROUP, g) for g in groups]
    out += [(ResourceType.TRANSACTIONAL_ID, x) for x in txn_ids]
    if cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    out += [(ResourceType.DELEGATION_TOKEN, t) for t in tokens]
    out += [(ResourceType.USER, u) for u in users]
    return out


def _principal(p: str) -> str:
    if ":" not in p:
        raise CommandError(f"principal {p!r} must be Type:name, e.g. User:alice")
    return p


def _entries(allow: list[str], deny: list[str], allow_hosts: list[str], deny_hosts: list[str],
             ops: list[AclOperation]) -> list[Entry]:
    out: list[Entry] = []
    for p, h, op in product(allow, allow_hosts or ["*"], ops):
        out.append((_principal(p), h, op, AclPermissionType.ALLOW))
    for p, h, op in product(deny, deny_hosts or ["*"], ops):
        out.append((_principal(p), h, op, AclPermissionType.DENY))
    return out


def _conveniences(
    producer: bool, consumer: bool, idempotent: bool, topics: list[str], groups: list[str], txn_ids: list[str]
) -> list[tuple[Resource, list[AclOperation]]]:
    """(resource, operations) pairs of ``--producer`` / ``--consumer``."""
    out: list[tuple[Resource, list[AclOperation]]] = []
    if producer:
        if not topics and not txn_ids:
            raise CommandError("--producer needs --topic (or --transactional-id)")
        out += [((ResourceType.TOPIC, t), [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]) for t in topics]
        out += [((ResourceType.TRANSACTIONAL_ID, x), [AclOperation.WRITE, AclOperation.DESCRIBE]) for x in txn_ids]
        if idempotent:
            out.append(((ResourceType.CLUSTER, CLUSTER_NAME), [AclOperation.IDEMPOTENT_WRITE]))
    if consumer:
        if not topics or not groups:
            raise CommandError("--consumer needs --topic and --group")
        out += [((ResourceType.TOPIC, t), [AclOperation.READ, AclOperation.DESCRIBE]) for t in topics]
        out += [((ResourceType.GROUP, g), [AclOperation.READ]) for g in groups]
    return out


def format_binding_group(resource: tuple[ResourceType, str, PatternType], bindings: list[AclBinding]) -> list[str]:
    """kafka-acls.sh's listing of one resource pattern and its entries."""
    rtype, name, pattern = resource
    lines = [f"Current ACLs for resource `ResourcePattern(resourceType={rtype.name}, name={name}, "
             f"patternType={pattern.name})`: "]
    for b in bindings:
        lines.append(f" \t(principal={b.principal}, host={b.host}, operation={b.operation.name}, "
                     f"permissionType={b.permission.name})")
    return lines


def _print(bindings: list[AclBinding]) -> None:
    groups: dict[tuple[ResourceType, str, PatternType], list[AclBinding]] = {}
    for b in bindings:
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    for key, entries in groups.items():
        typer.echo("\n".join(format_binding_group(key, entries)))
        typer.echo("")


def acls(
    add: bool = typer.Option(False, "--add", help="Add ACLs."),
    remove: bool = typer.Option(False, "--remove", help="Remove ACLs."),
    list_: bool = typer.Option(False, "--list", help="List ACLs."),
    topic: list[str] = typer.Option([], "--topic", help="Topic resource (repeatable)."),
    group: list[str] = typer.Option([], "--group", help="Consumer group resource (repeatable)."),
    transactional_id: list[str] = typer.Option([], "--transactional-id", help="Transactional id resource (repeatable)."),
    cluster: bool = typer.Option(False, "--cluster", help="The cluster resource."),
    delegation_token: list[str] = typer.Option(
        [], "--delegation-token", help="Delegation token resource, by token id (repeatable)."
    ),
    user_principal: list[str] = typer.Option(
        [], "--user-principal", help="User resource, User:name (CreateTokens, DescribeTokens; repeatable)."
    ),
    pattern_type: str = typer.Option("LITERAL", "--resource-pattern-type",
                                     help="LITERAL or PREFIXED (--list/--remove: also ANY, MATCH)."),
    allow_principal: list[str] = typer.Option([], "--allow-principal", help="Principal to allow (User:name)."),
    deny_principal: list[str] = typer.Option([], "--deny-principal", help="Principal to deny (User:name)."),
    allow_host: list[str] = typer.Option([], "--allow-host", help="Host the allow applies to (default *)."),
    deny_host: list[str] = typer.Option([], "--deny-host", help="Host the deny applies to (default *)."),
    operation: list[str] = typer.Option([], "--operation", help="Operation (repeatable; default All)."),
    producer: bool = typer.Option(False, "--producer", help="The ACLs a producer needs."),
    consumer: bool = typer.Option(False, "--consumer", help="The ACLs a consumer needs."),
    idempotent: bool = typer.Option(False, "--idempotent", help="With --producer: IDEMPOTENT_WRITE on the cluster."),
    principal: str | None = typer.Option(None, "--principal", help="With --list: only this principal's ACLs."),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Add, remove or list ACLs (kafka-acls.sh)."""
    from zurau.client.acl_admin import AclAdmin

    try:
        if add + remove + list_ != 1:
            raise CommandError("give exactly one of --add, --remove, --list")
        pattern = _enum(PatternType, pattern_type, "resource pattern type")
        assert isinstance(pattern, PatternType)
        if (add or producer or consumer) and pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise CommandError("--add takes --resource-pattern-type LITERAL or PREFIXED")
        ops = [op for op in (_enum(AclOperation, o, "operation") for o in operation) if isinstance(op, AclOperation)]
        resources = _resources(topic, group, transactional_id, cluster, delegation_token, user_principal)
        cfg = client_config(bootstrap_server, command_config)

        if list_:
            flt_principal = _principal(principal) if principal else None
            filters = [AclBindingFilter(t, n, pattern, flt_principal) for t, n in resources] or [
                AclBindingFilter(pattern_type=pattern if pattern_type.upper() != "LITERAL" else PatternType.ANY,
                                 principal=flt_principal)
            ]

            async def list_main() -> None:
                async with AclAdmin(cfg) as admin:
                    found: list[AclBinding] = []
                    for f in filters:
                        found += await admin.describe(f)
                _print(found)

            run(list_main)
            return

        entries_ops = _conveniences(producer, consumer, idempotent, topic, group, transactional_id) if (producer or consumer) else [
            (r, ops or [AclOperation.ALL]) for r in resources
        ]
        if not entries_ops:
            raise CommandError(
                "name at least one resource (--topic, --group, --transactional-id, --cluster, "
                "--delegation-token, --user-principal)"
            )
        principals = bool(allow_principal or deny_principal)
        if add and not principals:
            raise CommandError("--add needs --allow-principal or --deny-principal")

        if add:
            bindings = [
                AclBinding(rt, name, pattern, p, h, op, perm)
                for (rt, name), res_ops in entries_ops
                for p, h, op, perm in _entries(allow_principal, deny_principal, allow_host, deny_host, res_ops)
            ]

            async def add_main() -> None:
                async with AclAdmin(cfg) as admin:
                    errors = await admin.create(bindings)
                    _fail_on(errors)
                    await _show(admin, {(b.resource_type, b.resource_name) for b in bindings}, pattern)

            typer.echo(f"Adding ACLs for {len(bindings)} binding(s)")
            run(add_main)
            return

        if principals:
            filters = [
                AclBindingFilter(rt, name, pattern, p, h, op, perm)
                for (rt, name), res_ops in entries_ops
                for p, h, op, perm in _entries(allow_principal, deny_principal, allow_host, deny_host, res_ops)
            ]
        else:
            filters = [AclBindingFilter(rt, name, pattern) for (rt, name), _ in entries_ops]

        async def remove_main() -> None:
            async with AclAdmin(cfg) as admin:
                results = await admin.delete(filters)
            removed = []
            for r in results:
                if isinstance(r, Exception):
                    raise CommandError(str(r))
                removed += r
            typer.echo(f"Removed {len(removed)} ACL binding(s)")
            _print(removed)

        run(remove_main)

    except CommandError as e:  # a usage error: one line, exit 1
        fail(str(e))

def _fail_on(errors: Sequence[Exception | None]) -> None:
    for e in errors:
        if e is not None:
            raise CommandError(str(e))


async def _show(admin: AclAdmin, resources: set[tuple[ResourceType, str]], pattern: PatternType) -> None:
    found: list[AclBinding] = []
    for rt, name in sorted(resources):
        found += await admin.describe(AclBindingFilter(rt, name, pattern))
    _print(found)
