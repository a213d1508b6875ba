"""What serving metrics costs a broker's produce path: the same workloads with and without
``metrics.http.listener``, side by side.

    .venv/bin/python -m bench.metrics_overhead [--sets 2] [--rounds 5] [--scrape-every 5] [--before-src DIR]

Per case and set, one fresh broker process per mode (``off``, ``on``, and with ``--before-src``
``before``: metrics on, run from an earlier tree's src/) runs at once; then ``--rounds`` times,
each broker gets one burst of the workload in turn, the order alternating, so a change in the
machine's load (other work on a shared machine) hits every mode alike. Two kinds of case:

* ``produce ...``: confluent-kafka producing as fast as it can for ``--seconds`` (linger.ms=5,
  batch.size=1 MiB). librdkafka's batching follows the client's own pace, so the number of
  requests per MB (hence the broker's CPU per MB) and the throughput vary from burst to burst
  whatever the broker does; with 100 B records the client, not the broker, is the bottleneck.
* ``replay ...``: the bench sends pre-encoded Produce v9 requests (``--window`` in flight on one
  connection; ``xN``: N records per partition and request) and reads every response: every mode
  gets exactly the same requests, so the broker's CPU per request is comparable. One record per
  request is the worst case for a per-request cost. With metrics on, each burst checks that
  ``kafka_server_brokertopicmetrics_messagesin_total`` and the Produce request count moved by
  exactly what was sent.

With metrics on, a thread scrapes /metrics every ``--scrape-every`` seconds meanwhile
(Prometheus is commonly set to 15-60 s: this is harsher). Broker CPU is the on-CPU time of the
broker process's threads over a burst, in nanoseconds from ``/proc/<pid>/task/*/schedstat``.
Printed per case and mode against ``off``: median throughput and its ratio; median broker CPU per
MB, its ratio, and the median and worst (highest) of the ratios of one round's pair of bursts
("pairs", "worst"); for replays, the
median broker CPU per request. The overhead is ``CPU ratio - 1`` (and ``1 - throughput ratio``
where the broker is the bottleneck).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import tempfile
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from bench._brokers import ZurauBroker
from bench._workloads import Measurement, _Window, create_topic, make_values, produce_throughput
from zurau.embedded import free_ports
from zurau.protocol.frame import encode_request
from zurau.protocol.records.builder import NewRecord, build_batch


class Case(NamedTuple):
    """A workload: ``setup(broker)`` once per broker (a topic, a warm-up) returns its state;
    ``burst(broker, state, args, metrics_url)`` is one timed stretch (metrics_url "": metrics off)."""

    setup: Callable[[ZurauBroker], Any]
    burst: Callable[[ZurauBroker, Any, argparse.Namespace, str], Measurement]


_SIZE = struct.Struct(">i")
PRODUCE_VERSION = 9


def task_cpu_seconds(pid: int) -> float:
    """Seconds on CPU of the live threads of process ``pid``, from ``/proc/<pid>/task/*/schedstat``
    (nanoseconds, where ``/proc/<pid>/stat`` counts 10 ms ticks)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return total / 1e9


class _Broker(ZurauBroker):
    """A Zurau broker whose CPU time is read to the nanosecond (as all user time: the split
    between user and system time is not used here)."""

    def cpu_split(self) -> tuple[float, float]:
        return task_cpu_seconds(self.pid), 0.0


def _produce(size: int, acks: str, partitions: int) -> Case:
    def burst(b: ZurauBroker, topic: str, args: argparse.Namespace, metrics_url: str) -> Measurement:
        return produce_throughput(
            b,
            topic=topic,
            partitions=partitions,
            size=size,
            acks=acks,
            compression="none",
            max_records=3_000_000 * 1024 // size,
            max_seconds=args.seconds,
        )

    return Case(lambda b: create_topic(b, partitions), burst)


def produce_frame(topic: str, partitions: int, size: int, records: int, acks: int) -> bytes:
    """A Produce v9 frame with one batch of ``records`` values of ``size`` bytes per partition
    (correlation id 0: :func:`_send_all` numbers the copies it sends)."""
    values = make_values(size)
    batches = [
        build_batch([NewRecord(None, values[(p * records + i) % len(values)]) for i in range(records)])
        for p in range(partitions)
    ]
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": p, "records": batches[p]} for p in range(partitions)]}],
    }
    return encode_request(0, PRODUCE_VERSION, 0, "bench-metrics", body)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def _send_all(port: int, frame: bytes, count: int, window: int) -> None:
    """Send ``count`` copies of ``frame`` (correlation ids 0, 1, ...) with up to ``window`` in
    flight, and read every response (in order)."""
    # Size prefix, api key, version, then the correlation id at bytes 8..12.
    head, tail = frame[:8], frame[12:]
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = 0
        for received in range(count):
            while sent < count and sent - received < window:
                s.sendall(head + _SIZE.pack(sent) + tail)
                sent += 1
            (size,) = _SIZE.unpack(_recv_exact(s, 4))
            response = _recv_exact(s, size)
            (cid,) = _SIZE.unpack_from(response, 0)
            if cid != received:
                raise RuntimeError(f"response {cid} out of order (expected {received})")


def _scrape_sum(url: str, prefix: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def _replay(size: int, records: int, acks: int, partitions: int, requests: int) -> Case:
    def setup(b: ZurauBroker) -> tuple[str, bytes]:
        topic = create_topic(b, partitions)
        frame = produce_frame(topic, partitions, size, records, acks)
        _send_all(b.port, frame, 64, 8)  # warm-up: connection, first appends
        return topic, frame

    def burst(b: ZurauBroker, state: tuple[str, bytes], args: argparse.Namespace, metrics_url: str) -> Measurement:
        topic, frame = state
        count = max(int(requests * args.requests_scale), 10)
        messages = f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}}'
        produce = 'kafka_network_requestmetrics_requests_total{request="Produce"'
        before = (_scrape_sum(metrics_url, messages), _scrape_sum(metrics_url, produce)) if metrics_url else None
        w = _Window(b)
        _send_all(b.port, frame, count, args.window)
        n = count * records * partitions
        m = w.close(n, n * size)
        m.extra["requests"] = count
        if before is not None:
            moved = (_scrape_sum(metrics_url, messages) - before[0], _scrape_sum(metrics_url, produce) - before[1])
            if moved != (n, count):
                raise RuntimeError(f"metrics moved by {moved} (records, requests), sent {(n, count)}")
        return m

    return Case(setup, burst)


CASES: dict[str, Case] = {
    "produce 1 KiB acks=all 1p": _produce(1024, "all", 1),
    "produce 100 B acks=1 1p": _produce(100, "1", 1),
    "produce 1 KiB acks=1 8p": _produce(1024, "1", 8),
    # Pre-encoded requests, identical on/off: records of 100 B (x records per batch).
    # Bursts of about 1 s of broker CPU on the 2-core machine of BENCHMARKS.md.
    "replay 100 B x1 acks=1 1p": _replay(100, 1, 1, 1, 20_000),
    "replay 100 B x100 acks=1 1p": _replay(100, 100, 1, 1, 15_000),
    "replay 100 B x100 acks=1 8p": _replay(100, 100, 1, 8, 4_000),
    "replay 1 KiB x10 acks=-1 1p": _replay(1024, 10, -1, 1, 10_000),
}


class Scraper(threading.Thread):
    """Scrapes ``url`` every ``every`` seconds until stopped; counts scrapes and bytes."""

    def __init__(self, url: str, every: float) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.every = every
        self.stopped = threading.Event()
        self.scrapes = 0
        self.bytes = 0

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            with urllib.request.urlopen(self.url, timeout=10) as r:
                self.bytes += len(r.read())
            self.scrapes += 1


class _Running:
    """One broker of a set: started, its workload set up, scraped every ``--scrape-every`` s if metrics are on."""

    def __init__(self, workdir: Path, case: Case, mode: str, args: argparse.Namespace) -> None:
        self.mode = mode
        listener = f"http://127.0.0.1:{free_ports(1)[0]}" if mode != "off" else ""
        self.url = f"{listener}/metrics" if listener else ""
        src = args.before_src if mode == "before" else args.src
        self.broker = _Broker(workdir, src=src, **{"metrics.http.listener": listener})
        self.broker.start()
        self.scraper = Scraper(self.url, args.scrape_every) if self.url else None
        try:
            self.state = case.setup(self.broker)
        except BaseException:
            self.broker.stop()
            raise
        if self.scraper is not None:
            self.scraper.start()

    def stop(self) -> None:
        if self.scraper is not None:
            self.scraper.stopped.set()
            self.scraper.join()
        self.broker.stop()


def _run_set(workdir: Path, case: Case, modes: list[str], args: argparse.Namespace) -> dict[str, list[Measurement]]:
    """One broker per mode, all running; ``--rounds`` bursts each, in alternating order."""
    out: dict[str, list[Measurement]] = {mode: [] for mode in modes}
    running: list[_Running] = []
    try:
        for mode in modes:
            running.append(_Running(workdir, case, mode, args))
        for i in range(args.rounds):
            for r in running if i % 2 == 0 else running[::-1]:
                out[r.mode].append(case.burst(r.broker, r.state, args, r.url))
    finally:
        for r in running:
            if r.scraper is not None and out[r.mode]:
                out[r.mode][-1].extra["scrapes"] = r.scraper.scrapes
                out[r.mode][-1].extra["scrape_kb"] = r.scraper.bytes / 1024 / max(r.scraper.scrapes, 1)
            r.stop()
    return out


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} cores"


def _report(name: str, runs: dict[str, list[Measurement]]) -> None:
    off = runs["off"]
    for mode in [m for m in runs if m != "off"]:
        on = runs[mode]
        mbs = (statistics.median(m.mb_per_s for m in off), statistics.median(m.mb_per_s for m in on))
        cpu = (statistics.median(m.cpu_s_per_mb for m in off), statistics.median(m.cpu_s_per_mb for m in on))
        pairs = [b.cpu_s_per_mb / a.cpu_s_per_mb for a, b in zip(off, on, strict=True)]
        per_req = ""
        if "requests" in off[0].extra:
            us = [statistics.median(m.broker_cpu_s / m.extra["requests"] * 1e6 for m in v) for v in (off, on)]
            per_req = f" {us[0]:10.1f} {us[1]:10.1f}"
        label = name if mode == "on" else f"{name} [{mode}]"
        print(
            f"{label:38} {mbs[0]:9.1f} {mbs[1]:9.1f} {mbs[1] / mbs[0]:6.3f} "
            f"{cpu[0]:13.5f} {cpu[1]:12.5f} {cpu[1] / cpu[0]:6.3f} {statistics.median(pairs):6.3f} {max(pairs):6.3f}"
            f"{per_req}",
            flush=True,
        )
    scrapes = sum(m.extra.get("scrapes", 0) for m in runs["on"])
    kb = max(m.extra.get("scrape_kb", 0) for m in runs["on"])
    print(f"{'':38} ({scrapes} scrapes while metrics were on, {kb:.0f} KiB each; {_load()})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", type=int, default=2, help="fresh sets of brokers (one per mode) per case")
    parser.add_argument("--rounds", type=int, default=5, help="bursts per broker of a set, modes alternating")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of a produce burst")
    parser.add_argument("--requests-scale", type=float, default=1.0, help="scales the requests of a replay run")
    parser.add_argument("--window", type=int, default=8, help="replay requests in flight")
    parser.add_argument("--scrape-every", type=float, default=5.0)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these cases")
    parser.add_argument("--src", type=Path, default=None, help="run the broker from this src/ (default: the installed one)")
    parser.add_argument(
        "--before-src", type=Path, default=None, help="also run with metrics on from this src/ (an earlier tree)"
    )
    args = parser.parse_args()
    names = args.case or list(CASES)
    modes = ["off", "on"] + (["before"] if args.before_src is not None else [])
    print(f"start: {_load()}")
    print(
        f"{'case':38} {'off MB/s':>9} {'on MB/s':>9} {'ratio':>6} {'off CPU s/MB':>13} {'on CPU s/MB':>12} "
        f"{'ratio':>6} {'pairs':>6} {'worst':>6} {'off us/req':>10} {'on us/req':>10}"
    )
    with tempfile.TemporaryDirectory(prefix="zurau-metrics-bench-") as tmp:
        workdir = Path(tmp)
        for name in names:
            runs: dict[str, list[Measurement]] = {mode: [] for mode in modes}
            for _ in range(args.sets):
                for mode, ms in _run_set(workdir, CASES[name], modes, args).items():
                    runs[mode] += ms
            _report(name, runs)


if __name__ == "__main__":
    main()
