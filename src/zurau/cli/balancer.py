"""``zurau balancer``: the self-balancing cluster, as Confluent's ``kafka-rebalance-cluster`` and
``kafka-remove-brokers`` offer it.

* ``status``: per broker its replicas, leaderships, bytes on disk and disk capacity (Metadata and
  DescribeLogDirs) and whether it is being removed; the reassignments in flight with the bytes
  their new replicas hold against their leader's; whether a rebalance is under way.
* ``plan``: a dry run, the moves the balancer would make now (the same pure planner the active
  controller runs, on the same inputs: metadata, log-dir sizes and the ``confluent.balancer.*``
  configs in effect on the controller).
* ``rebalance``: starts a rebalance (the cluster-default broker config
  ``zurau.balancer.rebalance.requested=true``; the controller clears it when done).
* ``remove-broker --broker-id N [--wait]``: marks N for removal (broker config
  ``zurau.balancer.removing=true``); the controller drains every replica and leadership off it;
  with ``--wait`` the command returns once N hosts nothing (then stop it and ``zurau cluster
  unregister --id N``).
* ``cancel``: ends a rebalance and every removal, and cancels the reassignments in flight (their
  partitions go back to their replicas before the move).

Every change goes through Kafka's admin APIs (IncrementalAlterConfigs, AlterPartitionReassignments),
so it is kept in the metadata log and carried on by whichever controller is active.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, CommandError, client_config, run
from zurau.cli.output import (
    FormatOption,
    JsonOption,
    OutputFormat,
    notice,
    print_json,
    print_table,
    resolve_format,
)

if TYPE_CHECKING:
    from zurau.client.admin import AdminClient
    from zurau.metadata.controller.balancer.model import ClusterModel
    from zurau.metadata.controller.balancer.options import BalancerOptions

app = typer.Typer(help="The self-balancing cluster: status, plans, rebalances and broker removal.",
                  no_args_is_help=True)

REMOVING = "zurau.balancer.removing"
REBALANCE_REQUESTED = "zurau.balancer.rebalance.requested"


@dataclass
class BrokerLoad:
    id: int
    rack: str | None = None
    replicas: int = 0
    leaders: int = 0
    disk_bytes: int = 0
    capacity_bytes: int = -1
    removing: bool = False
    reachable: bool = True


@dataclass
class ClusterView:
    """What the commands read of the cluster: brokers, partitions and their sizes, moves in flight,
    and the effective configs of one broker (the balancer's settings)."""

    brokers: dict[int, BrokerLoad]
    partitions: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], int]]  # replicas, isr, leader
    sizes: dict[tuple[str, int, int], int]
    moves: dict[tuple[str, int], Any]
    configs: dict[str, str | None] = field(default_factory=dict)
    topic_min_isr: dict[str, int] = field(default_factory=dict)


async def read_cluster(admin: AdminClient) -> ClusterView:
    from zurau.client.admin import ConfigResource, ResourceType

    md = await admin.cluster.refresh_metadata(None)
    brokers = {b: BrokerLoad(b, n.rack) for b, n in md.brokers.items()}
    partitions: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], int]] = {}
    for name, t in md.topics.items():
        for p in t.partitions:
            partitions[(name, p.partition)] = (tuple(p.replicas), tuple(p.isr), p.leader)
            for r in p.replicas:
                brokers.setdefault(r, BrokerLoad(r, reachable=False)).replicas += 1
            if p.leader in brokers:
                brokers[p.leader].leaders += 1
    dirs = await admin.describe_log_dirs(sorted(md.brokers))
    sizes: dict[tuple[str, int, int], int] = {}
    for b, result in dirs.items():
        if isinstance(result, Exception):
            brokers[b].reachable = False
            continue
        capacity = 0
        for d in result:
            capacity += max(0, d.total_bytes)
            for tp, n in d.replica_sizes.items():
                sizes[(tp.topic, tp.partition, b)] = n
                brokers[b].disk_bytes += n
        brokers[b].capacity_bytes = capacity or -1
    resources = [ConfigResource(ResourceType.BROKER, str(b)) for b in sorted(md.brokers)]
    described = await admin.describe_configs(resources)
    configs: dict[str, str | None] = {}
    for res, entries in described.items():
        if isinstance(entries, Exception):
            continue
        values = {e.name: e.value for e in entries}
        brokers[int(res.name)].removing = str(values.get(REMOVING, "false")).lower() == "true"
        if not configs:
            configs = values
    topics = [ConfigResource(ResourceType.TOPIC, t) for t in md.topics]
    topic_min_isr: dict[str, int] = {}
    for res, entries in (await admin.describe_configs(topics, ["min.insync.replicas"])).items():
        if not isinstance(entries, Exception):
            for e in entries:
                if e.value is not None:
                    topic_min_isr[res.name] = int(e.value)
    moves = await admin.list_partition_reassignments()
    return ClusterView(brokers, partitions, sizes, {(tp.topic, tp.partition): m for tp, m in moves.items()},
                       configs, topic_min_isr)


def model_of(view: ClusterView) -> tuple[ClusterModel, BalancerOptions]:
    """The planner's model and options from what the cluster reported (see the module docstring)."""
    from zurau.config import BROKER_CONFIGS
    from zurau.metadata.controller.balancer.model import (
        BrokerModel,
        ClusterModel,
        PartitionLoad,
        PartitionModel,
    )
    from zurau.metadata.controller.balancer.options import options_from_config

    def get(name: str) -> Any:
        d = BROKER_CONFIGS[name]
        raw = view.configs.get(name)
        return d.parse(raw) if raw is not None else d.default

    brokers = [
        BrokerModel(b.id, b.rack, b.reachable, None, b.removing, b.capacity_bytes if b.capacity_bytes > 0 else None)
        for b in view.brokers.values()
    ]
    parts = []
    for (topic, index), (replicas, isr, leader) in view.partitions.items():
        size = max((n for (t, p, _), n in view.sizes.items() if t == topic and p == index), default=0)
        move = view.moves.get((topic, index))
        target = tuple(r for r in replicas if move is None or r not in move.removing_replicas)
        parts.append(PartitionModel(topic, index, target, isr, leader, view.topic_min_isr.get(topic, 1),
                                    move is not None, PartitionLoad(size)))
    return ClusterModel.of(brokers, parts), options_from_config(get)


def _gib(n: int) -> str:
    return "-" if n < 0 else f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------- status
@app.command("status")
def status(
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Per broker: replicas, leaders, disk, removal; the moves in flight and their progress."""
    fmt = resolve_format(fmt, as_json)
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> ClusterView:
        from zurau.client.admin import AdminClient

        async with AdminClient(cfg) as admin:
            return await read_cluster(admin)

    view = run(main)
    moves: list[dict[str, Any]] = []
    for (topic, index), m in sorted(view.moves.items()):
        leader = view.partitions.get((topic, index), ((), (), -1))[2]
        total = view.sizes.get((topic, index, leader), 0)
        copied = min((view.sizes.get((topic, index, b), 0) for b in m.adding_replicas), default=total)
        moves.append({"topic": topic, "partition": index, "adding": list(m.adding_replicas),
                      "removing": list(m.removing_replicas), "copied_bytes": copied, "total_bytes": total})
    brokers = [vars(b) for b in sorted(view.brokers.values(), key=lambda b: b.id)]
    rebalancing = str(view.configs.get(REBALANCE_REQUESTED, "false")).lower() == "true"
    if fmt is not OutputFormat.table:
        print_json({"enabled": view.configs.get("confluent.balancer.enable"), "rebalancing": rebalancing,
                    "brokers": brokers, "moves": moves})
        return
    notice(f"balancer enabled: {view.configs.get('confluent.balancer.enable')}; "
           f"rebalance under way: {str(rebalancing).lower()}; moves in flight: {len(moves)}")
    print_table(
        ["BROKER", "RACK", "REPLICAS", "LEADERS", "DISK", "CAPACITY", "STATE"],
        [[b["id"], b["rack"] or "-", b["replicas"], b["leaders"], _gib(b["disk_bytes"]), _gib(b["capacity_bytes"]),
          "removing" if b["removing"] else "unreachable" if not b["reachable"] else "serving"] for b in brokers],
    )
    if moves:
        print_table(
            ["TOPIC", "PARTITION", "ADDING", "REMOVING", "PROGRESS"],
            [[m["topic"], m["partition"], ",".join(map(str, m["adding"])), ",".join(map(str, m["removing"])),
              f"{100 * m['copied_bytes'] // max(1, m['total_bytes'])}%"] for m in moves],
        )


# ---------------------------------------------------------------------------- plan
@app.command("plan")
def plan_command(
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Dry run: the moves a rebalance would make now (nothing is changed)."""
    fmt = resolve_format(fmt, as_json)
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> ClusterView:
        from zurau.client.admin import AdminClient

        async with AdminClient(cfg) as admin:
            return await read_cluster(admin)

    from zurau.metadata.controller.balancer.planner import plan

    model, options = model_of(run(main))
    proposal = plan(model, options)
    moves: list[dict[str, Any]] = [{"topic": r.topic, "partition": r.partition, "from": list(r.original), "to": list(r.replicas),
              "bytes": r.size_bytes, "reasons": list(r.reasons)} for r in proposal.reassignments]
    leaders: list[dict[str, Any]] = [{"topic": m.topic, "partition": m.partition, "from": m.from_leader, "to": m.to_leader,
                "reasons": list(m.reasons)} for m in proposal.leadership_moves]
    if fmt is not OutputFormat.table:
        print_json({"reassignments": moves, "leadership_moves": leaders, "unresolved": list(proposal.unresolved),
                    "bytes_to_move": proposal.bytes_to_move})
        return
    if proposal.empty:
        notice("The cluster is balanced: the plan proposes no move.")
    if moves:
        print_table(["TOPIC", "PARTITION", "FROM", "TO", "SIZE", "WHY"],
                    [[m["topic"], m["partition"], ",".join(map(str, m["from"])), ",".join(map(str, m["to"])),
                      _gib(m["bytes"]), "; ".join(m["reasons"])] for m in moves])
    if leaders:
        print_table(["TOPIC", "PARTITION", "LEADER FROM", "LEADER TO", "WHY"],
                    [[m["topic"], m["partition"], m["from"], m["to"], "; ".join(m["reasons"])] for m in leaders])
    for problem in proposal.unresolved:
        notice(f"unresolved: {problem}")
    seconds = proposal.estimated_seconds(options.throttle_bytes_per_second)
    if moves:
        notice(f"{_gib(proposal.bytes_to_move)} to copy" + (f", about {seconds:.0f} s at the throttle" if seconds else ""))


async def _alter(admin: AdminClient, changes: dict[Any, list[Any]]) -> None:
    failed = {r.name or "<default>": e for r, e in (await admin.incremental_alter_configs(changes)).items() if e}
    if failed:
        raise CommandError("; ".join(f"broker {n}: {e}" for n, e in failed.items()))


# ---------------------------------------------------------------------------- rebalance
@app.command("rebalance")
def rebalance(
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Start a rebalance now (whatever the trigger config says); `status` follows it."""
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ResourceType

        async with AdminClient(cfg) as admin:
            await _alter(admin, {ConfigResource(ResourceType.BROKER, ""): [
                AlterConfigOp(REBALANCE_REQUESTED, AlterOp.SET, "true")]})

    run(main)
    print("Rebalance requested: the active controller moves replicas until its plan proposes nothing.")


# ---------------------------------------------------------------------------- remove-broker
@app.command("remove-broker")
def remove_broker(
    broker_id: int = typer.Option(..., "--broker-id", help="the broker to drain"),
    wait: bool = typer.Option(False, "--wait", help="return once the broker hosts no replica"),
    timeout: float = typer.Option(3600.0, "--timeout", help="seconds --wait waits at most"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Drain every replica and leadership off a broker, so that it can be stopped and unregistered."""
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> int:
        import asyncio

        from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ResourceType

        async with AdminClient(cfg) as admin:
            await _alter(admin, {ConfigResource(ResourceType.BROKER, str(broker_id)): [
                AlterConfigOp(REMOVING, AlterOp.SET, "true")]})
            if not wait:
                return -1
            deadline = time.monotonic() + timeout
            while True:
                md = await admin.cluster.refresh_metadata(None)
                left = sum(broker_id in p.replicas for t in md.topics.values() for p in t.partitions)
                if left == 0:
                    return 0
                if time.monotonic() > deadline:
                    raise CommandError(f"broker {broker_id} still hosts {left} replica(s) after {timeout:.0f} s")
                await asyncio.sleep(1.0)

    left = run(main)
    if left == 0:
        print(f"Broker {broker_id} hosts no replica: it can be stopped, then unregistered "
              f"(zurau cluster unregister --id {broker_id}).")
    else:
        print(f"Broker {broker_id} is being removed: its replicas move to the other brokers "
              "(zurau balancer status follows it).")


# ---------------------------------------------------------------------------- cancel
@app.command("cancel")
def cancel(
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """End the rebalance and every removal, and cancel the reassignments in flight."""
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> tuple[list[int], int]:
        from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ResourceType

        async with AdminClient(cfg) as admin:
            view = await read_cluster(admin)
            removing = sorted(b.id for b in view.brokers.values() if b.removing)
            changes: dict[Any, list[Any]] = {
                ConfigResource(ResourceType.BROKER, ""): [AlterConfigOp(REBALANCE_REQUESTED, AlterOp.DELETE)]}
            for b in removing:
                changes[ConfigResource(ResourceType.BROKER, str(b))] = [AlterConfigOp(REMOVING, AlterOp.DELETE)]
            await _alter(admin, changes)
            if view.moves:
                from zurau.client.types import TopicPartition

                failed = {tp: e for tp, e in (await admin.alter_partition_reassignments(
                    {TopicPartition(t, p): None for t, p in view.moves})).items() if e}
                if failed:
                    raise CommandError("; ".join(f"{tp.topic}-{tp.partition}: {e}" for tp, e in failed.items()))
            return removing, len(view.moves)

    removing, cancelled = run(main)
    print(f"Balancer cancelled: {cancelled} reassignment(s) cancelled"
          + (f", removal of broker(s) {','.join(map(str, removing))} ended." if removing else "."))
