"""The KRaft metadata quorum: metadata operations, controller failover, catch-up of a new broker.

    .venv/bin/python -m bench.kraft [--only ops,election,catchup] [--rounds 20] [--catchup-topics 2000,5000,10000]

Every cluster is real processes on 127.0.0.1 (:class:`zurau.testing.cluster_process.ClusterProcesses`,
each node ``python -m zurau.cli.main broker start`` with its data under a fresh temporary
directory); this process is the client (Zurau's asyncio ``BrokerConnection``, so each request goes
to exactly the node chosen). The active controller is the Raft leader, found with DescribeQuorum.

* ``ops``: CreateTopics of 1-partition topics (one topic per request) on three combined nodes,
  sent to a node that is not the active controller (it forwards the request to the controller's
  listener) and to the active controller itself, by C workers each with its own connection and
  one request in flight (C = ``--concurrency``, 1 and 16); on a fresh cluster, and on one that
  already has ``--ops-existing`` topics (5,000). A few topics first as a warm-up. Topics/s,
  latency p50/p99, leader elections during the run.
* ``election``: three combined nodes; per round, ``kill -9`` the active controller, then poll
  every survivor with DescribeQuorum (every 15 ms) until one reports a new leader, and, at the same
  time, send CreateTopics to a survivor until one succeeds. Then restart the killed node over its
  data and wait until its log end offset equals the leader's high watermark before the next round.
* ``catchup``: three dedicated controllers and three brokers, per ``--catchup-topics`` count
  (2,000, 5,000, 10,000; a fresh cluster each): create the topics (100 per CreateTopics, 4 in
  flight, through broker 4), then (a) start a brand-new broker (node 7, formatted with the
  cluster id), (b) kill broker 6, delete its data directory, format it again with the same
  cluster id and start it at once, (c) the same with broker 5 but started only once the
  controller has fenced it. Each: time until it serves clients (its client listener opens only
  once the controller has unfenced it, i.e. it has caught up to its registration) and until its
  own Metadata lists every topic.

Processes are stopped by their pids (SIGTERM, then SIGKILL), also when a measurement fails. The
machine is shared: the report says how much CPU other processes used during each measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench._brokers import process_cpu_seconds, system_busy_seconds
from bench._provenance import provenance_line
from zurau.client.connection import BrokerConnection
from zurau.client.errors import ClientError
from zurau.protocol.api_keys import ApiKey
from zurau.testing.broker_process import HOST, free_port
from zurau.testing.cluster_process import ClusterProcesses, NodeProcess

SECTIONS = ("ops", "election", "catchup")
POLL_S = 0.015  # DescribeQuorum / CreateTopics retry interval while waiting for a new leader
ROUND_LIMIT_S = 60.0  # per election round: a failover slower than this fails the round
KEEP = False  # --keep: leave the nodes' data directories and logs behind


# ----------------------------------------------------------------------------- helpers


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank (NaN for no values)."""
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


class Noise:
    """CPU used by processes other than this one and the cluster's nodes over a stretch of time."""

    def __init__(self, pids: Callable[[], Iterable[int]]) -> None:
        self.pids = pids
        self._t0 = 0.0
        self._busy0 = 0.0
        self._ours0: dict[int, float] = {}

    def _ours(self) -> dict[int, float]:
        out = {os.getpid(): process_cpu_seconds(os.getpid())}
        for pid in self.pids():
            try:
                out[pid] = process_cpu_seconds(pid)
            except OSError:
                pass
        return out

    def start(self) -> None:
        self._t0, self._busy0, self._ours0 = time.monotonic(), system_busy_seconds(), self._ours()

    def stop(self) -> Cpu:
        """Cores used on average since :meth:`start`."""
        wall = max(1e-6, time.monotonic() - self._t0)
        busy = system_busy_seconds() - self._busy0
        ours = self._ours()
        me = os.getpid()
        cluster = sum(v - self._ours0.get(pid, 0.0) for pid, v in ours.items() if pid != me)
        client = ours[me] - self._ours0.get(me, 0.0)
        return Cpu(cluster / wall, client / wall, max(0.0, busy - cluster - client) / wall)


@dataclass(frozen=True)
class Cpu:
    """Cores used on average: by the cluster's processes, by this one (the client), by others."""

    cluster: float
    client: float
    others: float


def cluster_pids(cluster: ClusterProcesses, extra: Iterable[NodeProcess] = ()) -> list[int]:
    nodes = [*cluster.nodes.values(), *extra]
    return [n.proc.pid for n in nodes if n.proc is not None and n.proc.poll() is None]


async def connect(port: int, timeout: float = 5.0) -> BrokerConnection:
    return await BrokerConnection(HOST, port, client_id="bench-kraft", request_timeout=30.0).connect(timeout)


@dataclass
class Quorum:
    leader: int
    epoch: int
    high_watermark: int
    voters: dict[int, int]  # voter id -> log end offset


async def describe_quorum(conn: BrokerConnection, timeout: float = 2.0) -> Quorum | None:
    """The quorum as the leader reports it, or None if the node cannot say (no leader known)."""
    body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
    resp = await conn.request(ApiKey.DESCRIBE_QUORUM, body, timeout=timeout)
    if resp["error_code"] or not resp["topics"]:
        return None
    part = resp["topics"][0]["partitions"][0]
    if part["error_code"] or part["leader_id"] < 0:
        return None
    voters = {v["replica_id"]: v["log_end_offset"] for v in part["current_voters"]}
    return Quorum(part["leader_id"], part["leader_epoch"], part["high_watermark"], voters)


async def quorum_of(cluster: ClusterProcesses, timeout: float = 30.0) -> Quorum:
    """Ask the running nodes until one names a leader."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node in cluster.nodes.values():
            if not node.running:
                continue
            try:
                conn = await connect(node.port)
            except ClientError:
                continue
            try:
                q = await describe_quorum(conn)
            except ClientError:
                q = None
            finally:
                await conn.close()
            if q is not None:
                return q
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no node named a quorum leader within {timeout:.0f} s")


async def create_topics(
    conn: BrokerConnection, names: list[str], replication_factor: int, timeout: float = 30.0
) -> dict[str, int]:
    """CreateTopics of 1-partition topics; the error code per topic."""
    body = {
        "topics": [
            {
                "name": n,
                "num_partitions": 1,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [],
            }
            for n in names
        ],
        "timeout_ms": int(timeout * 1000),
        "validate_only": False,
    }
    resp = await conn.request(ApiKey.CREATE_TOPICS, body, timeout=timeout + 5)
    return {t["name"]: t["error_code"] for t in resp["topics"]}


async def metadata_topic_count(conn: BrokerConnection, timeout: float = 30.0) -> tuple[int, set[int]]:
    """(topics listed, broker ids listed) in one Metadata request for all topics."""
    version = conn.version(ApiKey.METADATA, 12, min_version=1)
    resp = await conn.request(
        ApiKey.METADATA,
        {"topics": None, "allow_auto_topic_creation": False},
        version=version,
        timeout=timeout,
    )
    names = {t["name"] for t in resp["topics"] if not t["error_code"] and not t.get("is_internal")}
    return len(names), {b["node_id"] for b in resp["brokers"]}


def log_tail(node: NodeProcess, lines: int = 15) -> str:
    return "\n".join(node.log_text().splitlines()[-lines:])


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


@dataclass
class Report:
    sections: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self, title: str, header: list[str], rows: list[list[str]]) -> None:
        out = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        self.sections.append("\n".join(out) + "\n")


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- 1. metadata ops


@dataclass
class OpsResult:
    route: str
    concurrency: int
    topics: int
    seconds: float
    latencies: list[float]
    errors: int
    cpu: Cpu
    elections: int  # leader epochs that began during the run
    existing: int = 0  # topics that existed before the run


async def run_creates(
    port: int, prefix: str, count: int, concurrency: int, rf: int, limit_s: float
) -> tuple[int, float, list[float], int]:
    """``count`` CreateTopics (one topic each) by ``concurrency`` workers, one connection each:
    (topics created, wall seconds, latencies, errors)."""
    conns = [await connect(port) for _ in range(concurrency)]
    latencies: list[float] = []
    errors = 0
    next_i = 0
    deadline = time.monotonic() + limit_s

    async def worker(conn: BrokerConnection) -> None:
        nonlocal next_i, errors
        while next_i < count and time.monotonic() < deadline:
            name = f"{prefix}-{next_i:06d}"
            next_i += 1
            t0 = time.perf_counter()
            codes = await create_topics(conn, [name], rf)
            dt = time.perf_counter() - t0
            if codes.get(name) == 0:
                latencies.append(dt)
            else:
                errors += 1

    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        wall = time.perf_counter() - t0
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    return len(latencies), wall, latencies, errors


async def ops_case(
    workdir: Path, route: str, concurrency: int, topics: int, rf: int, limit_s: float, existing: int
) -> OpsResult:
    root = Path(tempfile.mkdtemp(prefix=f"ops-{route.split()[0]}-{concurrency}-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3)
    try:
        await asyncio.to_thread(cluster.start)
        if existing:
            q = await quorum_of(cluster)
            port = cluster.nodes[min(i for i in cluster.nodes if i != q.leader)].port
            made = await bulk_create(port, [f"pre-{i:06d}" for i in range(existing)], 100, 4, rf)
            if made.failures:
                raise RuntimeError(f"preloading {existing} topics failed: {made.failures}")
        q = await quorum_of(cluster)
        target = q.leader if route == "active controller" else min(i for i in cluster.nodes if i != q.leader)
        port = cluster.nodes[target].port
        await run_creates(port, "warmup", 20, min(concurrency, 4), rf, limit_s)
        noise = Noise(lambda: cluster_pids(cluster))
        noise.start()
        n, wall, lat, errors = await run_creates(port, "t", topics, concurrency, rf, limit_s)
        cpu = noise.stop()
        after = await quorum_of(cluster)
        return OpsResult(route, concurrency, n, wall, lat, errors, cpu, after.epoch - q.epoch, existing)
    finally:
        await asyncio.to_thread(stop_cluster, cluster)
        if not KEEP:
            shutil.rmtree(root, ignore_errors=True)


async def section_ops(args: argparse.Namespace, workdir: Path, report: Report) -> None:
    results: list[OpsResult] = []
    for existing in args.ops_existing:
        for c in args.concurrency:
            for route in ("forwarded", "active controller"):
                say(
                    f"ops: {args.ops_topics} topics, {c} in flight, via {route}, {existing:,} topics existing"
                )
                r = await ops_case(
                    workdir, route, c, args.ops_topics, args.replication_factor, args.ops_limit, existing
                )
                say(
                    f"ops: {r.topics} topics in {r.seconds:.1f} s = {r.topics / max(r.seconds, 1e-6):.0f}/s, "
                    f"p50 {fmt_ms(pct(r.latencies, 0.5))} ms p99 {fmt_ms(pct(r.latencies, 0.99))} ms, "
                    f"errors {r.errors}, elections {r.elections}, others {r.cpu.others:.2f} cores"
                )
                results.append(r)
    rows = []
    for r in results:
        rows.append(
            [
                f"{r.existing:,}",
                "via a follower (forwarded)" if r.route == "forwarded" else "to the active controller",
                str(r.concurrency),
                f"{r.topics:,}",
                f"{r.topics / max(r.seconds, 1e-6):,.0f}",
                fmt_ms(pct(r.latencies, 0.5)),
                fmt_ms(pct(r.latencies, 0.99)),
                fmt_ms(pct(r.latencies, 1.0)),
                f"{r.cpu.cluster:.2f}",
                f"{r.cpu.client:.2f}",
                f"{r.cpu.others:.2f}",
            ]
        )
        if r.errors:
            report.notes.append(
                f"ops {r.route} x{r.concurrency}: {r.errors} CreateTopics answered with an error"
            )
        if r.elections:
            report.notes.append(
                f"ops {r.route} x{r.concurrency}, {r.existing:,} existing: {r.elections} leader election(s) "
                "during the run"
            )
    report.table(
        f"Metadata operations: CreateTopics, 1 partition, replication factor {args.replication_factor}, "
        "one topic per request, 3 combined nodes",
        [
            "Topics before",
            "Sent",
            "In flight",
            "Topics",
            "Topics/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "Cluster CPU (cores)",
            "Client CPU (cores)",
            "Others' CPU (cores)",
        ],
        rows,
    )


# ----------------------------------------------------------------------------- 2. election


@dataclass
class Round:
    killed: int
    new_leader: int
    epochs: int  # epochs the election took (1: the first candidate won)
    leader_s: float
    create_s: float
    restart_serving_s: float
    caught_up_s: float
    other_cpu: float


async def wait_new_leader(
    ports: dict[int, int], old_leader: int, old_epoch: int, t0: float
) -> tuple[int, int, float]:
    """Poll every node in ``ports`` with DescribeQuorum until one reports a leader other than
    ``old_leader`` in a later epoch: (that leader, its epoch, seconds since t0)."""
    found: asyncio.Future[tuple[int, int, float]] = asyncio.get_running_loop().create_future()

    async def poll(port: int) -> None:
        conn: BrokerConnection | None = None
        try:
            while not found.done():
                try:
                    if conn is None or not conn.connected:
                        conn = await connect(port, timeout=1.0)
                    q = await describe_quorum(conn, timeout=1.0)
                    if q is not None and q.leader != old_leader and q.epoch > old_epoch and not found.done():
                        found.set_result((q.leader, q.epoch, time.perf_counter() - t0))
                        break
                except ClientError:
                    pass
                await asyncio.sleep(POLL_S)
        finally:
            if conn is not None:
                await conn.close()

    tasks = [asyncio.create_task(poll(p)) for p in ports.values()]
    try:
        return await asyncio.wait_for(asyncio.shield(found), ROUND_LIMIT_S)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def wait_create_ok(port: int, prefix: str, rf: int, t0: float) -> float:
    """Send CreateTopics of fresh names to ``port`` until one succeeds: seconds since t0."""
    i = 0
    conn: BrokerConnection | None = None
    deadline = t0 + ROUND_LIMIT_S
    try:
        while time.perf_counter() < deadline:
            name = f"{prefix}-{i}"
            i += 1
            try:
                if conn is None or not conn.connected:
                    conn = await connect(port, timeout=1.0)
                codes = await create_topics(
                    conn, [name], rf, timeout=max(1.0, deadline - time.perf_counter())
                )
                if codes.get(name) == 0:
                    return time.perf_counter() - t0
            except ClientError:
                pass
            await asyncio.sleep(POLL_S)
    finally:
        if conn is not None:
            await conn.close()
    raise TimeoutError(f"no CreateTopics succeeded within {ROUND_LIMIT_S:.0f} s of the kill")


async def wait_caught_up(cluster: ClusterProcesses, node_id: int, timeout: float = 60.0) -> None:
    """Until the leader reports ``node_id``'s log end offset at (or past) the high watermark."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        q = await quorum_of(cluster)
        if q.voters.get(node_id, -1) >= q.high_watermark:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"node {node_id} did not catch up within {timeout:.0f} s")


async def section_election(args: argparse.Namespace, workdir: Path, report: Report) -> None:
    root = Path(tempfile.mkdtemp(prefix="election-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3)
    rounds: list[Round] = []
    try:
        await asyncio.to_thread(cluster.start)
        await quorum_of(cluster)
        conn = await connect(cluster.nodes[1].port)
        await create_topics(conn, ["election-warmup"], args.replication_factor)
        await conn.close()
        for rnd in range(args.rounds):
            q = await quorum_of(cluster)
            leader = q.leader
            survivors = {i: n.port for i, n in cluster.nodes.items() if i != leader}
            noise = Noise(lambda: cluster_pids(cluster))
            noise.start()
            t0 = time.perf_counter()
            cluster.kill(leader)
            create_port = survivors[min(survivors)]
            create_task = asyncio.create_task(
                wait_create_ok(create_port, f"election-{rnd}", args.replication_factor, t0)
            )
            try:
                new_leader, new_epoch, leader_s = await wait_new_leader(survivors, leader, q.epoch, t0)
                create_s = await create_task
            except BaseException:
                create_task.cancel()
                tails = "\n".join(f"node {i}:\n{log_tail(cluster.nodes[i])}" for i in survivors)
                say(f"election round {rnd}: failed; the survivors' logs end with\n{tails}")
                raise
            other = noise.stop().others
            t1 = time.perf_counter()
            node = cluster.nodes[leader]
            node.launch()
            # Its controller listener opens at once and its Raft log catches up; its client
            # listener only once the active controller has registered and unfenced its broker.
            await wait_caught_up(cluster, leader)
            caught_up = time.perf_counter() - t1
            await asyncio.to_thread(node.wait_ready, 60.0)
            serving = time.perf_counter() - t1
            r = Round(leader, new_leader, new_epoch - q.epoch, leader_s, create_s, serving, caught_up, other)
            rounds.append(r)
            say(
                f"election round {rnd + 1}/{args.rounds}: killed {leader} (epoch {q.epoch}); new leader {new_leader} "
                f"in epoch {new_epoch} "
                f"after {leader_s * 1000:.0f} ms, CreateTopics ok after {create_s * 1000:.0f} ms; restarted node "
                f"serving after {serving:.1f} s, caught up after {caught_up:.1f} s; others {other:.0%} of a core"
            )
    finally:
        await asyncio.to_thread(stop_cluster, cluster)
        if not KEEP:
            shutil.rmtree(root, ignore_errors=True)

    if not rounds:
        return

    def row(name: str, values: list[float]) -> list[str]:
        return [
            name,
            fmt_ms(statistics.median(values)),
            fmt_ms(pct(values, 0.9)),
            fmt_ms(max(values)),
            fmt_ms(min(values)),
        ]

    report.table(
        f"Controller failover: kill -9 of the active controller, 3 combined nodes, {len(rounds)} rounds "
        "(ms from the kill)",
        ["Until", "median", "p90", "worst", "best"],
        [
            row("a survivor's DescribeQuorum names a new leader", [r.leader_s for r in rounds]),
            row("a CreateTopics sent to a survivor succeeds", [r.create_s for r in rounds]),
            row(
                "restarted node's metadata log caught up with the leader's (from its restart)",
                [r.caught_up_s for r in rounds],
            ),
            row("restarted node serves clients (from its restart)", [r.restart_serving_s for r in rounds]),
        ],
    )
    split = [r for r in rounds if r.epochs > 1]
    if split:
        report.notes.append(
            f"election: {len(split)} of {len(rounds)} rounds needed more than one election (no candidate won the "
            "first epoch); their times to a new leader: "
            + ", ".join(f"{r.leader_s * 1000:,.0f} ms" for r in split)
        )
    others = [r.other_cpu for r in rounds]
    report.notes.append(
        f"election: other processes used {statistics.median(others):.0%} of a core (median over rounds; "
        f"max {max(others):.0%}) between each kill and the first successful CreateTopics"
    )


# ----------------------------------------------------------------------------- 3. catch-up


def stop_cluster(cluster: ClusterProcesses, extra: Iterable[NodeProcess] = ()) -> None:
    """SIGTERM by pid, SIGKILL after a grace period; the extra nodes first."""
    for node in extra:
        if node.running:
            node.stop(20.0)
        node.kill()
    try:
        cluster.stop()
    finally:
        cluster.kill_all()


def format_node(cluster: ClusterProcesses, config: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "zurau.cli.main",
            "storage",
            "format",
            "--cluster-id",
            cluster.cluster_id,
            "--config",
            str(config),
        ],
        check=True,
        capture_output=True,
    )


def new_broker_node(cluster: ClusterProcesses, template_id: int, node_id: int) -> NodeProcess:
    """A broker that was never part of the cluster: the template broker's properties with a new
    node id, port and data directory, formatted with the cluster id."""
    template = cluster.nodes[template_id]
    port = free_port()
    data = cluster.root / f"node-{node_id}"
    props: list[str] = []
    for line in template.config_path.read_text().splitlines():
        key = line.split("=", 1)[0]
        if key == "node.id":
            line = f"node.id={node_id}"
        elif key in ("listeners", "advertised.listeners"):
            line = f"{key}=PLAINTEXT://{HOST}:{port}"
        elif key == "log.dirs":
            line = f"log.dirs={data}"
        props.append(line)
    config = cluster.root / f"node-{node_id}.properties"
    config.write_text("\n".join(props) + "\n")
    format_node(cluster, config)
    return NodeProcess(node_id, config, port, None, cluster.root / f"node-{node_id}.log")


@dataclass
class CatchUp:
    case: str
    serving_s: float
    all_topics_s: float
    topics_at_serving: int
    dirs_at_serving: int = 0
    dirs_at_end: int = 0


async def wait_unlisted(port: int, node_id: int, limit_s: float) -> None:
    """Until the broker at ``port`` no longer lists broker ``node_id`` in Metadata (fenced)."""
    conn = await connect(port)
    try:
        deadline = time.monotonic() + limit_s
        while node_id in (await metadata_topic_count(conn))[1]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {node_id} still listed {limit_s:.0f} s after its kill")
            await asyncio.sleep(0.05)
    finally:
        await conn.close()


def partition_dirs(node: NodeProcess) -> int:
    """Partition directories in the node's log dir (the metadata log's excluded)."""
    data = node.config_path.parent / f"node-{node.node_id}"
    try:
        return sum(1 for p in data.iterdir() if p.is_dir() and not p.name.startswith("__cluster_metadata"))
    except OSError:
        return 0


async def time_catch_up(node: NodeProcess, topics: int, limit_s: float) -> CatchUp:
    t0 = time.perf_counter()
    node.launch()
    await asyncio.to_thread(node.wait_ready, limit_s)
    serving = time.perf_counter() - t0
    dirs = partition_dirs(node)
    conn = await connect(node.port)
    try:
        first = -1
        while True:
            n, _brokers = await metadata_topic_count(conn)
            if first < 0:
                first = n
            if n >= topics:
                done = time.perf_counter() - t0
                await asyncio.sleep(1.0)
                return CatchUp("", serving, done, first, dirs, partition_dirs(node))
            if time.perf_counter() - t0 > limit_s:
                raise TimeoutError(f"node {node.node_id} lists {n} of {topics} topics after {limit_s:.0f} s")
            await asyncio.sleep(0.05)
    finally:
        await conn.close()


@dataclass
class Creation:
    """Topics created in bulk: how many, how fast, what failed."""

    created: int
    seconds: float
    failures: dict[int, int]  # error code -> topics
    tenths: list[float]  # topics/s over each tenth of the batches, in the order they finished


async def bulk_create(port: int, names: list[str], batch: int, in_flight: int, rf: int) -> Creation:
    """CreateTopics of ``names``, ``batch`` per request, ``in_flight`` requests at a time (one
    connection each), all to the node at ``port``."""
    conns = [await connect(port) for _ in range(in_flight)]
    queue = [names[i : i + batch] for i in range(0, len(names), batch)][::-1]
    done: list[float] = []
    failures: dict[int, int] = {}
    t0 = time.perf_counter()

    async def worker(conn: BrokerConnection) -> None:
        while queue:
            codes = await create_topics(conn, queue.pop(), rf, timeout=120.0)
            for c in codes.values():
                if c:
                    failures[c] = failures.get(c, 0) + 1
            done.append(time.perf_counter() - t0)

    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    seconds = time.perf_counter() - t0
    tenth = max(5, len(done) // 10)
    marks = [0.0, *done]
    tenths = [
        tenth * batch / max(1e-6, marks[min(len(done), i + tenth)] - marks[i])
        for i in range(0, len(done) - tenth + 1, tenth)
    ]
    return Creation(len(names) - sum(failures.values()), seconds, failures, tenths)


@dataclass
class CatchUpRun:
    topics: int
    creation: Creation
    cpu: Cpu
    elections: int  # leader epochs that began during the creation
    records: int
    log_mb: float
    results: list[CatchUp]


async def catchup_case(args: argparse.Namespace, workdir: Path, total: int) -> CatchUpRun:
    root = Path(tempfile.mkdtemp(prefix=f"catchup-{total}-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3, brokers=3)
    extra: list[NodeProcess] = []
    results: list[CatchUp] = []
    try:
        await asyncio.to_thread(cluster.start)
        q0 = await quorum_of(cluster)
        say(f"catchup: creating {total:,} topics, {args.batch} per request, {args.batch_in_flight} in flight")
        port = cluster.nodes[cluster.broker_ids[0]].port
        noise = Noise(lambda: cluster_pids(cluster))
        noise.start()
        names = [f"c-{i:06d}" for i in range(total)]
        creation = await bulk_create(port, names, args.batch, args.batch_in_flight, args.replication_factor)
        cpu = noise.stop()
        q = await quorum_of(cluster)
        meta_dir = root / f"node-{q.leader}" / "__cluster_metadata-0"
        meta_bytes = sum(f.stat().st_size for f in meta_dir.glob("*.log")) if meta_dir.is_dir() else 0
        say(
            f"catchup: {creation.created:,} topics in {creation.seconds:.1f} s "
            f"({creation.created / creation.seconds:.0f}/s; per tenth: "
            + ", ".join(f"{r:.0f}" for r in creation.tenths)
            + f"), failures {creation.failures}, leader epoch {q0.epoch} -> {q.epoch}, "
            f"metadata log {q.high_watermark:,} records, {meta_bytes / 1e6:.1f} MB; others {cpu.others:.2f} cores"
        )
        listed = creation.created  # topics answered with success (a retried batch may have made more)
        # Every broker must list them all first (a new broker is compared with caught-up ones).
        for b in cluster.broker_ids:
            c = await connect(cluster.nodes[b].port)
            try:
                deadline = time.monotonic() + 120
                while (n := (await metadata_topic_count(c))[0]) < listed and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                listed = n
            finally:
                await c.close()

        say("catchup: (a) a new broker, node 7")
        node7 = new_broker_node(cluster, cluster.broker_ids[-1], 7)
        extra.append(node7)
        r = await time_catch_up(node7, listed, args.catchup_limit)
        r.case = "new broker (node 7, never in the cluster)"
        results.append(r)
        say(f"catchup: serving after {r.serving_s:.2f} s, all topics after {r.all_topics_s:.2f} s")

        observer = cluster.nodes[cluster.broker_ids[0]].port
        for wiped_id, wait_fenced in ((cluster.broker_ids[-1], False), (cluster.broker_ids[-2], True)):
            when = "after the controller fenced it" if wait_fenced else "at once"
            say(f"catchup: broker {wiped_id} killed, its data deleted and formatted again, restarted {when}")
            node = cluster.nodes[wiped_id]
            t_kill = time.perf_counter()
            node.kill()
            shutil.rmtree(root / f"node-{wiped_id}")
            format_node(cluster, node.config_path)
            fenced_s = None
            if wait_fenced:
                await wait_unlisted(observer, wiped_id, args.catchup_limit)
                fenced_s = time.perf_counter() - t_kill
                say(f"catchup: broker {wiped_id} fenced {fenced_s:.2f} s after the kill")
            r = await time_catch_up(node, listed, args.catchup_limit)
            r.case = f"broker {wiped_id}: killed, data dir deleted and formatted, restarted {when}"
            if fenced_s is not None:
                r.case += f" ({fenced_s:.1f} s after the kill)"
            results.append(r)
            say(f"catchup: serving after {r.serving_s:.2f} s, all topics after {r.all_topics_s:.2f} s")
        return CatchUpRun(
            total, creation, cpu, q.epoch - q0.epoch, q.high_watermark, meta_bytes / 1e6, results
        )
    finally:
        await asyncio.to_thread(stop_cluster, cluster, extra)
        if not KEEP:
            shutil.rmtree(root, ignore_errors=True)


async def section_catchup(args: argparse.Namespace, workdir: Path, report: Report) -> None:
    runs = [await catchup_case(args, workdir, total) for total in args.catchup_topics]
    rows = []
    for run in runs:
        for r in run.results:
            rows.append(
                [
                    f"{run.creation.created:,}",
                    r.case,
                    f"{r.serving_s:.2f} s",
                    f"{r.all_topics_s:.2f} s",
                    f"{r.topics_at_serving:,}",
                    f"{r.dirs_at_serving:,}",
                ]
            )
    report.table(
        f"Catch-up of a broker (1-partition topics, replication factor {args.replication_factor}; "
        "3 dedicated controllers + 3 brokers; seconds from the process start)",
        [
            "Topics",
            "Case",
            "serves clients",
            "its Metadata lists every topic",
            "topics in its first Metadata",
            "partition dirs it had created when serving",
        ],
        rows,
    )
    report.table(
        f"Creating those topics (sent to broker 4, which forwards; {args.batch} topics per CreateTopics, "
        f"{args.batch_in_flight} requests in flight)",
        [
            "Topics",
            "seconds",
            "topics/s",
            "topics/s, first / last tenth",
            "leader elections meanwhile",
            "metadata log records",
            "metadata log MB",
            "Cluster CPU",
            "Others' CPU",
        ],
        [
            [
                f"{run.creation.created:,}",
                f"{run.creation.seconds:.1f}",
                f"{run.creation.created / run.creation.seconds:,.0f}",
                f"{run.creation.tenths[0]:,.0f} / {run.creation.tenths[-1]:,.0f}"
                if run.creation.tenths
                else "-",
                str(run.elections),
                f"{run.records:,}",
                f"{run.log_mb:.1f}",
                f"{run.cpu.cluster:.2f} cores",
                f"{run.cpu.others:.2f} cores",
            ]
            for run in runs
        ],
    )
    for run in runs:
        if run.creation.failures:
            report.notes.append(
                f"catchup {run.topics:,}: {sum(run.creation.failures.values())} topics answered with an error "
                f"(error code: topics {run.creation.failures})"
            )


# ----------------------------------------------------------------------------- main


def environment() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"Machine: {os.cpu_count()} cores ({cpu}), Linux {platform.release()}, Python {platform.python_version()}; "
        f"run {time.strftime('%Y-%m-%d %H:%M')}.  \n{provenance_line(clients=[])}"
    )


async def amain(args: argparse.Namespace, sections: list[str]) -> Report:
    # SIGTERM cancels the run like Ctrl-C does, so every cluster is still stopped by its pids.
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    report = Report()
    runners: dict[str, Callable[[argparse.Namespace, Path, Report], Awaitable[None]]] = {
        "ops": section_ops,
        "election": section_election,
        "catchup": section_catchup,
    }
    if args.keep:
        workdir = Path(tempfile.mkdtemp(prefix="zurau-bench-kraft-"))
        say(f"keeping every node's data and log under {workdir}")
        for s in SECTIONS:
            if s in sections:
                await runners[s](args, workdir, report)
        return report
    with tempfile.TemporaryDirectory(prefix="zurau-bench-kraft-") as tmp:
        for s in SECTIONS:
            if s in sections:
                await runners[s](args, Path(tmp), report)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.kraft", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}"
    )
    ap.add_argument("--ops-topics", type=int, default=500, help="topics per metadata-ops case")
    ap.add_argument("--ops-limit", type=float, default=120.0, help="seconds per metadata-ops case at most")
    ap.add_argument(
        "--concurrency",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 16],
        help="in-flight requests",
    )
    ap.add_argument(
        "--ops-existing",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[0, 5_000],
        help="topics created (100 per request) before each metadata-ops case",
    )
    ap.add_argument("--replication-factor", type=int, default=1, help="of every topic created")
    ap.add_argument("--rounds", type=int, default=20, help="controller kills")
    ap.add_argument(
        "--catchup-topics",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[2_000, 5_000, 10_000],
        help="topic counts, a fresh cluster each",
    )
    ap.add_argument("--batch", type=int, default=100, help="topics per CreateTopics in the catch-up setup")
    ap.add_argument("--batch-in-flight", type=int, default=4)
    ap.add_argument(
        "--catchup-limit", type=float, default=300.0, help="seconds a broker may take to catch up"
    )
    ap.add_argument("--keep", action="store_true", help="keep the nodes' data and logs (under /tmp)")
    args = ap.parse_args(argv)
    global KEEP
    KEEP = args.keep
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    t0 = time.monotonic()
    report = asyncio.run(amain(args, sections))
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--keep"]
    cmd = " ".join([".venv/bin/python -m bench.kraft", *shown])
    print()
    print(f"Command: `{cmd}` ({(time.monotonic() - t0) / 60:.1f} min).  ")
    print(environment())
    print()
    for s in report.sections:
        print(s)
    if report.notes:
        print("Notes from this run:\n")
        print("\n".join(f"- {n}" for n in report.notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
