"""``zurau reassign-partitions``: kafka-reassign-partitions.sh, the Zurau way.

* ``--generate --topics-to-move-json-file F --broker-list 1,2,3`` prints the current assignment
  of the topics in ``F`` (``{"topics": [{"topic": "t"}], "version": 1}``) and a proposal that
  spreads each partition's replicas (same replication factor) round-robin over the brokers;
* ``--execute --reassignment-json-file F`` starts the reassignments in ``F`` (``{"version": 1,
  "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]}``, Kafka's format;
  ``log_dirs`` is accepted and ignored) and prints the current assignment to keep for a rollback;
  while another reassignment is in progress it refuses unless ``--additional`` is given; with
  ``--throttle B`` (bytes/s) the moving replicas are throttled first
  (:mod:`zurau.cli.reassignment_throttle`);
* ``--verify --reassignment-json-file F`` says for each partition whether its reassignment is
  complete, still in progress, or absent with other replicas; once none of them is in progress it
  removes the replication throttles (unless ``--preserve-throttles``);
* ``--list`` lists the ongoing reassignments; ``--cancel --reassignment-json-file F`` cancels
  those of the partitions in ``F`` (their replicas go back to what they were).

Output lines are Kafka's. The command talks to brokers only through :mod:`zurau.client`
(AlterPartitionReassignments, ListPartitionReassignments, Metadata, IncrementalAlterConfigs).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, run
from zurau.client.errors import describe_error


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CommandError(f"cannot read {path}: {e}") from None


def parse_reassignment(path: Path) -> list[tuple[str, int, list[int]]]:
    """(topic, partition, replicas) from a reassignment JSON file, in file order."""
    doc = _read_json(path)
    entries = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise CommandError(f"{path}: expected a non-empty \"partitions\" list")
    out: list[tuple[str, int, list[int]]] = []
    seen: set[tuple[str, int]] = set()
    for e in entries:
        ok = (
            isinstance(e, dict)
            and isinstance(e.get("topic"), str)
            and isinstance(e.get("partition"), int)
            and isinstance(e.get("replicas"), list)
            and all(isinstance(r, int) for r in e["replicas"])
        )
        if not ok:
            raise CommandError(f"{path}: each partition needs \"topic\", \"partition\" and \"replicas\": {e!r}")
        key = (e["topic"], e["partition"])
        if key in seen:
            raise CommandError(f"{path}: partition {key[0]}-{key[1]} appears more than once")
        if len(set(e["replicas"])) != len(e["replicas"]):
            raise CommandError(f"{path}: partition {key[0]}-{key[1]} names a replica twice: {e['replicas']}")
        seen.add(key)
        out.append((e["topic"], e["partition"], list(e["replicas"])))
    return out


def assignment_json(assignment: list[tuple[str, int, list[int]]]) -> str:
    """Kafka's reassignment JSON (compact, as kafka-reassign-partitions.sh prints it)."""
    doc = {
        "version": 1,
        "partitions": [
            {"topic": t, "partition": p, "replicas": replicas, "log_dirs": ["any"] * len(replicas)}
            for t, p, replicas in sorted(assignment, key=lambda x: (x[0], x[1]))
        ],
    }
    return json.dumps(doc, separators=(",", ":"))


def propose(current: list[tuple[str, int, list[int]]], brokers: list[int], rng: random.Random) -> list[tuple[str, int, list[int]]]:
    """Each topic's partitions spread round-robin over ``brokers`` with the same replication
    factor, from a random start per topic (as Kafka's non-rack-aware assignment does)."""
    out = []
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for t, p, replicas in current:
        by_topic.setdefault(t, []).append((p, len(replicas)))
    for t in sorted(by_topic):
        start = rng.randrange(len(brokers))
        shift = rng.randrange(len(brokers))
        for p, rf in sorted(by_topic[t]):
            if rf > len(brokers):
                raise CommandError(
                    f"topic {t} has replication factor {rf}, larger than the {len(brokers)} broker(s) given"
                )
            first = (start + p) % len(brokers)
            step = 1 + (shift + p // len(brokers)) % max(len(brokers) - 1, 1)
            replicas = [brokers[first]]
            for j in range(1, rf):
                replicas.append(brokers[(first + j * step) % len(brokers)])
            if len(set(replicas)) != rf:  # a step that revisits: fall back to consecutive brokers
                replicas = [brokers[(first + j) % len(brokers)] for j in range(rf)]
            out.append((t, p, replicas))
    return out


def reassign_partitions(
    generate: bool = typer.Option(False, "--generate", help="Propose an assignment for --topics-to-move-json-file"),
    execute: bool = typer.Option(False, "--execute", help="Start the reassignment in --reassignment-json-file"),
    verify: bool = typer.Option(False, "--verify", help="Check the reassignment in --reassignment-json-file"),
    list_: bool = typer.Option(False, "--list", help="List the ongoing reassignments"),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel the reassignments in --reassignment-json-file"),
    reassignment_json_file: Path | None = typer.Option(None, "--reassignment-json-file", show_default=False),
    topics_to_move_json_file: Path | None = typer.Option(None, "--topics-to-move-json-file", show_default=False),
    broker_list: str | None = typer.Option(None, "--broker-list", help="Brokers for --generate: 1,2,3", show_default=False),
    throttle: int = typer.Option(
        -1, "--throttle", help="With --execute: throttle the moving replicas' replication to this many bytes/s"
    ),
    additional: bool = typer.Option(
        False, "--additional", help="With --execute: start it even though other reassignments are in progress"
    ),
    preserve_throttles: bool = typer.Option(
        False, "--preserve-throttles", help="With --verify: do not remove the throttles once the reassignment is done"
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Move partitions between brokers (change replicas and replication factors)."""
    from zurau.client.admin import AdminClient
    from zurau.client.types import TopicPartition

    actions = [a for a, on in (("generate", generate), ("execute", execute), ("verify", verify), ("list", list_), ("cancel", cancel)) if on]
    if len(actions) != 1:
        raise typer.BadParameter("give exactly one of --generate, --execute, --verify, --list and --cancel")
    action = actions[0]
    if action in ("execute", "verify", "cancel") and reassignment_json_file is None:
        raise typer.BadParameter(f"--{action} needs --reassignment-json-file")
    if action != "execute" and (throttle >= 0 or additional):
        raise typer.BadParameter("--throttle and --additional go with --execute")
    if action != "verify" and preserve_throttles:
        raise typer.BadParameter("--preserve-throttles goes with --verify")
    brokers: list[int] = []
    if action == "generate":
        if topics_to_move_json_file is None or not broker_list:
            raise typer.BadParameter("--generate needs --topics-to-move-json-file and --broker-list")
        try:
            brokers = [int(b) for b in broker_list.split(",") if b.strip()]
        except ValueError:
            raise typer.BadParameter(f"--broker-list must be broker ids separated by commas: {broker_list!r}") from None
        if not brokers or len(set(brokers)) != len(brokers):
            raise typer.BadParameter(f"--broker-list must name distinct brokers: {broker_list!r}")
    cfg = client_config(bootstrap_server, command_config)

    async def current_assignment(admin: AdminClient, topics: list[str]) -> list[tuple[str, int, list[int]]]:
        metas = await admin.topic_metadata(topics)
        out = []
        for name in topics:
            meta = metas[name]
            if meta.error is not None:
                raise CommandError(f"topic {name}: {describe_error(meta.error)}")
            out += [(name, p.partition, list(p.replicas)) for p in meta.partitions]
        return out

    async def main() -> list[str]:
        async with AdminClient(cfg) as admin:
            if action == "list":
                ongoing = await admin.list_partition_reassignments()
                if not ongoing:
                    return ["No partition reassignments found."]
                lines = ["Current partition reassignments:"]
                for tp in sorted(ongoing, key=lambda tp: (tp.topic, tp.partition)):
                    r = ongoing[tp]
                    lines.append(
                        f"{tp.topic}-{tp.partition}: replicas: {_ids(r.replicas)}. adding: {_ids(r.adding_replicas)}. "
                        f"removing: {_ids(r.removing_replicas)}."
                    )
                return lines
            if action == "generate":
                assert topics_to_move_json_file is not None
                doc = _read_json(topics_to_move_json_file)
                entries = doc.get("topics") if isinstance(doc, dict) else None
                if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("topic"), str) for e in entries):
                    raise CommandError(f"{topics_to_move_json_file}: expected {{\"topics\": [{{\"topic\": ...}}]}}")
                topics = list(dict.fromkeys(e["topic"] for e in entries))
                current = await current_assignment(admin, topics)
                proposed = propose(current, brokers, random.Random())
                return [
                    "Current partition replica assignment",
                    assignment_json(current),
                    "",
                    "Proposed partition reassignment configuration",
                    assignment_json(proposed),
                ]
            assert reassignment_json_file is not None
            wanted = parse_reassignment(reassignment_json_file)
            tps = {TopicPartition(t, p): replicas for t, p, replicas in wanted}
            if action == "execute":
                from zurau.cli import reassignment_throttle as throttles

                topics = list(dict.fromkeys(t for t, _p, _r in wanted))
                current = await current_assignment(admin, topics)
                known = {(t, p) for t, p, _r in current}
                for t, p, _r in wanted:
                    if (t, p) not in known:
                        raise CommandError(f"Topic {t} has no partition {p}")
                in_progress = await admin.list_partition_reassignments()
                if in_progress and not additional:
                    raise CommandError(
                        "Cannot execute because there is an existing partition assignment.  Use --additional to "
                        "override this and create a new partition assignment in addition to the existing one. The "
                        "--additional flag can also be used to change the throttle by resubmitting the current "
                        "reassignment."
                    )
                mine = [(t, p, r) for t, p, r in current if TopicPartition(t, p) in tps]
                throttle_lines: list[str] = []
                if throttle >= 0:
                    typer.echo(throttles.YOU_MUST_VERIFY)
                    replicas_now = {TopicPartition(t, p): r for t, p, r in current}
                    moves = throttles.move_map(in_progress, tps, replicas_now)
                    throttle_lines = await throttles.set_throttles(admin, moves, throttle)
                results = await admin.alter_partition_reassignments(tps)
                errors = [(tp, e) for tp, e in results.items() if e is not None]
                lines = [
                    "Current partition replica assignment",
                    "",
                    assignment_json(mine),
                    "",
                    "Save this to use as the --reassignment-json-file option during rollback",
                ]
                if errors:
                    for line in lines:
                        typer.echo(line)
                    detail = "; ".join(f"{tp.topic}-{tp.partition}: {describe_error(e)}" for tp, e in errors)
                    raise CommandError(f"Error reassigning partition(s): {detail}")
                names = ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps, key=lambda tp: (tp.topic, tp.partition)))
                lines += throttle_lines
                lines.append(f"Successfully started partition reassignment{'s' if len(tps) != 1 else ''} for {names}")
                return lines
            ongoing = await admin.list_partition_reassignments(list(tps))
            if action == "cancel":
                active = [tp for tp in tps if tp in ongoing]
                if not active:
                    return ["None of the specified partition reassignments are active."]
                results = await admin.alter_partition_reassignments(dict.fromkeys(active))
                errors = [(tp, e) for tp, e in results.items() if e is not None]
                if errors:
                    detail = "; ".join(f"{tp.topic}-{tp.partition}: {describe_error(e)}" for tp, e in errors)
                    raise CommandError(f"Error cancelling partition reassignment(s): {detail}")
                names = ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(active, key=lambda tp: (tp.topic, tp.partition)))
                return [f"Successfully cancelled partition reassignment{'s' if len(active) != 1 else ''} for: {names}"]
            # verify
            topics = list(dict.fromkeys(tp.topic for tp in tps))
            current_replicas = {
                TopicPartition(t, p): r for t, p, r in await current_assignment(admin, topics)
            }
            lines = ["Status of partition reassignment:"]
            for tp in sorted(tps, key=lambda tp: (tp.topic, tp.partition)):
                name = f"{tp.topic}-{tp.partition}"
                if tp in ongoing:
                    lines.append(f"Reassignment of partition {name} is still in progress.")
                elif current_replicas.get(tp) == tps[tp]:
                    lines.append(f"Reassignment of partition {name} is completed.")
                else:
                    now = current_replicas.get(tp)
                    lines.append(
                        f"There is no active reassignment of partition {name}, but replica set is "
                        f"{_ids(now or [])} rather than {_ids(tps[tp])}."
                    )
            if not preserve_throttles and not any(tp in ongoing for tp in tps):
                from zurau.cli.reassignment_throttle import clear_throttles

                lines += await clear_throttles(admin, topics)
            return lines

    for line in run(main):
        typer.echo(line)


def _ids(ids: Any) -> str:
    return ",".join(str(i) for i in ids)
