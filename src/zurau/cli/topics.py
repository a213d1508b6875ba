"""``zurau topics list | create | describe | delete | alter``: kafka-topics.sh, the Zurau way.

Options keep Kafka's names (``--topic``, ``--partitions``, ``--replication-factor``, ``--config
k=v``, ``--delete-config k``, ``--if-exists``, ``--if-not-exists``, ``--exclude-internal``); a
topic may also be given as a positional argument. ``describe`` prints Kafka's layout plus each
partition's log start and end offsets::

    Topic: t  TopicId: ...  PartitionCount: 3  ReplicationFactor: 1  Configs: retention.ms=1000
        Topic: t  Partition: 0  Leader: 1  Replicas: 1  Isr: 1  LogStartOffset: 0  LogEndOffset: 42

(fields are tab-separated), or one JSON document with ``--format json`` (or ``--json``). A
partition being reassigned also shows ``Adding Replicas`` and ``Removing Replicas`` (after
``Isr``), one with eligible leader replicas (KIP-966, from DescribeTopicPartitions) ``Elr`` and
``LastKnownElr`` after ``Isr`` when they are not empty, and one with replicas on brokers that are
down ``Offline``, as kafka-topics.sh does;
``--under-replicated-partitions`` and ``--unavailable-partitions`` keep only the partitions whose
ISR is smaller than their replicas, or that have no leader.

A tiered topic (``remote.storage.enable=true``, KIP-405) also shows, per partition, the first
offset still on the leader's disk, the last offset copied to remote storage (-1: none yet) and the
bytes of the leader's replica (:mod:`zurau.client.tiered_partitions`)::

    ...  LogStartOffset: 0  LogEndOffset: 400  LocalLogStartOffset: 300  HighestOffsetInRemote: 299  LocalSize: 1048000

(``local_log_start_offset``, ``highest_offset_in_remote`` and ``local_size`` in JSON; -1 where the
cluster cannot say). The remote tier's size has no Kafka API: it is the leaders' metric
``kafka_server_brokertopicmetrics_remotelogsizebytes``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from zurau.cli.common import (
    BootstrapOption,
    CommandConfigOption,
    CommandError,
    client_config,
    config_pairs,
    names_of,
    run,
)
from zurau.cli.output import (
    FormatOption,
    JsonOption,
    OutputFormat,
    print_json,
    print_lines,
    progress,
    resolve_format,
)
from zurau.client.errors import describe_error

if TYPE_CHECKING:
    from zurau.client.tiered_partitions import TieredPartition

app = typer.Typer(help="List, create, describe, alter and delete topics.", no_args_is_help=True)

# Options more than one command takes.
TopicArgument = typer.Argument(None, help="Topic name", show_default=False)
TopicOption = typer.Option(None, "--topic", "-t", help="Topic name", show_default=False)
TopicsOption = typer.Option([], "--topic", "-t", help="Topic name (repeatable)", show_default=False)
ExcludeInternalOption = typer.Option(False, "--exclude-internal", help="Leave out internal topics")


def _topic(positional: str | None, option: str | None) -> str:
    if positional and option and positional != option:
        raise typer.BadParameter(f"two different topics given: {positional!r} and {option!r}")
    name = positional or option
    if not name:
        raise typer.BadParameter("a topic is required (TOPIC or --topic)")
    return name


@app.command("list")
def list_topics(
    exclude_internal: bool = ExcludeInternalOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """List topic names, one per line."""
    from zurau.client.admin import AdminClient

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> list[str]:
        async with AdminClient(cfg) as admin:
            return await admin.list_topics(include_internal=not exclude_internal)

    print_lines(run(main))


@app.command("create")
def create(
    topic: str | None = TopicArgument,
    topic_opt: str | None = TopicOption,
    partitions: int = typer.Option(
        -1, "--partitions", help="Partition count (-1: the broker's num.partitions)"
    ),
    replication_factor: int = typer.Option(
        -1, "--replication-factor", help="Replicas per partition (-1: default.replication.factor)"
    ),
    config: list[str] = typer.Option([], "--config", help="Topic config k=v (repeatable)"),
    if_not_exists: bool = typer.Option(False, "--if-not-exists", help="Succeed if the topic already exists"),
    validate_only: bool = typer.Option(False, "--validate-only", help="Check the request, create nothing"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Create a topic."""
    from zurau.client.admin import AdminClient, NewTopic
    from zurau.protocol.errors import TopicAlreadyExistsError

    name = _topic(topic, topic_opt)
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> str:
        configs = config_pairs(config)
        async with AdminClient(cfg) as admin:
            result = await admin.create_topics(
                [NewTopic(name, partitions, replication_factor, configs)], validate_only=validate_only
            )
        err = result.get(name)
        if isinstance(err, TopicAlreadyExistsError) and if_not_exists:
            return f"Topic {name} already exists."
        if err is not None:
            raise err
        return f"Topic {name} is valid." if validate_only else f"Created topic {name}."

    typer.echo(run(main))


@app.command("delete")
def delete(
    topics: list[str] = typer.Argument(None, help="Topic name(s)", show_default=False),
    topic_opt: list[str] = TopicsOption,
    if_exists: bool = typer.Option(False, "--if-exists", help="Succeed if a topic does not exist"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Delete topics."""
    from zurau.client.admin import AdminClient
    from zurau.protocol.errors import UnknownTopicOrPartitionError

    names = names_of(topics, topic_opt)
    if not names:
        raise typer.BadParameter("at least one topic is required (TOPIC or --topic)")
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> list[str]:
        async with AdminClient(cfg) as admin:
            results = await admin.delete_topics(names)
        lines = []
        for name in names:
            err = results.get(name)
            if err is None:
                lines.append(f"Deleted topic {name}.")
            elif isinstance(err, UnknownTopicOrPartitionError) and if_exists:
                lines.append(f"Topic {name} does not exist.")
            else:
                raise err
        return lines

    print_lines(run(main))


def _tier_json(tier: TieredPartition) -> dict[str, int]:
    return {
        "local_log_start_offset": tier.local_log_start_offset,
        "highest_offset_in_remote": tier.highest_offset_in_remote,
        "local_size": tier.local_size,
    }


def _tier_text(tier: TieredPartition) -> str:
    """The tab-separated fields of a tiered partition's line (after ``LogEndOffset``)."""
    return (
        f"\tLocalLogStartOffset: {tier.local_log_start_offset}"
        f"\tHighestOffsetInRemote: {tier.highest_offset_in_remote}\tLocalSize: {tier.local_size}"
    )


def _describe_json(
    desc: Any,
    configs: dict[str, str],
    moving: dict[Any, Any],
    tiers: dict[Any, TieredPartition] | None = None,
) -> dict[str, Any]:
    """One topic's JSON document; a partition in ``tiers`` (a tiered topic's) has its tiers too."""
    from zurau.client.types import TopicPartition

    tiers = tiers or {}

    def tier(p: Any) -> dict[str, int]:
        found = tiers.get(TopicPartition(desc.name, p.partition))
        return _tier_json(found) if found is not None else {}

    def reassignment(p: Any) -> dict[str, list[int]] | None:
        r = moving.get(TopicPartition(desc.name, p.partition))
        if r is None:
            return None
        return {"adding_replicas": list(r.adding_replicas), "removing_replicas": list(r.removing_replicas)}

    return {
        "topic": desc.name,
        "topic_id": str(desc.topic_id) if desc.topic_id is not None else None,
        "internal": desc.is_internal,
        "partition_count": len(desc.partitions),
        "replication_factor": desc.replication_factor,
        "configs": configs,
        "partitions": [
            {
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "elr": list(p.elr),
                "last_known_elr": list(p.last_known_elr),
                "offline_replicas": list(p.offline_replicas),
                "reassignment": reassignment(p),
                "log_start_offset": p.log_start_offset,
                "log_end_offset": p.log_end_offset,
                **tier(p),
                "error": describe_error(p.error) if p.error else None,
            }
            for p in desc.partitions
        ],
    }


def _ids(nodes: tuple[int, ...]) -> str:
    return ",".join(map(str, nodes))


@app.command("describe")
def describe(
    topics: list[str] = typer.Argument(None, help="Topic name(s); all topics when none", show_default=False),
    topic_opt: list[str] = TopicsOption,
    exclude_internal: bool = ExcludeInternalOption,
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    under_replicated: bool = typer.Option(
        False,
        "--under-replicated-partitions",
        help="Only partitions whose ISR is smaller than their replicas",
    ),
    unavailable: bool = typer.Option(
        False, "--unavailable-partitions", help="Only partitions without a leader"
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Partitions with leader, replicas, ISR, log start and end offsets, and overridden configs.

    A tiered topic's partitions (remote.storage.enable=true) also show LocalLogStartOffset,
    HighestOffsetInRemote (-1: nothing tiered yet) and LocalSize (bytes on the leader's disk). The
    size of the remote tier has no Kafka API: see the leaders' metric
    kafka_server_brokertopicmetrics_remotelogsizebytes.
    """
    from zurau.client.admin import AdminClient, ConfigResource, ConfigSource, ResourceType, TopicDescription
    from zurau.client.tiered_partitions import describe_tiered_partitions, remote_storage_enabled
    from zurau.client.types import TopicPartition

    names = names_of(topics, topic_opt) or None
    cfg = client_config(bootstrap_server, command_config)
    moving: dict[Any, Any] = {}
    tiers: dict[Any, TieredPartition] = {}

    async def main() -> list[tuple[TopicDescription, dict[str, str]]]:
        async with AdminClient(cfg) as admin:
            if await admin.cluster.supports(46):  # ListPartitionReassignments
                moving.update(await admin.list_partition_reassignments())
            with progress("Describing topics"):
                descs = await admin.describe_topics(names, include_internal=not exclude_internal)
                for d in descs.values():
                    if not isinstance(d, TopicDescription):
                        raise d
                found = [d for d in descs.values() if isinstance(d, TopicDescription)]
                resources = [ConfigResource(ResourceType.TOPIC, d.name) for d in found]
                configs = await admin.describe_configs(resources) if resources else {}
            out = []
            tiered = []
            for d in found:
                entries = configs.get(ConfigResource(ResourceType.TOPIC, d.name))
                if isinstance(entries, BaseException) or entries is None:
                    overrides: dict[str, str] = {}
                else:
                    overrides = {
                        e.name: e.value if e.value is not None else "<sensitive>"
                        for e in entries
                        if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG
                    }
                    if remote_storage_enabled({e.name: e.value for e in entries}):
                        tiered.append(d)
                out.append((d, overrides))
            if tiered:
                tiers.update(await describe_tiered_partitions(admin, tiered))
        return out

    described = run(main)
    filtering = under_replicated or unavailable

    def wanted(p: Any) -> bool:
        return (under_replicated and len(p.isr) < len(p.replicas)) or (unavailable and p.leader < 0)

    if filtering:
        described = [
            (dataclasses.replace(d, partitions=tuple(p for p in d.partitions if wanted(p))), c)
            for d, c in described
        ]
        described = [(d, c) for d, c in described if d.partitions]
    if resolve_format(fmt, as_json) == OutputFormat.json:
        print_json([_describe_json(d, c, moving, tiers) for d, c in described])
        return
    for d, overrides in described:
        conf = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        if not filtering:  # kafka-topics.sh prints only the partition lines when filtering
            typer.echo(
                f"Topic: {d.name}\tTopicId: {d.topic_id}\tPartitionCount: {len(d.partitions)}\t"
                f"ReplicationFactor: {d.replication_factor}\tConfigs: {conf}"
            )
        for p in d.partitions:
            line = (
                f"\tTopic: {d.name}\tPartition: {p.partition}\tLeader: {p.leader if p.leader >= 0 else 'none'}\t"
                f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
            )
            if p.elr:
                line += f"\tElr: {_ids(p.elr)}"
            if p.last_known_elr:
                line += f"\tLastKnownElr: {_ids(p.last_known_elr)}"
            reassignment = moving.get(TopicPartition(d.name, p.partition))
            if reassignment is not None:
                line += (
                    f"\tAdding Replicas: {_ids(reassignment.adding_replicas)}"
                    f"\tRemoving Replicas: {_ids(reassignment.removing_replicas)}"
                )
            line += f"\tLogStartOffset: {p.log_start_offset}\tLogEndOffset: {p.log_end_offset}"
            tier = tiers.get(TopicPartition(d.name, p.partition))
            if tier is not None:
                line += _tier_text(tier)
            if p.offline_replicas:
                line += f"\tOffline: {_ids(p.offline_replicas)}"
            if p.error is not None:
                line += f"\tError: {describe_error(p.error)}"
            typer.echo(line)


@app.command("alter")
def alter(
    topic: str | None = TopicArgument,
    topic_opt: str | None = TopicOption,
    partitions: int | None = typer.Option(None, "--partitions", help="New (larger) partition count"),
    replication_factor: int | None = typer.Option(
        None, "--replication-factor", help="New replication factor"
    ),
    config: list[str] = typer.Option([], "--config", help="Set a topic config k=v (repeatable)"),
    delete_config: list[str] = typer.Option(
        [], "--delete-config", help="Remove a config override (repeatable)"
    ),
    if_exists: bool = typer.Option(False, "--if-exists", help="Succeed if the topic does not exist"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Add partitions, check the replication factor, or set and delete config overrides."""
    from zurau.cli.common import split_config_list
    from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ResourceType
    from zurau.protocol.errors import UnknownTopicOrPartitionError

    name = _topic(topic, topic_opt)
    if partitions is None and replication_factor is None and not config and not delete_config:
        raise typer.BadParameter(
            "nothing to alter: give --partitions, --replication-factor, --config or --delete-config"
        )
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> list[str]:
        sets = config_pairs(config)
        deletes = [k for item in delete_config for k in split_config_list(item)]
        lines: list[str] = []
        async with AdminClient(cfg) as admin:
            meta = (await admin.topic_metadata([name]))[name]
            if meta.error is not None:
                if isinstance(meta.error, UnknownTopicOrPartitionError) and if_exists:
                    return [f"Topic {name} does not exist."]
                raise meta.error
            if replication_factor is not None:
                current = max((len(p.replicas) for p in meta.partitions), default=0)
                if replication_factor != current:
                    raise CommandError(
                        f"changing the replication factor of {name} from {current} to {replication_factor} "
                        "needs a partition reassignment: use zurau reassign-partitions (--generate, then --execute)"
                    )
                lines.append(f"Replication factor of {name} is already {current}.")
            if sets or deletes:
                ops = [AlterConfigOp(k, AlterOp.SET, v) for k, v in sets.items()]
                ops += [AlterConfigOp(k, AlterOp.DELETE, None) for k in deletes]
                res = ConfigResource(ResourceType.TOPIC, name)
                err = (await admin.incremental_alter_configs({res: ops}))[res]
                if err is not None:
                    raise err
                lines.append(f"Updated config for topic {name}.")
            if partitions is not None:
                err = (await admin.create_partitions({name: partitions}))[name]
                if err is not None:
                    raise err
                lines.append(f"Topic {name} now has {partitions} partitions.")
        return lines

    print_lines(run(main))
