"""Issue 27: kill -9 and restart the non-controller nodes of a 3-node cluster with one big topic.

    .venv/bin/python -m bench.restart_scale [--partitions 10000] [--restarts 10]
        [--session-timeout-ms 9000] [--heartbeat-interval-ms 2000] [--stall-warn-ms MS] [--limit 900] [--keep]

Three combined (broker + controller) nodes as real processes on 127.0.0.1
(:class:`zurau.testing.cluster_process.ClusterProcesses`); one topic of ``--partitions``
partitions, replication factor 1, created with confluent-kafka's AdminClient (one CreateTopics).
Once every node lists every partition with a leader and the quorum's leader has stayed the same
for a few seconds, ``--restarts`` times: ``kill -9`` a node that is not the active controller
(round-robin over the two others) and relaunch it over its data at once. While it restarts, a
3-partition topic is created through the other surviving node (confluent-kafka), twice: right
after the relaunch (its old broker session is still alive, so it cannot register yet: Kafka's
DUPLICATE_BROKER_REGISTRATION) and as soon as its log says it registered (it then loads its logs
and applies the metadata image). Per restart:

* ``registered``: from the relaunch to the node's "registered with broker epoch" log line (mostly
  the wait for the old session to expire: ``broker.session.timeout.ms``, 9 s by default);
* ``load + apply``: what the node logs for loading its partition logs and applying the image;
* ``serves``: until its client listener accepts connections (it opens only once unfenced);
* ``all led``: until the node's own Metadata lists every partition of the big topic with a leader;
* ``CreateTopics``: the two creations' latencies (both must succeed);
* ``controller``: the quorum's (leader, epoch) before the kill and after the node served; any
  change is an election during the restart;
* ``stall``: the longest event-loop stall per node in this restart's window, from the
  ``zurau.loop`` watchdog's WARNING lines in ``node-<id>.log`` (it reports only stalls over half of
  ``controller.quorum.fetch.timeout.ms``, 1 s by default, or ``--stall-warn-ms``, passed to the
  nodes as ``ZURAU_LOOP_STALL_WARN_MS``; ``-`` means none);
* ``probe``: the longest ApiVersions round trip to each node's controller listener in the window,
  one request every 50 ms from a thread of this process on raw sockets (the controller listener
  opens at start, so this sees the restarting node's loop too, before it serves clients): an
  outside view of the loop's responsiveness below the watchdog's threshold;
* ``others``: CPU cores used by processes other than the cluster and this one (the machine is
  shared).

The whole run is bounded by ``--limit`` seconds (default 900): past it the run is cancelled, the
nodes are stopped by their pids, and the restarts done so far are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.kraft import Noise, Report, cluster_pids, connect, environment, quorum_of, say, stop_cluster
from zurau.client.errors import ClientError
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.frame import encode_request
from zurau.testing.broker_process import HOST
from zurau.testing.cluster_process import ClusterProcesses, NodeProcess

BIG = "big"
QUIET_S = 3.0  # the quorum leader must stay the same this long before the restarts
PROBE_S = 0.05  # ApiVersions probe interval
SMALL_PARTITIONS = 3

_STALLED = re.compile(r"event loop stalled for (\d+(?:\.\d+)?) s so far")
_ENDED = re.compile(r"event loop stall ended after about (\d+(?:\.\d+)?) s")
_LOADED = re.compile(r"(\d+) partition logs loaded and metadata offset (\d+) applied in (\d+(?:\.\d+)?) s")
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
_SIZE = struct.Struct(">i")


# ----------------------------------------------------------------------------- node logs


def log_from(node: NodeProcess, offset: int) -> str:
    """The node's log past byte ``offset``."""
    try:
        with open(node.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def log_size(node: NodeProcess) -> int:
    try:
        return node.log_path.stat().st_size
    except OSError:
        return 0


def line_time(text: str, needle: str) -> float | None:
    """The wall-clock time (epoch seconds) of the first log line containing ``needle``."""
    for line in text.splitlines():
        if needle in line:
            m = _STAMP.match(line)
            if m:
                return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


class StallTracker:
    """The longest watchdog-reported stall per node and restart window.

    The watchdog logs ``stalled for X s so far`` once a stall passes its threshold (X is then just
    over it) and ``stall ended after about Y s (...)`` when the loop runs again, Y being that
    stall's length. A window's longest stall is the largest X or Y in it."""

    def restarted(self, node_id: int) -> None:
        """Kept for the callers: each "ended" line names its own stall, so nothing to reset."""

    def window(self, node_id: int, text: str) -> float | None:
        """The longest stall in ``text`` (the node's log over one window); None: no stall logged."""
        found: float | None = None
        for pattern in (_STALLED, _ENDED):
            for m in pattern.finditer(text):
                found = max(found or 0.0, float(m.group(1)))
        return found


# ----------------------------------------------------------------------------- loop probe


class Probe:
    """ApiVersions round trips to each node's controller listener every :data:`PROBE_S`, from a
    thread with blocking sockets; :meth:`take` returns and resets the longest per node."""

    def __init__(self, ports: dict[int, int]) -> None:
        self.ports = ports
        self._max: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in ports]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def _run(self, node_id: int) -> None:
        frame = encode_request(ApiKey.API_VERSIONS, 0, 1, "bench-restart-probe", {})
        sock: socket.socket | None = None
        while not self._stop.wait(PROBE_S):
            try:
                if sock is None:
                    sock = socket.create_connection((HOST, self.ports[node_id]), timeout=1.0)
                    sock.settimeout(120.0)
                t0 = time.perf_counter()
                sock.sendall(frame)
                (size,) = _SIZE.unpack(_recv(sock, 4))
                _recv(sock, size)
                rtt = time.perf_counter() - t0
                with self._lock:
                    self._max[node_id] = max(self._max.get(node_id, 0.0), rtt)
            except OSError:
                if sock is not None:
                    sock.close()
                sock = None
        if sock is not None:
            sock.close()

    def take(self) -> dict[int, float]:
        with self._lock:
            out, self._max = self._max, {}
        return out

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(2.0)


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


# ----------------------------------------------------------------------------- cluster helpers


#: Kafka's KRaft controller takes at most 10,000 records per request (a topic's TopicRecord and
#: its PartitionRecords included), as Zurau's does: a topic of more than 9,999 partitions is
#: created in steps, CreateTopics and then CreatePartitions, as a Kafka user would.
PARTITIONS_PER_REQUEST = 5_000


def create_topic(bootstrap: str, name: str, partitions: int, timeout: float) -> float:
    """Create ``name`` with ``partitions`` partitions through ``bootstrap`` with confluent-kafka,
    :data:`PARTITIONS_PER_REQUEST` per request: seconds (raises on an error)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    t0 = time.perf_counter()
    first = min(partitions, PARTITIONS_PER_REQUEST)
    futures = admin.create_topics(
        [NewTopic(name, first, 1)], request_timeout=timeout, operation_timeout=timeout
    )
    futures[name].result(timeout + 5)
    count = first
    while count < partitions:
        count = min(partitions, count + PARTITIONS_PER_REQUEST)
        grown = admin.create_partitions([NewPartitions(name, count)], request_timeout=timeout, operation_timeout=timeout)
        grown[name].result(timeout + 5)
    return time.perf_counter() - t0


async def led_partitions(port: int) -> int:
    """Partitions of the big topic with a leader in the Metadata of the node at ``port``."""
    conn = await connect(port)
    try:
        resp = await conn.request(
            ApiKey.METADATA,
            {"topics": [{"name": BIG}], "allow_auto_topic_creation": False},
            version=conn.version(ApiKey.METADATA, 12, min_version=1),
            timeout=60.0,
        )
    finally:
        await conn.close()
    topic = next((t for t in resp["topics"] if t["name"] == BIG and t["error_code"] == 0), None)
    return 0 if topic is None else sum(1 for p in topic["partitions"] if p["leader_id"] >= 0)


async def wait_all_led(port: int, partitions: int, limit_s: float, poll_s: float) -> None:
    deadline = time.monotonic() + limit_s
    led = 0
    while True:
        try:
            led = await led_partitions(port)
        except (ClientError, OSError):
            led = -1
        if led == partitions:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the node at port {port} lists {led} of {partitions} partitions with a leader"
            )
        await asyncio.sleep(poll_s)


# ----------------------------------------------------------------------------- the run


@dataclass
class Restart:
    n: int
    node: int
    registered_s: float | None
    load_apply_s: float | None
    logs_loaded: int | None
    serving_s: float
    all_led_s: float
    creates_s: list[float]
    before: tuple[int, int]
    after: tuple[int, int]
    stalls: dict[int, float | None]
    probe_s: dict[int, float]
    others: float

    @property
    def controller_changed(self) -> bool:
        return self.before != self.after


@dataclass
class Run:
    partitions: int
    create_s: float = 0.0
    all_led_s: float = 0.0
    setup_stalls: dict[int, float | None] = field(default_factory=dict)
    restarts: list[Restart] = field(default_factory=list)
    aborted: str | None = None


async def restart_once(
    cluster: ClusterProcesses,
    n: int,
    victim: int,
    via: NodeProcess,
    args: argparse.Namespace,
    stalls: StallTracker,
    probe: Probe,
) -> Restart:
    node = cluster.nodes[victim]
    q0 = await quorum_of(cluster)
    offsets = {i: log_size(x) for i, x in cluster.nodes.items()}
    probe.take()
    noise = Noise(lambda: cluster_pids(cluster))
    noise.start()
    cluster.kill(victim)
    stalls.restarted(victim)
    wall0, t0 = time.time(), time.perf_counter()
    node.launch()
    creates: list[float] = []
    errors: list[BaseException] = []

    def create_during_restart() -> None:
        try:
            creates.append(create_topic(via.bootstrap_servers, f"during-{n}-a", SMALL_PARTITIONS, 60.0))
            limit = time.monotonic() + args.restart_limit
            while "registered with broker epoch" not in log_from(node, offsets[victim]):
                if time.monotonic() > limit:
                    raise TimeoutError(f"node {victim} did not register within {args.restart_limit:.0f} s")
                time.sleep(0.05)
            creates.append(create_topic(via.bootstrap_servers, f"during-{n}-b", SMALL_PARTITIONS, 60.0))
        except BaseException as e:  # reported below
            errors.append(e)

    creator = threading.Thread(target=create_during_restart, daemon=True)
    creator.start()
    await asyncio.to_thread(node.wait_ready, args.restart_limit)
    serving = time.perf_counter() - t0
    await wait_all_led(
        node.port, args.partitions, args.restart_limit, poll_s=max(0.2, args.partitions / 50_000)
    )
    all_led = time.perf_counter() - t0
    await asyncio.to_thread(creator.join, 130.0)
    others = noise.stop().others
    q1 = await quorum_of(cluster)
    if errors:
        raise RuntimeError(f"restart {n + 1}: CreateTopics through node {via.node_id} failed: {errors[0]!r}")
    text = log_from(node, offsets[victim])
    registered = line_time(text, "registered with broker epoch")
    loaded = _LOADED.search(text)
    window = {i: stalls.window(i, log_from(x, offsets[i])) for i, x in cluster.nodes.items()}
    return Restart(
        n + 1,
        victim,
        registered - wall0 if registered is not None else None,
        float(loaded.group(3)) if loaded else None,
        int(loaded.group(1)) if loaded else None,
        serving,
        all_led,
        creates,
        (q0.leader, q0.epoch),
        (q1.leader, q1.epoch),
        window,
        probe.take(),
        others,
    )


async def run(args: argparse.Namespace, root: Path, result: Run) -> None:
    overrides: dict[str, Any] = {
        "broker.session.timeout.ms": str(args.session_timeout_ms),
        "broker.heartbeat.interval.ms": str(args.heartbeat_interval_ms),
    }
    if args.stall_warn_ms is not None:  # the nodes inherit this process's environment
        os.environ["ZURAU_LOOP_STALL_WARN_MS"] = str(args.stall_warn_ms)
    cluster = ClusterProcesses(root, controllers=3, **overrides)
    probe: Probe | None = None
    try:
        await asyncio.to_thread(cluster.start)
        stalls = StallTracker()
        for i in cluster.nodes:
            stalls.restarted(i)
        offsets = {i: log_size(x) for i, x in cluster.nodes.items()}
        say(f"creating {args.partitions:,} partitions (one topic, replication factor 1)")
        result.create_s = await asyncio.to_thread(
            create_topic, cluster.bootstrap_servers, BIG, args.partitions, 600.0
        )
        t0 = time.perf_counter()
        for node in cluster.nodes.values():
            await wait_all_led(node.port, args.partitions, 600.0, poll_s=1.0)
        result.all_led_s = time.perf_counter() - t0
        say(
            f"created in {result.create_s:.1f} s; every node lists them all with a leader {result.all_led_s:.1f} s later"
        )
        q = await quorum_of(cluster)
        stable_since = time.monotonic()
        while time.monotonic() - stable_since < QUIET_S:
            await asyncio.sleep(0.5)
            now = await quorum_of(cluster)
            if (now.leader, now.epoch) != (q.leader, q.epoch):
                q, stable_since = now, time.monotonic()
        result.setup_stalls = {i: stalls.window(i, log_from(x, offsets[i])) for i, x in cluster.nodes.items()}
        say(f"quiet: quorum leader {q.leader} in epoch {q.epoch}; setup stalls {result.setup_stalls}")
        probe = Probe(
            {i: x.controller_port for i, x in cluster.nodes.items() if x.controller_port is not None}
        )
        probe.start()
        for n in range(args.restarts):
            leader = (await quorum_of(cluster)).leader
            others = [i for i in cluster.broker_ids if i != leader]
            victim = others[n % len(others)]
            via = cluster.nodes[next(i for i in others if i != victim)]
            r = await restart_once(cluster, n, victim, via, args, stalls, probe)
            result.restarts.append(r)
            say(
                f"restart {r.n}/{args.restarts}: node {victim} registered {_s(r.registered_s)}, load+apply "
                f"{_s(r.load_apply_s)}, serving {r.serving_s:.1f} s, all led {r.all_led_s:.1f} s; CreateTopics "
                + " / ".join(f"{c:.2f} s" for c in r.creates_s)
                + f"; quorum {r.before} -> {r.after}; stalls {r.stalls}; probe max "
                + ", ".join(f"{i}: {v * 1000:.0f} ms" for i, v in sorted(r.probe_s.items()))
                + f"; others {r.others:.2f} cores"
            )
    finally:
        if probe is not None:
            probe.stop()
        await asyncio.to_thread(stop_cluster, cluster)


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} s"


def _stall(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def report(args: argparse.Namespace, result: Run) -> Report:
    rep = Report()
    node_ids = sorted({i for r in result.restarts for i in r.stalls} or {1, 2, 3})
    rows = []
    for r in result.restarts:
        rows.append(
            [
                str(r.n),
                str(r.node),
                _s(r.registered_s),
                _s(r.load_apply_s) + (f" ({r.logs_loaded:,} logs)" if r.logs_loaded is not None else ""),
                f"{r.serving_s:.1f} s",
                f"{r.all_led_s:.1f} s",
                " / ".join(f"{c:.2f} s" for c in r.creates_s),
                ("CHANGED " if r.controller_changed else "no: ") + f"{r.before} -> {r.after}",
                " / ".join(_stall(r.stalls.get(i)) for i in node_ids),
                " / ".join(f"{r.probe_s[i] * 1000:.0f}" if i in r.probe_s else "-" for i in node_ids),
                f"{r.others:.2f}",
            ]
        )
    rep.table(
        f"kill -9 and restart of a non-controller node: 3 combined nodes, one topic of {result.partitions:,} "
        f"partitions (RF 1), broker.session.timeout.ms={args.session_timeout_ms}, "
        f"broker.heartbeat.interval.ms={args.heartbeat_interval_ms}"
        + (f", watchdog threshold {args.stall_warn_ms} ms" if args.stall_warn_ms is not None else "")
        + " (seconds from the relaunch)",
        [
            "#",
            "node",
            "registered",
            "load + apply",
            "serves",
            "all led",
            "CreateTopics (at once / once registered)",
            "controller changed (leader, epoch)",
            "watchdog stall s, nodes " + "/".join(map(str, node_ids)),
            "probe max ms, nodes " + "/".join(map(str, node_ids)),
            "others' CPU",
        ],
        rows,
    )
    if result.restarts:
        serving = [r.serving_s for r in result.restarts]
        led = [r.all_led_s for r in result.restarts]
        creates = [c for r in result.restarts for c in r.creates_s]
        changed = sum(r.controller_changed for r in result.restarts)
        worst = {i: max((r.stalls.get(i) or 0.0) for r in result.restarts) for i in node_ids}
        probe = {i: max(r.probe_s.get(i, 0.0) for r in result.restarts) for i in node_ids}
        rep.notes.append(
            f"serves after the relaunch: median {statistics.median(serving):.1f} s, worst {max(serving):.1f} s, "
            f"best {min(serving):.1f} s; all partitions led: median {statistics.median(led):.1f} s, worst {max(led):.1f} s"
        )
        rep.notes.append(
            f"CreateTopics during the restarts: {len(creates)} succeeded, median {statistics.median(creates):.2f} s, "
            f"worst {max(creates):.2f} s"
        )
        rep.notes.append(f"controller changed in {changed} of {len(result.restarts)} restarts")
        rep.notes.append(
            "longest watchdog-reported stall over the restarts: "
            + ", ".join(
                f"node {i}: {v:.2f} s" if v else f"node {i}: none over the threshold"
                for i, v in worst.items()
            )
            + "; longest ApiVersions probe round trip: "
            + ", ".join(f"node {i}: {v * 1000:.0f} ms" for i, v in probe.items())
        )
    rep.notes.insert(
        0,
        f"setup: {result.partitions:,} partitions created in {result.create_s:.1f} s; every node listed them with a "
        f"leader {result.all_led_s:.1f} s later; watchdog stalls meanwhile: "
        + ", ".join(f"node {i}: {_stall(v)}" for i, v in sorted(result.setup_stalls.items())),
    )
    if result.aborted:
        rep.notes.append(f"ABORTED: {result.aborted}")
    return rep


async def amain(args: argparse.Namespace) -> Run:
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    result = Run(args.partitions)
    workdir = Path(tempfile.mkdtemp(prefix="zurau-bench-restart-"))
    if args.keep:
        say(f"keeping every node's data and log under {workdir}")
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(run(args, workdir, result), args.limit)
    except TimeoutError as e:
        if time.monotonic() - t0 >= args.limit:
            result.aborted = f"the run passed --limit {args.limit:.0f} s and was cancelled"
        else:
            result.aborted = f"TimeoutError: {e}"
    except Exception as e:  # a failed restart: report what was measured until then
        result.aborted = f"{type(e).__name__}: {e}"
        if args.keep:
            say(f"failed; the nodes' logs are under {workdir}")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.restart_scale", description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000, help="of the one big topic")
    ap.add_argument("--restarts", type=int, default=10, help="kill -9 + relaunch of a non-controller node")
    ap.add_argument("--session-timeout-ms", type=int, default=9000, help="broker.session.timeout.ms")
    ap.add_argument("--heartbeat-interval-ms", type=int, default=2000, help="broker.heartbeat.interval.ms")
    ap.add_argument(
        "--restart-limit", type=float, default=300.0, help="seconds a restarted node may take to serve"
    )
    ap.add_argument(
        "--stall-warn-ms",
        type=int,
        default=None,
        help="the nodes' watchdog threshold (default: half the fetch timeout)",
    )
    ap.add_argument("--limit", type=float, default=900.0, help="seconds the whole run may take")
    ap.add_argument("--keep", action="store_true", help="keep the nodes' data and logs (under /tmp)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    result = asyncio.run(amain(args))
    rep = report(args, result)
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--keep"]
    print()
    print(
        f"Command: `{' '.join(['.venv/bin/python -m bench.restart_scale', *shown])}` "
        f"({(time.monotonic() - t0) / 60:.1f} min).  "
    )
    print(environment())
    print()
    for s in rep.sections:
        print(s)
    print("Notes from this run:\n")
    print("\n".join(f"- {n}" for n in rep.notes))
    return 1 if result.aborted or any(r.controller_changed for r in result.restarts) else 0


if __name__ == "__main__":
    sys.exit(main())
