"""``zurau groups list | describe | delete | reset-offsets``: kafka-consumer-groups.sh, the Zurau way.

* ``list [--state S[,S]] [--type classic|consumer]``: every group of the cluster (ListGroups to each
  broker) with its type and state.
* ``describe GROUP... | --all-groups`` with one view: ``--offsets`` (the default: committed offset,
  log end offset and lag per partition, with the member owning it), ``--members`` (member id,
  instance id, client id, host, assignment) or ``--state`` (coordinator, assignor, state, member
  count). KIP-848 groups are described with ConsumerGroupDescribe, classic groups with
  DescribeGroups (assignments decoded as Kafka's ConsumerProtocolAssignment).
* ``delete GROUP... | --all-groups``: DeleteGroups; a group that is not empty or does not exist is
  reported in Kafka's words and makes the exit status 1.
* ``reset-offsets --group G (--topic T[:P,P] ... | --all-topics)`` with one of ``--to-earliest``,
  ``--to-latest``, ``--to-datetime``, ``--to-offset N``, ``--shift-by N`` (results are clamped to
  each partition's [earliest, latest]). ``--dry-run`` (the default) prints the plan;
  ``--execute`` commits it with OffsetCommit (generation -1, no member id) and refuses a group
  that has members, as Kafka does.

Tables (``--format table``, the default) are rich tables: boxed on a terminal, plain aligned
columns otherwise (one row per line, for ``grep``/``awk``); ``--format json`` prints one JSON
document. Notices such as "Consumer group 'g' has no active members." go to stderr.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
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
    from zurau.client.admin import AdminClient
    from zurau.client.groups_admin import GroupAdmin, GroupDescription, MemberDescription
    from zurau.client.types import TopicPartition

app = typer.Typer(
    help="List, describe and delete consumer groups, and reset their offsets.", no_args_is_help=True
)

# Options more than one command takes.
GroupsArgument = typer.Argument(None, help="Group id(s)", show_default=False)
GroupsOption = typer.Option([], "--group", "-g", help="Group id (repeatable)", show_default=False)


def _requested_groups(
    positional: Sequence[str] | None, options: Sequence[str], all_groups: bool
) -> list[str]:
    """The group ids named (GROUP, --group); empty with --all-groups, which excludes them."""
    names = names_of(positional, options)
    if all_groups and names:
        raise typer.BadParameter("give group ids or --all-groups, not both")
    if not all_groups and not names:
        raise typer.BadParameter("a group is required (GROUP, --group or --all-groups)")
    return names


def _assignment_text(tps: Sequence[TopicPartition] | None) -> str | None:
    """Kafka's ``topic(0,1,2),other(0)``; None for no assignment."""
    from zurau.client.types import partitions_by_topic

    if not tps:
        return None
    by_topic = partitions_by_topic(tps)
    return ",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items()))


def _tps_json(tps: Sequence[TopicPartition] | None) -> list[dict[str, Any]] | None:
    if tps is None:
        return None
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def _state_notice(d: GroupDescription) -> None:
    if d.state == "Empty":
        notice(f"Consumer group '{d.group_id}' has no active members.")
    elif d.state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        notice(f"Warning: Consumer group '{d.group_id}' is rebalancing.")


# ---------------------------------------------------------------------------- list
@app.command("list")
def list_groups(
    state: list[str] = typer.Option(
        [],
        "--state",
        help="Only groups in these states, comma-separated or repeated "
        "(Empty, Stable, PreparingRebalance, CompletingRebalance, Assigning, Reconciling, Dead)",
        show_default=False,
    ),
    group_type: list[str] = typer.Option(
        [], "--type", help="Only groups of these types: classic, consumer", show_default=False
    ),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """List the cluster's groups with their type and state."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.admin import AdminClient
    from zurau.client.groups_admin import GROUP_STATES, GROUP_TYPES, GroupAdmin, GroupListing

    states = split_values(state)
    for s in states:
        if s.lower() not in GROUP_STATES:
            raise typer.BadParameter(
                f"unknown group state {s!r}; use one of {', '.join(GROUP_STATES.values())}"
            )
    states = [GROUP_STATES[s.lower()] for s in states]
    types = [t.lower() for t in split_values(group_type)]
    for t in types:
        if t not in GROUP_TYPES:
            raise typer.BadParameter(f"unknown group type {t!r}; use one of {', '.join(GROUP_TYPES)}")
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> list[GroupListing]:
        async with AdminClient(cfg) as admin:
            return await GroupAdmin(admin).list_groups(states, types)

    groups = run(main)
    if fmt == OutputFormat.json:
        print_json(
            [
                {
                    "group": g.group_id,
                    "type": g.group_type,
                    "state": g.state,
                    "protocol_type": g.protocol_type,
                }
                for g in groups
            ]
        )
    elif groups:
        print_table(("GROUP", "TYPE", "STATE"), [(g.group_id, g.group_type, g.state) for g in groups])


# ---------------------------------------------------------------------------- describe
@dataclass(frozen=True)
class OffsetRow:
    """One partition of a group in ``describe --offsets`` (topic None: a member owning nothing)."""

    topic: str | None
    partition: int | None
    current: int | None
    end: int | None
    member: MemberDescription | None

    @property
    def lag(self) -> int | None:
        return None if self.current is None or self.end is None else self.end - self.current


async def _offset_rows(
    admin: AdminClient, ga: GroupAdmin, groups: Sequence[GroupDescription]
) -> dict[str, list[OffsetRow]]:
    """Committed offset, log end offset and owner of each partition the groups touch."""
    from zurau.client.admin import LATEST, OffsetInfo

    plans: dict[str, tuple[dict[TopicPartition, int], dict[TopicPartition, MemberDescription]]] = {}
    for d in groups:
        committed = await ga.committed_offsets(d.group_id)
        owners = {tp: m for m in d.members for tp in m.assignment}
        plans[d.group_id] = (committed, owners)
    every = {tp for committed, owners in plans.values() for tp in (*committed, *owners)}
    ends = await admin.list_offsets({tp: LATEST for tp in every}) if every else {}
    out: dict[str, list[OffsetRow]] = {}
    for d in groups:
        committed, owners = plans[d.group_id]
        rows = []
        for tp in sorted(set(committed) | set(owners)):
            end = ends.get(tp)
            rows.append(
                OffsetRow(
                    tp.topic,
                    tp.partition,
                    committed.get(tp),
                    end.offset if isinstance(end, OffsetInfo) and end.offset >= 0 else None,
                    owners.get(tp),
                )
            )
        rows += [OffsetRow(None, None, None, None, m) for m in d.members if not m.assignment]
        out[d.group_id] = rows
    return out


def _describe_json(d: GroupDescription, rows: list[OffsetRow] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "group": d.group_id,
        "type": d.group_type,
        "state": d.state,
        "protocol_type": d.protocol_type,
        "assignor": d.assignor,
        "coordinator": {"id": d.coordinator.node_id, "host": d.coordinator.host, "port": d.coordinator.port},
        "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch,
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.host,
                "member_epoch": m.member_epoch,
                "subscribed_topics": list(m.subscribed_topics),
                "assignment": _tps_json(m.assignment),
                "target_assignment": _tps_json(m.target_assignment),
                "assignment_error": m.assignment_error,
            }
            for m in d.members
        ],
    }
    if rows is not None:
        doc["offsets"] = [
            {
                "topic": r.topic,
                "partition": r.partition,
                "current_offset": r.current,
                "log_end_offset": r.end,
                "lag": r.lag,
                "member_id": r.member.member_id if r.member else None,
                "host": r.member.host if r.member else None,
                "client_id": r.member.client_id if r.member else None,
            }
            for r in rows
            if r.topic is not None
        ]
    return doc


@app.command("describe")
def describe(
    groups: list[str] = GroupsArgument,
    group_opt: list[str] = GroupsOption,
    all_groups: bool = typer.Option(False, "--all-groups", help="Describe every group of the cluster"),
    members: bool = typer.Option(
        False, "--members", help="Members: id, instance id, client id, host, assignment"
    ),
    offsets: bool = typer.Option(
        False, "--offsets", help="Committed offset, log end offset and lag per partition (the default)"
    ),
    state: bool = typer.Option(False, "--state", help="Coordinator, assignor, state and member count"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Describe groups: offsets and lag (default), members, or state."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.admin import AdminClient
    from zurau.client.groups_admin import GroupAdmin, GroupDescription
    from zurau.protocol.errors import KafkaError

    names = _requested_groups(groups, group_opt, all_groups)
    if members + offsets + state > 1:
        raise typer.BadParameter("--members, --offsets and --state are exclusive")
    view = "members" if members else "state" if state else "offsets"
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> tuple[list[GroupDescription], dict[str, list[OffsetRow]] | None, list[str]]:
        async with AdminClient(cfg) as admin:
            ga = GroupAdmin(admin)
            ids = names or [g.group_id for g in await ga.list_groups()]
            found = await ga.describe_groups(ids)
            described: list[GroupDescription] = []
            errors: list[str] = []
            for gid in ids:
                d = found[gid]
                if isinstance(d, GroupDescription):
                    described.append(d)
                else:
                    errors.append(describe_error(d))
            rows = None
            if view == "offsets" and described:
                try:
                    rows = await _offset_rows(admin, ga, described)
                except KafkaError as e:
                    raise CommandError(f"cannot read committed offsets: {describe_error(e)}") from None
            return described, rows, errors

    described, rows, errors = run(main)
    if fmt == OutputFormat.json:
        print_json([_describe_json(d, rows[d.group_id] if rows is not None else None) for d in described])
    else:
        _print_describe(view, described, rows)
    for message in errors:
        print_error(one_line(message))
    if errors:
        raise typer.Exit(1)


def _print_describe(
    view: str, described: list[GroupDescription], rows: dict[str, list[OffsetRow]] | None
) -> None:
    for d in described:
        _state_notice(d)
    if not described:
        return
    if view == "state":
        print_table(
            ("GROUP", "TYPE", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
            [
                (
                    d.group_id,
                    d.group_type,
                    f"{d.coordinator.host}:{d.coordinator.port} ({d.coordinator.node_id})",
                    d.assignor or None,
                    d.state,
                    len(d.members),
                )
                for d in described
            ],
        )
    elif view == "members":
        table = [
            (
                d.group_id,
                m.member_id,
                m.instance_id,
                m.host,
                m.client_id,
                len(m.assignment),
                _assignment_text(m.assignment) if m.assignment_error is None else "(undecodable)",
            )
            for d in described
            for m in d.members
        ]
        if table:
            print_table(
                (
                    "GROUP",
                    "CONSUMER-ID",
                    "GROUP-INSTANCE-ID",
                    "HOST",
                    "CLIENT-ID",
                    "#PARTITIONS",
                    "ASSIGNMENT",
                ),
                table,
            )
    else:
        assert rows is not None
        table2 = [
            (
                d.group_id,
                r.topic,
                r.partition,
                r.current,
                r.end,
                r.lag,
                r.member.member_id if r.member else None,
                r.member.host if r.member else None,
                r.member.client_id if r.member else None,
            )
            for d in described
            for r in rows[d.group_id]
        ]
        if table2:
            print_table(
                ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                 "CLIENT-ID"),
                table2,
            )  # fmt: skip


# ---------------------------------------------------------------------------- delete
@app.command("delete")
def delete(
    groups: list[str] = GroupsArgument,
    group_opt: list[str] = GroupsOption,
    all_groups: bool = typer.Option(False, "--all-groups", help="Delete every group (non-empty ones fail)"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Delete groups (each must have no members) and their committed offsets."""
    from zurau.client.admin import AdminClient
    from zurau.client.groups_admin import GroupAdmin
    from zurau.protocol.errors import KafkaError

    names = _requested_groups(groups, group_opt, all_groups)
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> tuple[list[str], dict[str, KafkaError | None]]:
        async with AdminClient(cfg) as admin:
            ga = GroupAdmin(admin)
            ids = names or [g.group_id for g in await ga.list_groups()]
            return ids, (await ga.delete_groups(ids) if ids else {})

    ids, results = run(main)
    if not ids:
        typer.echo("There are no consumer groups to delete.")
        return
    deleted = [g for g in ids if results.get(g) is None]
    failed = [(g, results[g]) for g in ids if results.get(g) is not None]
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        typer.echo(f"Deletion of requested consumer groups ({quoted}) was successful.")
        return
    if deleted:
        typer.echo(f"These consumer groups were deleted successfully: {quoted}")
    for gid, err in failed:
        assert err is not None
        print_error(f"Group '{gid}' could not be deleted due to: {describe_error(err)}")
    raise typer.Exit(1)


# ---------------------------------------------------------------------------- reset-offsets
def parse_datetime_ms(text: str) -> int:
    """ISO 8601 (``2026-11-21T10:00:00.000``, ``...Z``, ``...+01:00``) -> ms since the epoch.

    Without a time zone the local one applies, as in kafka-consumer-groups.sh.
    """
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"--to-datetime expects ISO 8601 like 2026-11-21T10:00:00.000 or 2026-11-21T10:00:00+01:00, got {text!r}"
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    return (dt - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def check_reset_options(
    modes: dict[str, bool],
    topic: list[str],
    all_topics: bool,
    dry_run: bool,
    execute: bool,
    to_offset: int | None,
) -> None:
    """The option checks ``reset-offsets`` of consumer and share groups share: exactly one of
    ``modes`` (option name -> given), ``--topic`` or ``--all-topics``, not both ``--dry-run`` and
    ``--execute``, a non-negative ``--to-offset``; typer.BadParameter otherwise."""
    given = [m for m, on in modes.items() if on]
    if len(given) != 1:
        raise typer.BadParameter(
            f"give exactly one of {', '.join(modes)}" + (f" (got {', '.join(given)})" if given else "")
        )
    if bool(topic) == all_topics:
        raise typer.BadParameter("give --topic (repeatable) or --all-topics")
    if dry_run and execute:
        raise typer.BadParameter("--dry-run and --execute are exclusive")
    if to_offset is not None and to_offset < 0:
        raise typer.BadParameter(f"--to-offset must not be negative, got {to_offset}")


def parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
    """``orders`` -> (orders, None: every partition); ``orders:0,2`` -> (orders, [0, 2])."""
    name, sep, parts = spec.partition(":")
    name = name.strip()
    if not name:
        raise typer.BadParameter(f"--topic expects TOPIC or TOPIC:P,P, got {spec!r}")
    if not sep:
        return name, None
    try:
        partitions = sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise typer.BadParameter(f"--topic expects TOPIC:P,P with partition numbers, got {spec!r}") from None
    if not partitions or partitions[0] < 0:
        raise typer.BadParameter(f"--topic expects TOPIC:P,P with partition numbers, got {spec!r}")
    return name, partitions


@dataclass(frozen=True)
class ResetRow:
    """One partition of the plan."""

    topic: str
    partition: int
    current: int | None
    new: int


def _inactive_error(group: str, state: str) -> CommandError:
    return CommandError(
        f"Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
    )


@app.command("reset-offsets")
def reset_offsets(
    group: str = typer.Option(
        ..., "--group", "-g", help="The group whose offsets to reset", show_default=False
    ),
    topic: list[str] = typer.Option(
        [], "--topic", "-t", help="TOPIC or TOPIC:P,P (repeatable)", show_default=False
    ),
    all_topics: bool = typer.Option(False, "--all-topics", help="Every partition the group has offsets for"),
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
    shift_by: int | None = typer.Option(
        None, "--shift-by", help="Move the committed offset by N (may be negative)", show_default=False
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print the plan (the default)"),
    execute: bool = typer.Option(False, "--execute", help="Commit the new offsets"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Reset a group's committed offsets (the group must have no members to --execute)."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.admin import EARLIEST, LATEST, AdminClient, OffsetInfo
    from zurau.client.groups_admin import DEAD, GroupAdmin, GroupDescription
    from zurau.client.types import TopicPartition
    from zurau.protocol.errors import (
        GroupIdNotFoundError,
        IllegalGenerationError,
        KafkaError,
        RebalanceInProgressError,
        UnknownMemberIdError,
        UnknownTopicOrPartitionError,
    )

    modes = {
        "--to-earliest": to_earliest,
        "--to-latest": to_latest,
        "--to-datetime": to_datetime is not None,
        "--to-offset": to_offset is not None,
        "--shift-by": shift_by is not None,
    }
    check_reset_options(modes, topic, all_topics, dry_run, execute, to_offset)
    specs = [parse_topic_spec(t) for t in topic]
    timestamp = parse_datetime_ms(to_datetime) if to_datetime is not None else None
    cfg = client_config(bootstrap_server, command_config)
    warnings: list[str] = []

    async def main() -> tuple[list[ResetRow], str]:
        async with AdminClient(cfg) as admin:
            ga = GroupAdmin(admin)
            d = (await ga.describe_groups([group]))[group]
            if isinstance(d, GroupIdNotFoundError):
                group_state = DEAD
            elif isinstance(d, GroupDescription):
                group_state = d.state
            else:
                raise d
            if execute and group_state not in ("Empty", DEAD):
                raise _inactive_error(group, group_state)
            committed = await ga.committed_offsets(group) if group_state != DEAD else {}

            tps: list[TopicPartition] = []
            if all_topics:
                tps = sorted(committed)
                if not tps:
                    raise CommandError(
                        f"group '{group}' has no committed offsets; name the partitions with --topic"
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

            plan: list[ResetRow] = []
            for tp in tps:
                start, end = offset_of(starts, tp), offset_of(ends, tp)
                if to_earliest:
                    new = start
                elif to_latest:
                    new = end
                elif timestamp is not None:
                    found = offset_of(by_time, tp)
                    new = found if found >= 0 else end  # no record at or after the time: the end
                elif to_offset is not None:
                    new = to_offset
                else:
                    assert shift_by is not None
                    if tp not in committed:
                        raise CommandError(
                            f"Cannot shift offset for partition {tp} since there is no current committed offset"
                        )
                    new = committed[tp] + shift_by
                if new > end:
                    warnings.append(
                        f"New offset ({new}) is higher than latest offset for topic partition {tp}. "
                        f"Value will be set to {end}"
                    )
                    new = end
                elif new < start:
                    warnings.append(
                        f"New offset ({new}) is lower than earliest offset for topic partition {tp}. "
                        f"Value will be set to {start}"
                    )
                    new = start
                plan.append(ResetRow(tp.topic, tp.partition, committed.get(tp), new))

            if execute:
                results = await ga.commit_offsets(
                    group, {TopicPartition(r.topic, r.partition): r.new for r in plan}
                )
                for err in results.values():
                    if isinstance(
                        err, UnknownMemberIdError | IllegalGenerationError | RebalanceInProgressError
                    ):
                        now = (await ga.describe_groups([group]))[group]
                        raise _inactive_error(
                            group, now.state if isinstance(now, GroupDescription) else "unknown"
                        )
                    if err is not None:
                        raise err
            return plan, group_state

    plan, group_state = run(main)
    for w in warnings:
        notice(f"warning: {w}")
    if fmt == OutputFormat.json:
        print_json(
            [
                {"group": group, "topic": r.topic, "partition": r.partition, "current_offset": r.current,
                 "new_offset": r.new}
                for r in plan
            ]
        )  # fmt: skip
    else:
        print_table(
            ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
            [(group, r.topic, r.partition, r.new) for r in plan],
        )
    if not execute:
        if group_state not in ("Empty", DEAD):
            notice(f"warning: group '{group}' is {group_state}; --execute needs it to have no members")
        if not dry_run:
            notice("Dry run (the default): nothing was committed; add --execute to commit these offsets.")
