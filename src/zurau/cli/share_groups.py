"""``zurau share-groups list | describe | reset-offsets | delete-offsets | delete``:
kafka-share-groups.sh (KIP-932 share groups), the Zurau way.

* ``list [--state S[,S]]``: the cluster's share groups (ListGroups with type ``share``) and states.
* ``describe GROUP... | --all-groups`` with one view: ``--offsets`` (the default: start offset and
  lag per share partition, DescribeShareGroupOffsets), ``--members`` (member id, host, client id,
  member epoch, assignment; ShareGroupDescribe) or ``--state`` (coordinator, state, epochs,
  member count).
* ``reset-offsets --group G (--topic T[:P,P] ... | --all-topics)`` with one of ``--to-earliest``,
  ``--to-latest``, ``--to-datetime``, ``--to-offset N`` (clamped to each partition's [earliest,
  latest]). The group must have no members (a group that does not exist yet is created, so its
  first consumers start where the plan says). ``--dry-run`` (the default) prints the plan;
  ``--execute`` applies it with AlterShareGroupOffsets. ``--all-topics`` means every partition
  the group has a start offset for.
* ``delete-offsets --group G --topic T ...``: DeleteShareGroupOffsets, whole topics (the group
  must have no members); a TOPIC / STATUS table.
* ``delete GROUP... | --group G ... | --all-groups``: DeleteGroups; the broker deletes the
  group's share-partition state with it. Non-empty or unknown groups make the exit status 1.

Tables (``--format table``, the default) are rich tables on a terminal and plain aligned columns
otherwise; ``--format json`` prints one JSON document. Notices go to stderr.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from zurau.cli.common import (
    BootstrapOption,
    CommandConfigOption,
    CommandError,
    client_config,
    names_of,
    run,
    split_values,
)
from zurau.cli.groups import (
    _assignment_text,
    _requested_groups,
    _tps_json,
    check_reset_options,
    parse_datetime_ms,
    parse_topic_spec,
)
from zurau.cli.output import (
    FormatOption,
    JsonOption,
    OutputFormat,
    notice,
    one_line,
    print_error,
    print_json,
    print_table,
    resolve_format,
)
from zurau.client.errors import describe_error

if TYPE_CHECKING:
    from zurau.client.share_groups_admin import ShareGroupDescription, SharePartitionOffset
    from zurau.client.types import TopicPartition

app = typer.Typer(
    help="List, describe and delete share groups (KIP-932), and reset or delete their offsets.",
    no_args_is_help=True,
)

GroupsArgument = typer.Argument(None, help="Share group id(s)", show_default=False)
GroupsOption = typer.Option([], "--group", "-g", help="Share group id (repeatable)", show_default=False)
STATES = ("Empty", "Stable", "Dead")


def _state_notice(d: ShareGroupDescription) -> None:
    if d.state == "Empty":
        notice(f"Share group '{d.group_id}' has no active members.")


# ---------------------------------------------------------------------------- list
@app.command("list")
def list_groups(
    state: list[str] = typer.Option(
        [],
        "--state",
        help="Only groups in these states, comma-separated or repeated (Empty, Stable)",
        show_default=False,
    ),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """List the cluster's share groups with their state."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.admin import AdminClient
    from zurau.client.groups_admin import GroupListing
    from zurau.client.share_groups_admin import ShareGroupAdmin

    states = []
    for s in split_values(state):
        known = {x.lower(): x for x in STATES}
        if s.lower() not in known:
            raise typer.BadParameter(f"Invalid state list '{s}'. Valid states are: {', '.join(STATES)}")
        states.append(known[s.lower()])
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> list[GroupListing]:
        async with AdminClient(cfg) as admin:
            return await ShareGroupAdmin(admin).list_share_groups(states)

    groups = run(main)
    if fmt == OutputFormat.json:
        print_json([{"group": g.group_id, "state": g.state} for g in groups])
    elif groups:
        print_table(("GROUP", "STATE"), [(g.group_id, g.state) for g in groups])


# ---------------------------------------------------------------------------- describe
def _offsets_json(offsets: dict[TopicPartition, SharePartitionOffset | Exception]) -> list[dict[str, Any]]:
    out = []
    for tp in sorted(offsets):
        o = offsets[tp]
        if isinstance(o, Exception):
            out.append({"topic": tp.topic, "partition": tp.partition, "error": describe_error(o)})
        else:
            out.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "start_offset": o.start_offset,
                    "leader_epoch": o.leader_epoch,
                    "lag": o.lag,
                }
            )
    return out


def _describe_json(d: ShareGroupDescription, offsets: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "group": d.group_id,
        "state": d.state,
        "assignor": d.assignor,
        "coordinator": {"id": d.coordinator.node_id, "host": d.coordinator.host, "port": d.coordinator.port},
        "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "member_epoch": m.member_epoch,
                "subscribed_topics": list(m.subscribed_topics),
                "assignment": _tps_json(m.assignment),
            }
            for m in d.members
        ],
    }
    if offsets is not None:
        doc["offsets"] = _offsets_json(offsets)
    return doc


@app.command("describe")
def describe(
    groups: list[str] = GroupsArgument,
    group_opt: list[str] = GroupsOption,
    all_groups: bool = typer.Option(False, "--all-groups", help="Describe every share group of the cluster"),
    members: bool = typer.Option(False, "--members", help="Members: id, host, client id, epoch, assignment"),
    offsets: bool = typer.Option(
        False, "--offsets", help="Start offset and lag per share partition (the default)"
    ),
    state: bool = typer.Option(False, "--state", help="Coordinator, state, epochs and member count"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Describe share groups: start offsets and lag (default), members, or state."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.admin import AdminClient
    from zurau.client.share_groups_admin import ShareGroupAdmin, ShareGroupDescription
    from zurau.protocol.errors import KafkaError

    names = _requested_groups(groups, group_opt, all_groups)
    if members + offsets + state > 1:
        raise typer.BadParameter("--members, --offsets and --state are exclusive")
    view = "members" if members else "state" if state else "offsets"
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> tuple[list[ShareGroupDescription], dict[str, Any], list[str]]:
        async with AdminClient(cfg) as admin:
            sa = ShareGroupAdmin(admin)
            ids = names or [g.group_id for g in await sa.list_share_groups()]
            found = await sa.describe_share_groups(ids)
            described: list[ShareGroupDescription] = []
            errors: list[str] = []
            for gid in ids:
                d = found[gid]
                if isinstance(d, ShareGroupDescription):
                    described.append(d)
                else:
                    errors.append(describe_error(d))
            by_group: dict[str, Any] = {}
            if view == "offsets":
                for d in described:
                    try:
                        by_group[d.group_id] = await sa.list_offsets(d.group_id)
                    except KafkaError as e:
                        errors.append(
                            f"cannot read the offsets of share group '{d.group_id}': {describe_error(e)}"
                        )
            return described, by_group, errors

    described, by_group, errors = run(main)
    if fmt == OutputFormat.json:
        print_json(
            [_describe_json(d, by_group.get(d.group_id) if view == "offsets" else None) for d in described]
        )
    else:
        _print_describe(view, described, by_group)
    for message in errors:
        print_error(one_line(message))
    if errors:
        raise typer.Exit(1)


def _print_describe(view: str, described: Sequence[ShareGroupDescription], by_group: dict[str, Any]) -> None:
    for d in described:
        _state_notice(d)
    if view == "state":
        print_table(
            ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
            [
                (
                    d.group_id,
                    f"{d.coordinator.host}:{d.coordinator.port} ({d.coordinator.node_id})",
                    d.state,
                    d.group_epoch,
                    d.assignment_epoch,
                    len(d.members),
                )
                for d in described
            ],
        )
    elif view == "members":
        rows = [
            (
                d.group_id,
                m.member_id,
                m.host,
                m.client_id,
                len(m.assignment),
                m.member_epoch,
                _assignment_text(m.assignment),
            )
            for d in described
            for m in sorted(d.members, key=lambda m: m.member_id)
        ]
        if rows:
            print_table(
                ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"),
                rows,
            )
    else:
        table = []
        for d in described:
            offsets = by_group.get(d.group_id, {})
            for tp in sorted(offsets):
                o = offsets[tp]
                if isinstance(o, Exception):
                    table.append((d.group_id, tp.topic, tp.partition, f"error: {describe_error(o)}", None))
                else:
                    table.append((d.group_id, tp.topic, tp.partition, o.start_offset, o.lag))
        if table:
            print_table(("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"), table)


# ---------------------------------------------------------------------------- reset-offsets
@app.command("reset-offsets")
def reset_offsets(
    group: str = typer.Option(
        ..., "--group", "-g", help="The share group whose offsets to reset", show_default=False
    ),
    topic: list[str] = typer.Option(
        [], "--topic", "-t", help="TOPIC or TOPIC:P,P (repeatable)", show_default=False
    ),
    all_topics: bool = typer.Option(
        False, "--all-topics", help="Every partition the group has a start offset for"
    ),
    to_earliest: bool = typer.Option(False, "--to-earliest", help="Reset to the earliest offset"),
    to_latest: bool = typer.Option(False, "--to-latest", help="Reset to the latest (log end) offset"),
    to_datetime: str | None = typer.Option(
        None,
        "--to-datetime",
        help="Reset to the first offset at or after this time (ISO 8601, e.g. 2026-11-21T10:00:00.000[+01:00])",
        show_default=False,
    ),
    to_offset: int | None = typer.Option(
        None, "--to-offset", help="Reset to this offset", show_default=False
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print the plan (the default)"),
    execute: bool = typer.Option(False, "--execute", help="Apply the new start offsets"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Reset a share group's start offsets (the group must have no members)."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.admin import EARLIEST, LATEST, AdminClient, OffsetInfo
    from zurau.client.share_groups_admin import ShareGroupAdmin, ShareGroupDescription
    from zurau.client.types import TopicPartition
    from zurau.protocol.errors import GroupIdNotFoundError, KafkaError, UnknownTopicOrPartitionError

    modes = {
        "--to-earliest": to_earliest,
        "--to-latest": to_latest,
        "--to-datetime": to_datetime is not None,
        "--to-offset": to_offset is not None,
    }
    check_reset_options(modes, topic, all_topics, dry_run, execute, to_offset)
    specs = [parse_topic_spec(t) for t in topic]
    timestamp = parse_datetime_ms(to_datetime) if to_datetime is not None else None
    cfg = client_config(bootstrap_server, command_config)
    warnings: list[str] = []

    async def main() -> list[tuple[TopicPartition, int | None, int]]:
        async with AdminClient(cfg) as admin:
            sa = ShareGroupAdmin(admin)
            d = (await sa.describe_share_groups([group]))[group]
            if isinstance(d, ShareGroupDescription):
                if d.state != "Empty":
                    raise CommandError(f"Share group '{group}' is not empty.")
                current = await sa.list_offsets(group)
            elif isinstance(d, GroupIdNotFoundError):
                current = {}  # Dead: AlterShareGroupOffsets creates it
            else:
                raise d
            tps: list[TopicPartition] = []
            if all_topics:
                tps = sorted(current)
                if not tps:
                    raise CommandError(
                        f"share group '{group}' has no start offsets; name the partitions with --topic"
                    )
            for name, parts in specs:
                meta = await admin.cluster.topic(name, refresh=True)
                known = {p.partition for p in meta.partitions}
                for p in parts if parts is not None else sorted(known):
                    if p not in known:
                        raise UnknownTopicOrPartitionError(f"Topic '{name}' has no partition {p}")
                    tps.append(TopicPartition(name, p))
            tps = sorted(set(tps))
            starts = await admin.list_offsets({tp: EARLIEST for tp in tps})
            ends = await admin.list_offsets({tp: LATEST for tp in tps})
            by_time = await admin.list_offsets({tp: timestamp for tp in tps}) if timestamp is not None else {}

            def offset_of(results: dict[TopicPartition, OffsetInfo | KafkaError], tp: TopicPartition) -> int:
                r = results[tp]
                if isinstance(r, KafkaError):
                    raise r
                return r.offset

            plan: list[tuple[TopicPartition, int | None, int]] = []
            for tp in tps:
                start, end = offset_of(starts, tp), offset_of(ends, tp)
                if to_earliest:
                    new = start
                elif to_latest:
                    new = end
                elif timestamp is not None:
                    found = offset_of(by_time, tp)
                    new = found if found >= 0 else end
                else:
                    assert to_offset is not None
                    new = to_offset
                if new > end:
                    warnings.append(
                        f"New offset ({new}) is higher than latest offset for {tp}. Value will be set to {end}"
                    )
                    new = end
                elif new < start:
                    warnings.append(
                        f"New offset ({new}) is lower than earliest offset for {tp}. Value will be set to {start}"
                    )
                    new = start
                old = current.get(tp)
                plan.append(
                    (tp, None if old is None or isinstance(old, Exception) else old.start_offset, new)
                )
            if execute and plan:
                results = await sa.alter_offsets(group, {tp: new for tp, _, new in plan})
                for err in results.values():
                    if err is not None:
                        raise err
            return plan

    plan = run(main)
    for w in warnings:
        notice(f"warning: {w}")
    if fmt == OutputFormat.json:
        print_json(
            [
                {
                    "group": group,
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "current_offset": old,
                    "new_offset": new,
                }
                for tp, old, new in plan
            ]
        )
    else:
        print_table(
            ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
            [(group, tp.topic, tp.partition, new) for tp, _, new in plan],
        )
    if not execute and not dry_run:
        notice("Dry run (the default): nothing was changed; add --execute to apply these offsets.")


# ---------------------------------------------------------------------------- delete-offsets
@app.command("delete-offsets")
def delete_offsets(
    group: str = typer.Option(..., "--group", "-g", help="The share group", show_default=False),
    topic: list[str] = typer.Option([], "--topic", "-t", help="Topic (repeatable)", show_default=False),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Delete a share group's offsets (its share-partition state) for whole topics."""
    from zurau.client.admin import AdminClient
    from zurau.client.share_groups_admin import ShareGroupAdmin
    from zurau.protocol.errors import KafkaError

    topics = names_of(None, topic)
    if not topics:
        raise typer.BadParameter("give at least one --topic")
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> dict[str, KafkaError | None]:
        async with AdminClient(cfg) as admin:
            return await ShareGroupAdmin(admin).delete_offsets(group, topics)

    results = run(main)  # a group's error (not found, not empty, not authorized): one line, exit 1
    rows = []
    for t in sorted(results):
        err = results[t]
        rows.append((t, "Successful" if err is None else f"Error: {describe_error(err)}"))
    print_table(("TOPIC", "STATUS"), rows)
    if any(e is not None for e in results.values()):
        raise typer.Exit(1)


# ---------------------------------------------------------------------------- delete
@app.command("delete")
def delete(
    groups: list[str] = GroupsArgument,
    group_opt: list[str] = GroupsOption,
    all_groups: bool = typer.Option(
        False, "--all-groups", help="Delete every share group (non-empty ones fail)"
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Delete share groups (each must have no members) with their share-partition state."""
    from zurau.client.admin import AdminClient
    from zurau.client.share_groups_admin import ShareGroupAdmin
    from zurau.protocol.errors import GroupIdNotFoundError, KafkaError

    names = _requested_groups(groups, group_opt, all_groups)
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> tuple[list[str], dict[str, KafkaError | None]]:
        async with AdminClient(cfg) as admin:
            sa = ShareGroupAdmin(admin)
            listed = {g.group_id: g for g in await sa.list_share_groups()}
            ids = names or sorted(listed)
            results: dict[str, KafkaError | None] = {}
            todo = []
            for gid in ids:
                if gid not in listed:
                    results[gid] = GroupIdNotFoundError(f"Group '{gid}' is not a share group.")
                else:
                    todo.append(gid)
            if todo:
                results.update(await sa.delete_share_groups(todo))
            return ids, results

    ids, results = run(main)
    if not ids:
        typer.echo("There are no share groups to delete.")
        return
    deleted = [g for g in ids if results.get(g) is None]
    failed = [(g, results[g]) for g in ids if results.get(g) is not None]
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        typer.echo(f"Deletion of requested share groups ({quoted}) was successful.")
        return
    if deleted:
        typer.echo(f"These share groups were deleted successfully: {quoted}")
    for gid, err in failed:
        assert err is not None
        print_error(f"Group '{gid}' could not be deleted due to: {describe_error(err)}")
    raise typer.Exit(1)
