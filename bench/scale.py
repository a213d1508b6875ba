"""Scale cases of issue 18: many partitions on one broker, many idle connections.

Usage: ``.venv/bin/python -m bench.scale [--quick] [--only partitions,connections]
[--brokers zurau,tansu] [--json out.json] [--zurau-src OTHER/src]`` (``--zurau-src`` runs the
Zurau of another checkout, e.g. ``git archive HEAD src | tar -x -C /tmp/base`` for a before/after).

``partitions``: for each layout (1,000 topics x 10 partitions, 10 topics x 1,000 partitions;
10,000 partitions either way) a fresh broker gets the topics (created 100 topics or 1,000
partitions per CreateTopics request) and one 100-byte record in every partition. Measured:

* ``create_s``: creating every topic until Metadata lists every partition;
* ``metadata_ms``: a Metadata request (v9, all topics) over a raw socket, from the first byte sent
  to the last byte of the response received (median of the repeats; ``metadata_first_ms`` is the
  first one after the topics appeared);
* ``rss_per_partition_kb``: (resident memory with the partitions and their records - resident
  memory of the same broker before any topic) / partitions;
* Zurau only (Tansu runs in memory: it has nothing to load): ``start_clean_s``, the time from
  launching the process over the same log dirs after a SIGTERM stop to its port accepting (the
  single-node broker listens only once every log is loaded), and ``start_kill9_s``, the same after
  more records were written to every partition and the process was killed with SIGKILL (no flush,
  no checkpoint, no clean-shutdown marker: every partition's unflushed segment is rescanned);
  ``start_empty_s`` is the start-up of a broker with no partitions (the interpreter and imports);
  each restart is done 3 times (median, and the worst beside it);
  ``fds_after_start``: open file descriptors of the restarted broker.

``connections``: a fresh broker with one 8-partition topic; ``active`` confluent-kafka producers
(1 KiB records, acks=all, linger 5 ms) driven round-robin from one thread for a fixed time, alone
and then with ``idle`` extra raw sockets that each sent ApiVersions, read the answer and stay
open. Reports throughput (MB/s of record values) and resident memory in each phase, RSS per idle
connection, and the ratio of the throughputs (goal: >= 0.9).

The machine's load average and the CPU other processes used during each timed part are printed,
so a reader can tell a margin from noise.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench._brokers import (
    BROKERS,
    BrokerUnderTest,
    ZurauBroker,
    process_rss_mb,
    system_busy_seconds,
)
from bench._provenance import provenance_line
from bench._workloads import make_values
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.frame import decode_response, encode_request
from zurau.testing.broker_process import HOST, ServerProcess

METADATA_VERSION = 9
LAYOUTS = ((1000, 10), (10, 1000))  # (topics, partitions per topic)
_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Scale:
    layouts: tuple[tuple[int, int], ...]
    metadata_repeats: int
    active: int
    idle: int
    active_seconds: float
    repeat: int
    restarts: int


FULL = Scale(LAYOUTS, 7, 100, 1000, 8.0, 3, 3)
QUICK = Scale(((100, 10), (2, 500)), 3, 20, 200, 3.0, 1, 1)


@dataclass
class Result:
    case: str
    broker: str
    values: dict[str, float] = field(default_factory=dict)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} cores"


# -- raw protocol -------------------------------------------------------------------------------


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def _round_trip(sock: socket.socket, frame: bytes) -> bytes:
    sock.sendall(frame)
    (size,) = _SIZE.unpack(_recv_exact(sock, 4))
    return _recv_exact(sock, size)


def metadata_request(correlation_id: int) -> bytes:
    """Metadata v9 for every topic (null topic list)."""
    body = {
        "topics": None,
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    return encode_request(ApiKey.METADATA, METADATA_VERSION, correlation_id, "bench-scale", body)


def metadata_times(broker: BrokerUnderTest, repeats: int) -> tuple[list[float], int]:
    """Milliseconds of ``repeats`` all-topic Metadata round trips on one connection, and the
    number of partitions the last answer listed."""
    times: list[float] = []
    partitions = 0
    with socket.create_connection((HOST, broker.port), timeout=60) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(repeats):
            frame = metadata_request(i + 1)
            t0 = time.perf_counter()
            raw = _round_trip(s, frame)
            times.append((time.perf_counter() - t0) * 1000)
            if i == repeats - 1:
                _cid, body = decode_response(ApiKey.METADATA, METADATA_VERSION, raw)
                partitions = sum(len(t["partitions"]) for t in body["topics"])
    return times, partitions


def open_idle(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that each sent ApiVersions v0, read the answer, and stay idle."""
    socks = []
    frame = encode_request(ApiKey.API_VERSIONS, 0, 1, "bench-idle", {})
    for _ in range(n):
        s = socket.create_connection((HOST, port), timeout=30)
        _round_trip(s, frame)
        socks.append(s)
    return socks


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# -- partitions -----------------------------------------------------------------------------------


def create_topics(broker: BrokerUnderTest, topics: int, partitions: int, prefix: str) -> list[str]:
    """Create ``topics`` topics of ``partitions`` each; return once Metadata lists them all."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    names = [f"{prefix}-{i:05d}" for i in range(topics)]
    per_request = max(1, 1000 // partitions)
    for i in range(0, topics, per_request):
        chunk = names[i : i + per_request]
        futures = admin.create_topics([NewTopic(n, partitions, 1) for n in chunk], operation_timeout=120)
        for f in futures.values():
            f.result(300)
    deadline = time.monotonic() + 300
    want = topics * partitions
    while time.monotonic() < deadline:
        _t, seen = metadata_times(broker, 1)
        if seen >= want:
            return names
        time.sleep(0.2)
    raise TimeoutError(f"{broker.name}: Metadata lists fewer than {want} partitions")


def write_every_partition(broker: BrokerUnderTest, names: list[str], partitions: int, size: int = 100) -> None:
    """One ``size``-byte record in every partition (acks=all), every delivery checked."""
    errors: list[Any] = []
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "acks": "all",
            "linger.ms": 20,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": False,
            "on_delivery": lambda err, _m: errors.append(err) if err is not None else None,
        }
    )
    value = make_values(size, 1)[0]
    for n in names:
        for i in range(partitions):
            while True:
                try:
                    p.produce(n, value, partition=i)
                    break
                except BufferError:
                    p.poll(0.05)
        p.poll(0)
    if p.flush(300) != 0 or errors:
        raise RuntimeError(f"{broker.name}: writing every partition failed: {errors[:3]}")


def timed_restart(broker: ZurauBroker, kill: bool) -> float:
    """Stop (SIGTERM, or SIGKILL when ``kill``) without removing the log, start again over it;
    return the seconds from launch to the port accepting connections."""
    if kill:
        ServerProcess.kill(broker)
    else:
        ServerProcess.stop(broker, 300)
    broker.start_timeout = 600
    t0 = time.monotonic()
    broker.start()
    return time.monotonic() - t0


def _new(kind: type[BrokerUnderTest], workdir: Path, src: Path | None) -> BrokerUnderTest:
    return ZurauBroker(workdir, src) if kind is ZurauBroker else kind(workdir)


def partitions_case(
    kind: type[BrokerUnderTest], layout: tuple[int, int], scale: Scale, workdir: Path, src: Path | None = None
) -> Result:
    topics, per_topic = layout
    total = topics * per_topic
    res = Result(f"{topics} topics x {per_topic} partitions", kind.name)
    v = res.values
    b = _new(kind, workdir, src)
    try:
        t0 = time.monotonic()
        b.start()
        v["start_empty_s"] = time.monotonic() - t0
        metadata_times(b, 3)  # warm the connection path and the Metadata handler
        rss0 = b.rss_mb()
        t0 = time.monotonic()
        names = create_topics(b, topics, per_topic, f"s{uuid.uuid4().hex[:6]}")
        v["create_s"] = time.monotonic() - t0
        times, seen = metadata_times(b, scale.metadata_repeats + 1)
        v["metadata_first_ms"] = times[0]
        v["metadata_ms"] = statistics.median(times[1:])
        v["metadata_partitions"] = seen
        write_every_partition(b, names, per_topic)
        v["rss_mb"] = b.rss_mb()
        v["rss_per_partition_kb"] = (v["rss_mb"] - rss0) * 1000 / total
        v["fds_before_restart"] = open_fds(b.pid)
        if isinstance(b, ZurauBroker):
            clean = [timed_restart(b, kill=False) for _ in range(scale.restarts)]
            v["start_clean_s"] = statistics.median(clean)
            v["worst_start_clean_s"] = max(clean)
            for i, c in enumerate(clean):
                v[f"start_clean_{i + 1}_s"] = c
            v["fds_after_start"] = open_fds(b.pid)
            v["rss_after_clean_start_mb"] = b.rss_mb()
            times, seen = metadata_times(b, scale.metadata_repeats + 1)
            v["metadata_after_restart_ms"] = statistics.median(times[1:])
            killed = []
            for _ in range(scale.restarts):
                write_every_partition(b, names, per_topic)  # unflushed: recovery rescans them
                killed.append(timed_restart(b, kill=True))
                times, seen = metadata_times(b, 2)
                if seen != total:
                    raise RuntimeError(f"after kill -9 Metadata lists {seen} partitions, not {total}")
            v["start_kill9_s"] = statistics.median(killed)
            v["worst_start_kill9_s"] = max(killed)
            for i, k in enumerate(killed):
                v[f"start_kill9_{i + 1}_s"] = k
            v["rss_after_recovery_mb"] = b.rss_mb()
    finally:
        b.stop(300)
    return res


# -- connections ----------------------------------------------------------------------------------


def active_throughput(broker: BrokerUnderTest, topic: str, n: int, seconds: float) -> tuple[float, float]:
    """``n`` producers driven round-robin from this thread for ``seconds``: (MB/s of record
    values acknowledged, CPU share of a core other processes used meanwhile)."""
    values = make_values(1024, 64)
    errors: list[Any] = []
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "acks": "all",
        "linger.ms": 5,
        "enable.idempotence": False,
        "queue.buffering.max.messages": 20_000,
        "delivery.report.only.error": True,
        "on_delivery": lambda err, _m: errors.append(err),
    }
    producers = [Producer(conf) for _ in range(n)]
    try:
        for p in producers:  # connect and learn metadata before the clock starts
            p.produce(topic, values[0])
        for p in producers:
            p.flush(60)
        batch = [{"value": values[j % len(values)], "partition": j % 8} for j in range(50)]
        sent = 0
        busy0, cpu0 = system_busy_seconds(), time.process_time()
        bcpu0 = broker.cpu_seconds()
        t0 = time.monotonic()
        deadline = t0 + seconds
        while time.monotonic() < deadline:
            for p in producers:
                sent += p.produce_batch(topic, batch)
                p.poll(0)
        for p in producers:
            if p.flush(120) != 0:
                raise RuntimeError("records left unacknowledged")
        elapsed = time.monotonic() - t0
        other = system_busy_seconds() - busy0 - (time.process_time() - cpu0) - (broker.cpu_seconds() - bcpu0)
        if errors:
            raise RuntimeError(f"{len(errors)} deliveries failed: {errors[:3]}")
        return sent * 1024 / 1e6 / elapsed, max(other, 0.0) / elapsed
    finally:
        del producers


def connections_case(kind: type[BrokerUnderTest], scale: Scale, workdir: Path, src: Path | None = None) -> Result:
    res = Result(f"{scale.active} active + {scale.idle} idle connections", kind.name)
    v = res.values
    alone: list[float] = []
    with_idle: list[float] = []
    rss_alone: list[float] = []
    rss_idle: list[float] = []
    per_conn: list[float] = []
    noise: list[float] = []
    for _ in range(scale.repeat):
        for idle in (0, scale.idle):
            b = _new(kind, workdir, src)
            socks: list[socket.socket] = []
            try:
                b.start()
                topic = f"conn-{uuid.uuid4().hex[:8]}"
                admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
                admin.create_topics([NewTopic(topic, 8, 1)])[topic].result(60)
                time.sleep(0.5)
                rss0 = b.rss_mb()
                if idle:
                    socks = open_idle(b.port, idle)
                    time.sleep(0.5)
                    per_conn.append((b.rss_mb() - rss0) * 1000 / idle)
                mbps, other = active_throughput(b, topic, scale.active, scale.active_seconds)
                noise.append(other)
                (with_idle if idle else alone).append(mbps)
                (rss_idle if idle else rss_alone).append(b.rss_mb())
                if idle:  # the idle ones must still be alive and answer
                    for s in socks[:: max(1, len(socks) // 20)]:
                        _round_trip(s, encode_request(ApiKey.API_VERSIONS, 0, 2, "bench-idle", {}))
            finally:
                for s in socks:
                    s.close()
                b.stop(60)
    v["mb_s_active_alone"] = statistics.median(alone)
    v["mb_s_active_with_idle"] = statistics.median(with_idle)
    v["worst_mb_s_alone"] = min(alone)
    v["worst_mb_s_with_idle"] = min(with_idle)
    v["ratio_with_idle_to_alone"] = v["mb_s_active_with_idle"] / v["mb_s_active_alone"]
    v["rss_mb_alone"] = statistics.median(rss_alone)
    v["rss_mb_with_idle"] = statistics.median(rss_idle)
    v["rss_kb_per_idle_connection"] = statistics.median(per_conn)
    v["other_processes_cpu_share"] = max(noise)
    return res


# -- report ---------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    if isinstance(x, int) or float(x).is_integer():
        return f"{int(x)}"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def report(results: list[Result]) -> str:
    lines = []
    cases: dict[str, dict[str, Result]] = {}
    for r in results:
        cases.setdefault(r.case, {})[r.broker] = r
    for case, by_broker in cases.items():
        lines.append(f"\n{case}")
        names = list(by_broker)
        keys: list[str] = []
        for r in by_broker.values():
            keys += [k for k in r.values if k not in keys]
        head = f"  {'metric':32}" + "".join(f"{n:>14}" for n in names)
        if len(names) == 2:
            head += f"{names[0] + '/' + names[1]:>16}"
        lines.append(head)
        for k in keys:
            cells = [by_broker[n].values.get(k) for n in names]
            row = f"  {k:32}" + "".join(f"{_fmt(c):>14}" if c is not None else f"{'-':>14}" for c in cells)
            if len(names) == 2 and all(c is not None for c in cells) and cells[1]:
                row += f"{cells[0] / cells[1]:>16.2f}"  # type: ignore[operator]
            lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    ap.add_argument("--only", default="partitions,connections")
    ap.add_argument("--brokers", default="zurau,tansu")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--zurau-src", type=Path, default=None, help="run the Zurau of this src/ directory")
    args = ap.parse_args(argv)
    scale = QUICK if args.quick else FULL
    kinds = [BROKERS[b.strip()] for b in args.brokers.split(",")]
    only = {s.strip() for s in args.only.split(",")}
    print(provenance_line(clients=("confluent_kafka",)), file=sys.stderr)
    print(f"before: {_load()}", file=sys.stderr)
    results: list[Result] = []
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="zurau-scale-") as tmp:
        workdir = Path(tmp)
        if "partitions" in only:
            for layout in scale.layouts:
                for kind in kinds:
                    log(f"partitions {layout} on {kind.name} ...")
                    results.append(partitions_case(kind, layout, scale, workdir, args.zurau_src))
                    log(f"  {results[-1].values}")
        if "connections" in only:
            for kind in kinds:
                log(f"connections on {kind.name} ...")
                results.append(connections_case(kind, scale, workdir, args.zurau_src))
                log(f"  {results[-1].values}")
    print(f"after: {_load()}", file=sys.stderr)
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2))


if __name__ == "__main__":
    main()


__all__ = ["main", "metadata_times", "open_idle", "process_rss_mb"]
