"""``zurau balancer``: the self-balancing cluster, as Confluent's ``kafka-rebalance-cluster`` and
``kafka-remove-brokers`` offer it.

* ``status``: per broker its replicas, leaderships, bytes on disk and disk capacity (Metadata and
  DescribeLogDirs) and its state (removing; offline: not in Metadata yet holding replicas;
  unreachable: its log dirs did not answer; serving); the reassignments in flight with the bytes
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
from zurau.client.balancer_view import ClusterView, read_cluster, status_of

if TYPE_CHECKING:
    from zurau.metadata.controller.balancer.model import ClusterModel
    from zurau.metadata.controller.balancer.options import BalancerOptions

app = typer.Typer(help="The self-balancing cluster: status, plans, rebalances and broker removal.",
                  no_args_is_help=True)


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
        BrokerModel(b.id, b.rack, b.reachable, None, bool(b.removing),
                    b.capacity_bytes if b.capacity_bytes > 0 else None)
        for b in view.brokers.values()
    ]
    largest: dict[tuple[str, int], int] = {}  # a partition's size: its largest replica's (one pass)
    for (t, p, _), n in view.sizes.items():
        if n > largest.get((t, p), -1):
            largest[(t, p)] = n
    parts = []
    for (topic, index), (replicas, isr, leader) in view.partitions.items():
        size = largest.get((topic, index), 0)
        move = view.moves.get((topic, index))
        target = tuple(r for r in replicas if move is None or r not in move.removing_replicas)
        parts.append(PartitionModel(topic, index, target, isr, leader, view.topic_min_isr.get(topic, 1),
                                    move is not None, PartitionLoad(size)))
    return ClusterModel.of(brokers, parts), options_from_config(get)


def plan_of(view: ClusterView) -> dict[str, Any]:
    """The dry-run plan of a view as a JSON-able document: the controller's planner on
    :func:`model_of`'s model. ``reassignments`` (``topic``, ``partition``, ``from``, ``to``,
    ``bytes``, ``reasons``), ``leadership_moves`` (``topic``, ``partition``, ``from``, ``to``,
    ``reasons``), ``unresolved`` (what no move can fix), ``bytes_to_move`` and
    ``estimated_seconds`` (at the replication throttle; None without one). This is the
    :data:`~zurau.client.balancer_view.Planner` the console is given: it may not import the
    planner itself."""
    from zurau.metadata.controller.balancer.planner import plan

    model, options = model_of(view)
    proposal = plan(model, options)
    return {
        "reassignments": [
            {"topic": r.topic, "partition": r.partition, "from": list(r.original), "to": list(r.replicas),
             "bytes": r.size_bytes, "reasons": list(r.reasons)}
            for r in proposal.reassignments
        ],
        "leadership_moves": [
            {"topic": m.topic, "partition": m.partition, "from": m.from_leader, "to": m.to_leader,
             "reasons": list(m.reasons)}
            for m in proposal.leadership_moves
        ],
        "unresolved": list(proposal.unresolved),
        "bytes_to_move": proposal.bytes_to_move,
        "estimated_seconds": proposal.estimated_seconds(options.throttle_bytes_per_second) or None,
    }


def _gib(n: int) -> str:
    return "-" if n < 0 else f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _read(cfg: Any) -> ClusterView:
    async def main() -> ClusterView:
        from zurau.client.admin import AdminClient

        async with AdminClient(cfg) as admin:
            return await read_cluster(admin)

    return run(main)


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
    doc = status_of(_read(client_config(bootstrap_server, command_config)))
    if fmt is not OutputFormat.table:
        print_json(doc)
        return
    brokers, moves = doc["brokers"], doc["moves"]
    notice(f"balancer enabled: {doc['enabled']}; "
           f"rebalance under way: {str(doc['rebalancing']).lower()}; moves in flight: {len(moves)}")
    print_table(
        ["BROKER", "RACK", "REPLICAS", "LEADERS", "DISK", "CAPACITY", "STATE"],
        [[b["id"], b["rack"] or "-", b["replicas"], b["leaders"], _gib(b["disk_bytes"]), _gib(b["capacity_bytes"]),
          "removing" if b["removing"] else "offline" if not b["live"] else "unreachable" if not b["reachable"]
          else "serving"] for b in brokers],
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
    doc = plan_of(_read(client_config(bootstrap_server, command_config)))
    if fmt is not OutputFormat.table:
        print_json(doc)
        return
    moves, leaders = doc["reassignments"], doc["leadership_moves"]
    if not moves and not leaders:
        notice("The cluster is balanced: the plan proposes no move.")
    if moves:
        print_table(["TOPIC", "PARTITION", "FROM", "TO", "SIZE", "WHY"],
                    [[m["topic"], m["partition"], ",".join(map(str, m["from"])), ",".join(map(str, m["to"])),
                      _gib(m["bytes"]), "; ".join(m["reasons"])] for m in moves])
    if leaders:
        print_table(["TOPIC", "PARTITION", "LEADER FROM", "LEADER TO", "WHY"],
                    [[m["topic"], m["partition"], m["from"], m["to"], "; ".join(m["reasons"])] for m in leaders])
    for problem in doc["unresolved"]:
        notice(f"unresolved: {problem}")
    seconds = doc["estimated_seconds"]
    if moves:
        notice(f"{_gib(doc['bytes_to_move'])} to copy" + (f", about {seconds:.0f} s at the throttle" if seconds else ""))


# ---------------------------------------------------------------------------- rebalance
@app.command("rebalance")
def rebalance(
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Start a rebalance now (whatever the trigger config says); `status` follows it."""
    cfg = client_config(bootstrap_server, command_config)

    async def main() -> None:
        from zurau.client.admin import AdminClient
        from zurau.client.balancer_view import request_rebalance

        async with AdminClient(cfg) as admin:
            await request_rebalance(admin)

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

        from zurau.client.admin import AdminClient
        from zurau.client.balancer_view import hosted_replicas
        from zurau.client.balancer_view import remove_broker as mark_removing

        async with AdminClient(cfg) as admin:
            await mark_removing(admin, broker_id)
            if not wait:
                return -1
            deadline = time.monotonic() + timeout
            while True:
                left = await hosted_replicas(admin, broker_id)
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
        from zurau.client.admin import AdminClient
        from zurau.client.balancer_view import cancel as cancel_all

        async with AdminClient(cfg) as admin:
            return await cancel_all(admin)

    removing, cancelled = run(main)
    print(f"Balancer cancelled: {cancelled} reassignment(s) cancelled"
          + (f", removal of broker(s) {','.join(map(str, removing))} ended." if removing else "."))
