"""``zurau leader-election``: kafka-leader-election.sh, the Zurau way.

Elects partition leaders through ElectLeaders (:meth:`zurau.client.admin.AdminClient.elect_leaders`)::

    zurau leader-election --election-type PREFERRED --topic t --partition 0
    zurau leader-election --election-type UNCLEAN --all-topic-partitions
    zurau leader-election --election-type preferred --path-to-json-file partitions.json

The JSON file is Kafka's: ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``. The output
is Kafka's: "Successfully completed leader election (PREFERRED) for partitions t-0, ...", "Valid
replica already elected for partitions ..." and, for each failure, "Error completing leader
election (PREFERRED) for partition: t-1: <error>", after which the command fails with
"<n> replica(s) could not be elected".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, run
from zurau.client.errors import describe_error


def _partitions_from_file(path: Path) -> list[tuple[str, int]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CommandError(f"cannot read {path}: {e}") from None
    entries = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise CommandError(f"{path}: expected {{\"partitions\": [{{\"topic\": ..., \"partition\": ...}}]}}")
    out: list[tuple[str, int]] = []
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("topic"), str)
            or not isinstance(entry.get("partition"), int)
        ):
            raise CommandError(
                f"{path}: each partition needs a string \"topic\" and an integer \"partition\": {entry!r}"
            )
        if (entry["topic"], entry["partition"]) in out:
            raise CommandError(f"{path}: duplicate partition {entry['topic']}-{entry['partition']}")
        out.append((entry["topic"], entry["partition"]))
    return out


def leader_election(
    election_type: str = typer.Option(..., "--election-type", help="PREFERRED or UNCLEAN", show_default=False),
    topic: str | None = typer.Option(None, "--topic", help="Topic of the partition to elect", show_default=False),
    partition: int | None = typer.Option(None, "--partition", help="Partition to elect (with --topic)", show_default=False),
    all_topic_partitions: bool = typer.Option(False, "--all-topic-partitions", help="Every partition of every topic"),
    path_to_json_file: Path | None = typer.Option(
        None, "--path-to-json-file", help='{"partitions": [{"topic": "t", "partition": 0}]}', show_default=False
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Elect the preferred (or, for leaderless partitions, any live) replica as leader."""
    from zurau.client.admin import AdminClient, ElectionType
    from zurau.client.types import TopicPartition
    from zurau.protocol.errors import ElectionNotNeededError

    try:
        kind = ElectionType[election_type.strip().upper()]
    except KeyError:
        raise typer.BadParameter("--election-type must be PREFERRED or UNCLEAN") from None
    chosen = sum([topic is not None, all_topic_partitions, path_to_json_file is not None])
    if chosen != 1:
        raise typer.BadParameter("give exactly one of --topic, --all-topic-partitions and --path-to-json-file")
    if (topic is None) != (partition is None):
        raise typer.BadParameter("--topic and --partition go together")
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> list[str]:
        wanted: list[TopicPartition] | None = None
        if topic is not None and partition is not None:
            wanted = [TopicPartition(topic, partition)]
        elif path_to_json_file is not None:
            wanted = [TopicPartition(t, p) for t, p in _partitions_from_file(path_to_json_file)]
        async with AdminClient(cfg) as admin:
            results = await admin.elect_leaders(kind, wanted)
        ordered = sorted(results, key=lambda tp: (tp.topic, tp.partition))
        succeeded = [f"{tp.topic}-{tp.partition}" for tp in ordered if results[tp] is None]
        noop = [f"{tp.topic}-{tp.partition}" for tp in ordered if isinstance(results[tp], ElectionNotNeededError)]
        failed: list[tuple[str, Any]] = [
            (f"{tp.topic}-{tp.partition}", results[tp])
            for tp in ordered
            if results[tp] is not None and not isinstance(results[tp], ElectionNotNeededError)
        ]
        lines = []
        if succeeded:
            lines.append(f"Successfully completed leader election ({kind.name}) for partitions {', '.join(succeeded)}")
        if noop:
            lines.append(f"Valid replica already elected for partitions {', '.join(noop)}")
        for name, err in failed:
            lines.append(f"Error completing leader election ({kind.name}) for partition: {name}: {describe_error(err)}")
        for line in lines:
            typer.echo(line)
        if failed:
            raise CommandError(f"{len(failed)} replica(s) could not be elected")
        return lines

    run(main)
