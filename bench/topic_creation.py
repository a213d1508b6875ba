"""Creating one topic of many partitions (issue 34): CreateTopics of 1,000 and 9,999 partitions.

    .venv/bin/python -m bench.topic_creation [--only one,cluster] [--runs 5]
        [--partitions 1000] [--cluster-partitions 1000,9999] [--brokers zurau,tansu]
        [--zurau-src OTHER/src]

9,999 is the most partitions one CreateTopics may create: Kafka's KRaft controller, and Zurau's,
refuse a request of more than 10,000 records (the TopicRecord counts), so the issue's "10,000 in
one request" is measured as 9,999 (until 2026-11-29 Zurau took 10,000; the work is the same).

``--zurau-src`` runs the Zurau of another checkout (``git archive HEAD src | tar -x -C /tmp/base``
for a before/after on the same machine).

* ``one``: one broker process (:class:`bench._brokers.ZurauBroker`, log on disk, and
  :class:`bench._brokers.TansuBroker`, in memory), ``--partitions`` partitions, RF 1;
* ``cluster``: three combined Zurau nodes (:class:`zurau.testing.cluster_process.ClusterProcesses`),
  each count of ``--cluster-partitions`` with RF 1 (the controller spreads the leaders over the
  three), the request sent to a node that is not the active controller (it forwards).

Per run a new topic is created in ONE CreateTopics request (``timeout_ms`` 60 s) on the broker or
cluster that already holds the previous runs' topics (a fresh one per run would mostly time the
start-up). Three times per run, all from the moment the request is sent (this process is the
client: Zurau's asyncio ``BrokerConnection``, one request in flight):

* ``response``: the CreateTopics response arrived (error code 0);
* ``leaders``: a Metadata request for the topic (polled every 10 ms) lists every partition with a
  leader (>= 0) and no error, on every node (on the cluster: each node's own Metadata);
* ``ready``: every partition's leader answers ListOffsets(latest) for it without error (the log
  exists and the leader serves it; one request per leader, polled every 10 ms);

and the CPU time the broker processes used from the request to ``ready`` (less sensitive than the
wall times to other processes on a shared machine).

Reports the median of ``--runs`` runs (and the worst), and Zurau / Tansu for the one-node case.
The machine is shared: the report gives the load average before each case.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench._brokers import BROKERS, BrokerUnderTest, ZurauBroker, process_cpu_seconds
from bench._provenance import provenance_line
from zurau.client.connection import BrokerConnection
from zurau.protocol.api_keys import ApiKey
from zurau.testing.broker_process import HOST
from zurau.testing.cluster_process import ClusterProcesses

POLL_S = 0.01
LIMIT_S = 120.0  # per run: slower than this fails the run
LATEST = -1  # ListOffsets timestamp: the log end offset


@dataclass
class Run:
    response_s: float
    leaders_s: float
    ready_s: float
    cpu_s: float = 0.0  # CPU the broker processes used from the request to ``ready``


@dataclass
class Case:
    name: str
    broker: str
    partitions: int
    runs: list[Run] = field(default_factory=list)
    load: str = ""


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def connect(port: int, timeout: float = 10.0) -> BrokerConnection:
    conn = BrokerConnection(HOST, port, client_id="bench-topic-creation", request_timeout=LIMIT_S)
    return await conn.connect(timeout)


async def create_topic(conn: BrokerConnection, name: str, partitions: int) -> None:
    """One CreateTopics request of one topic; raises on a non-zero error code."""
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": int(LIMIT_S * 1000) // 2,
        "validate_only": False,
    }
    resp = await conn.request(ApiKey.CREATE_TOPICS, body, timeout=LIMIT_S)
    (topic,) = resp["topics"]
    if topic["error_code"]:
        raise RuntimeError(f"CreateTopics {name}: error {topic['error_code']} {topic.get('error_message')}")


async def leaders_of(conn: BrokerConnection, name: str) -> dict[int, int] | None:
    """Partition -> leader id from one Metadata request, or None while any lacks a leader."""
    version = conn.version(ApiKey.METADATA, 12, min_version=1)
    resp = await conn.request(
        ApiKey.METADATA, {"topics": [{"name": name}], "allow_auto_topic_creation": False}, version=version
    )
    (topic,) = resp["topics"]
    if topic["error_code"]:
        return None
    out: dict[int, int] = {}
    for p in topic["partitions"]:
        if p["error_code"] or p["leader_id"] < 0:
            return None
        out[p["partition_index"]] = p["leader_id"]
    return out


async def all_served(conns: dict[int, BrokerConnection], name: str, leaders: dict[int, int]) -> bool:
    """Whether every partition's leader answers ListOffsets(latest) for it without error."""
    by_leader: dict[int, list[int]] = {}
    for p, leader in leaders.items():
        by_leader.setdefault(leader, []).append(p)
    for leader, parts in by_leader.items():
        conn = conns[leader]
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": LATEST} for p in parts
                    ],
                }
            ],
        }
        resp = await conn.request(ApiKey.LIST_OFFSETS, body, version=conn.version(ApiKey.LIST_OFFSETS, 7))
        if any(p["error_code"] for t in resp["topics"] for p in t["partitions"]):
            return False
    return True


async def timed_create(conns: dict[int, BrokerConnection], via: int, name: str, partitions: int) -> Run:
    """Create ``name`` through node ``via``; the three times of :class:`Run`."""
    t0 = time.perf_counter()
    deadline = time.monotonic() + LIMIT_S
    await create_topic(conns[via], name, partitions)
    response = time.perf_counter() - t0
    leaders: dict[int, int] | None = None
    pending = set(conns)
    while pending:  # every node's Metadata lists every partition with a leader
        for node in list(pending):
            got = await leaders_of(conns[node], name)
            if got is not None and len(got) == partitions:
                pending.discard(node)
                leaders = got
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: nodes {sorted(pending)} lack leaders after {LIMIT_S:.0f} s")
            await asyncio.sleep(POLL_S)
    leaders_s = time.perf_counter() - t0
    assert leaders is not None
    while not await all_served(conns, name, leaders):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: not every partition served after {LIMIT_S:.0f} s")
        await asyncio.sleep(POLL_S)
    return Run(response, leaders_s, time.perf_counter() - t0)


def cpu_of(pids: list[int]) -> float:
    return sum(process_cpu_seconds(pid) for pid in pids)


async def runs_on(
    ports: dict[int, int], via: int, partitions: int, runs: int, case: Case, pids: list[int]
) -> None:
    conns = {node: await connect(port) for node, port in ports.items()}
    try:
        await timed_create(conns, via, f"warm-{uuid.uuid4().hex[:6]}", 1)
        for i in range(runs):
            await asyncio.sleep(1.0)  # let the previous run's deferred flushes settle
            cpu0 = cpu_of(pids)
            run = await timed_create(conns, via, f"t{partitions}-{i}-{uuid.uuid4().hex[:6]}", partitions)
            run.cpu_s = cpu_of(pids) - cpu0
            say(
                f"{case.name} {case.broker}: response {run.response_s * 1000:.0f} ms, leaders "
                f"{run.leaders_s * 1000:.0f} ms, ready {run.ready_s * 1000:.0f} ms, "
                f"broker CPU {run.cpu_s * 1000:.0f} ms"
            )
            case.runs.append(run)
    finally:
        for c in conns.values():
            await c.close()


def one_node_case(
    kind: type[BrokerUnderTest], partitions: int, runs: int, workdir: Path, src: Path | None
) -> Case:
    case = Case("one node", kind.name, partitions, load=_load())
    broker = ZurauBroker(workdir, src) if kind is ZurauBroker else kind(workdir)
    broker.start()
    try:
        node_id, _controller = asyncio.run(_ids(broker.port))
        asyncio.run(runs_on({node_id: broker.port}, node_id, partitions, runs, case, [broker.pid]))
    finally:
        broker.stop(120)
    return case


async def _ids(port: int) -> tuple[int, int]:
    """(the id of the node at ``port``'s first listed broker, the controller id) from Metadata."""
    conn = await connect(port)
    try:
        resp = await conn.request(
            ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False}, version=1
        )
        return int(resp["brokers"][0]["node_id"]), int(resp["controller_id"])
    finally:
        await conn.close()


def cluster_case(partitions: int, runs: int, workdir: Path, src: Path | None) -> Case:
    case = Case("3 nodes", "Zurau", partitions, load=_load())
    root = workdir / f"cluster-{partitions}"
    env_before = os.environ.get("PYTHONPATH")
    if src is not None:  # the nodes inherit this process's environment
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env_before) if p)
    try:
        cluster = ClusterProcesses(root, controllers=3)
        cluster.start(120)
    finally:
        if src is not None:
            if env_before is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = env_before
    try:
        ports = {i: cluster.nodes[i].port for i in cluster.broker_ids}
        _first, controller = asyncio.run(_ids(ports[1]))
        via = next(i for i in cluster.broker_ids if i != controller)
        pids = [cluster.nodes[i].pid for i in cluster.nodes]
        asyncio.run(runs_on(ports, via, partitions, runs, case, pids))
    finally:
        cluster.close(120)
    return case


def _ms(x: float) -> str:
    return f"{x * 1000:,.0f}"


def report(cases: list[Case]) -> str:
    lines = [
        "| case | broker | partitions | response ms (median / worst) | leaders in Metadata ms | "
        "served (ListOffsets) ms | broker CPU ms | runs | load 1/5 min |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        cols = []
        for attr in ("response_s", "leaders_s", "ready_s", "cpu_s"):
            xs = [getattr(r, attr) for r in c.runs]
            cols.append(f"{_ms(statistics.median(xs))} / {_ms(max(xs))}" if xs else "-")
        lines.append(
            f"| {c.name} | {c.broker} | {c.partitions:,} | "
            + " | ".join(cols)
            + f" | {len(c.runs)} | {c.load} |"
        )
    by_key = {(c.name, c.broker, c.partitions): c for c in cases}
    for c in cases:
        t = by_key.get((c.name, "Tansu", c.partitions))
        if c.broker == "Zurau" and t is not None and c.runs and t.runs:
            for attr, what in (("response_s", "response"), ("leaders_s", "leaders"), ("ready_s", "served")):
                z = statistics.median(getattr(r, attr) for r in c.runs)
                tv = statistics.median(getattr(r, attr) for r in t.runs)
                lines.append(f"\n{c.name}, {c.partitions:,} partitions, {what}: Zurau/Tansu = {z / tv:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="one,cluster")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=1000, help="one-node case")
    ap.add_argument("--cluster-partitions", default="1000,9999")
    ap.add_argument("--brokers", default="zurau,tansu", help="one-node case")
    ap.add_argument("--zurau-src", type=Path, default=None)
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="bench-topic-creation-"))
    cases: list[Case] = []
    try:
        if "one" in only:
            for name in args.brokers.split(","):
                cases.append(
                    one_node_case(BROKERS[name], args.partitions, args.runs, workdir, args.zurau_src)
                )
        if "cluster" in only:
            for n in (int(x) for x in args.cluster_partitions.split(",") if x):
                cases.append(cluster_case(n, args.runs, workdir, args.zurau_src))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(provenance_line(clients=[]) + "\n")
    print(report(cases))


if __name__ == "__main__":
    main()
