"""The broker CPU that metrics add to one Produce request, measured in one process, where the
machine's disk and scheduler cannot blur it.

    .venv/bin/python -m bench.metrics_cpu [--rounds 21] [--requests-scale 1.0] [--dir DIR]

Two brokers run on one event loop in this process: ``off`` (no ``metrics.http.listener``) and
``on`` (metrics served on an ephemeral port, and scraped over HTTP every ``--scrape-every``
seconds by a thread, the scrape's own work running on the loop as in a real broker). Each gets a
connection whose transport only counts what it is asked to write (so socket syscalls, the same
in both modes, are left out: that makes the reported overhead an upper bound), and the bench
hands that connection identical pre-encoded Produce v9 frames, ``--window`` in flight, as a
client's bytes would arrive. The loop thread's own CPU time (``time.thread_time_ns``) over a
burst, divided by its requests, is the broker's CPU per request; bursts alternate between the
brokers (``off, on`` then ``on, off``), ``--rounds`` pairs per case.

The cases are the request shapes that matter: what confluent-kafka sends when it produces as fast
as it can (linger.ms=5 and 1 MiB batches: measured ~9,000 records of 100 B, ~1,000 of 1 KiB per
partition and request, see BENCHMARKS.md), smaller batches, and the worst case of one record per
request. Logs go under ``--dir`` (the temp directory by default), with retention tight enough (``log.segment.bytes`` 64 MiB, ``retention.bytes`` 128 MiB per partition, checked every
second) that a run's footprint stays bounded.

Printed per case: median CPU per request off and on, the ratio of the medians, the median and
the worst (highest) ratio of one round's pair, and what metrics cost per request in microseconds.
Every burst of ``on`` checks that the recorder counted exactly the records and requests sent.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import uvloop
from confluent_kafka.admin import AdminClient, NewTopic

from bench.metrics_overhead import Scraper, produce_frame
from zurau.broker.connection import KafkaConnection
from zurau.embedded import EmbeddedBroker, free_ports


class Shape(NamedTuple):
    size: int  # bytes per record value
    records: int  # records per partition and request
    acks: int
    partitions: int
    requests: int  # per burst, before --requests-scale


SHAPES: dict[str, Shape] = {
    # What confluent-kafka sends producing flat out (BENCHMARKS.md, "Metrics overhead").
    "client 100 B x9000 acks=1 1p": Shape(100, 9000, 1, 1, 300),
    "client 1 KiB x1000 acks=all 1p": Shape(1024, 1000, -1, 1, 300),
    "client 1 KiB x125 acks=1 8p": Shape(1024, 125, 1, 8, 300),
    # Smaller batches: a producer with linger.ms=0 at a moderate rate.
    "100 B x100 acks=1 1p": Shape(100, 100, 1, 1, 4000),
    "1 KiB x10 acks=all 1p": Shape(1024, 10, -1, 1, 6000),
    # The worst case for a fixed per-request cost.
    "100 B x1 acks=1 1p": Shape(100, 1, 1, 1, 10000),
}

_RETENTION: dict[str, Any] = {
    "log.segment.bytes": str(64 << 20),
    "log.retention.bytes": str(128 << 20),
    "log.retention.check.interval.ms": "1000",
}


class _CountingTransport:
    """Stands in for a socket: counts the responses written to it and discards them."""

    def __init__(self) -> None:
        self.responses = 0
        self.closed = False
        # Woken when ``responses`` reaches ``target`` (the bench waits without spinning).
        self.target = 0
        self.waiter: asyncio.Future[None] | None = None

    async def wait_for(self, responses: int) -> None:
        if self.responses < responses:
            self.target = responses
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 0) if name == "peername" else default

    def writelines(self, pieces: Any) -> None:
        self.responses += 1
        if self.waiter is not None and self.responses >= self.target and not self.waiter.done():
            self.waiter.set_result(None)

    def write(self, data: Any) -> None:  # a response written in parts (file regions)
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(RuntimeError("the broker closed the bench's connection"))


class _Side:
    """One broker of the pair with its topic and its connection."""

    def __init__(self, broker: EmbeddedBroker, topic: str, frame: bytes) -> None:
        self.broker = broker
        self.topic = topic
        self.body = bytearray(frame[4:])  # the frame without its size prefix
        self.transport = _CountingTransport()
        app = broker.broker
        assert app.server is not None
        self.conn = KafkaConnection(app.server, "PLAINTEXT")
        self.conn.connection_made(self.transport)  # type: ignore[arg-type]
        self.metrics = app.metrics

    async def burst(self, count: int, window: int) -> float:
        """CPU seconds (user and system) of this thread to have ``count`` requests answered."""
        conn, tr, body = self.conn, self.transport, self.body
        start = tr.responses
        pack = struct.Struct(">i").pack_into
        t0 = time.thread_time_ns()
        sent = 0
        while sent < count:
            while sent < count and sent - (tr.responses - start) < window:
                frame = bytearray(body)
                pack(frame, 4, sent)  # correlation id
                conn._on_frame(frame)
                sent += 1
            await tr.wait_for(start + sent - window // 2 if sent < count else start + count)
            await asyncio.sleep(0)  # let the loop's other work run (timers, a scrape), as a socket's would
        return (time.thread_time_ns() - t0) / 1e9

    def counted(self) -> tuple[int, int]:
        """(records in, Produce requests) as the recorder holds them."""
        assert self.metrics is not None
        stats = self.metrics.topics.get(self.topic)
        requests = self.metrics.requests.get(0)
        return (stats.messages_in if stats else 0, sum(requests.versions.values()) if requests else 0)


def _create_topic(bootstrap: str, partitions: int) -> str:
    name = f"bench-{os.urandom(5).hex()}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)[name].result(60)
    return name


async def _run_case(name: str, shape: Shape, args: argparse.Namespace, root: Path) -> None:
    count = max(int(shape.requests * args.requests_scale), 10)
    listener = f"http://127.0.0.1:{free_ports(1)[0]}"
    off = EmbeddedBroker(tempfile.mkdtemp(dir=root), **_RETENTION)
    on = EmbeddedBroker(tempfile.mkdtemp(dir=root), **{**_RETENTION, "metrics.http.listener": listener})
    async with off, on:
        sides = {}
        for label, b in (("off", off), ("on", on)):
            topic = await asyncio.to_thread(_create_topic, b.bootstrap_servers, shape.partitions)
            frame = produce_frame(topic, shape.partitions, shape.size, shape.records, shape.acks)
            sides[label] = _Side(b, topic, frame)
        for side in sides.values():  # warm-up: first appends, caches
            await side.burst(max(count // 5, 10), args.window)
        scraper = Scraper(f"{listener}/metrics", args.scrape_every)
        scraper.start()
        cpu: dict[str, list[float]] = {"off": [], "on": []}
        try:
            for i in range(args.rounds):
                for label in ("off", "on") if i % 2 == 0 else ("on", "off"):
                    side = sides[label]
                    before = side.counted() if label == "on" else (0, 0)
                    cpu[label].append(await side.burst(count, args.window) / count)
                    if label == "on":
                        after = side.counted()
                        moved = (after[0] - before[0], after[1] - before[1])
                        expect = (count * shape.records * shape.partitions, count)
                        if moved != expect:
                            raise RuntimeError(f"metrics counted {moved} (records, requests); sent {expect}")
        finally:
            scraper.stopped.set()
            await asyncio.to_thread(scraper.join)
    _report(name, cpu, scraper.scrapes)


def _report(name: str, cpu: dict[str, list[float]], scrapes: int) -> None:
    off, on = statistics.median(cpu["off"]), statistics.median(cpu["on"])
    pairs = [b / a for a, b in zip(cpu["off"], cpu["on"], strict=True)]
    print(
        f"{name:32} {off * 1e6:10.1f} {on * 1e6:10.1f} {on / off:7.3f} {statistics.median(pairs):7.3f} "
        f"{max(pairs):7.3f} {(on - off) * 1e6:8.2f} {scrapes:8d}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=21, help="pairs of bursts per case, order alternating")
    parser.add_argument("--requests-scale", type=float, default=1.0, help="scales the requests of a burst")
    parser.add_argument("--window", type=int, default=8, help="requests in flight")
    parser.add_argument("--scrape-every", type=float, default=5.0)
    parser.add_argument("--dir", type=Path, default=None, help="where the logs go (default: the temp directory)")
    parser.add_argument("--case", action="append", choices=sorted(SHAPES), help="only these cases")
    args = parser.parse_args()
    one, five, _ = os.getloadavg()
    print(f"start: load average {one:.2f} / {five:.2f} (1/5 min) on {os.cpu_count()} cores")
    print(
        f"{'case':32} {'off us/req':>10} {'on us/req':>10} {'ratio':>7} {'pairs':>7} {'worst':>7} "
        f"{'+us/req':>8} {'scrapes':>8}"
    )
    root = Path(tempfile.mkdtemp(prefix="zurau-metrics-cpu-", dir=args.dir))
    try:
        for name in args.case or list(SHAPES):
            uvloop.run(_run_case(name, SHAPES[name], args, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
