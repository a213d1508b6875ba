"""Tiered storage (KIP-405, issue 33): consume from the remote tier against the local one, the time
from a segment's roll to its upload, the broker's CPU per MB tiered, and local disk under a steady
produce while the retained total grows.

    .venv/bin/python -m bench.tiered_storage [--plugins file,s3] [--mb 64] [--rate-mb 2] [--seconds 30]

One broker process per plugin (``zurau broker start``, 127.0.0.1, WARNING logs), with
``remote.log.manager.task.interval.ms`` and ``log.retention.check.interval.ms`` at 1,000 ms
(Kafka's defaults are 30,000 and 300,000: a roll-to-upload time measured here is the copy's own
cost plus up to one task interval, not what the defaults give). Plugins: ``file`` (a directory on
the same disk) and ``s3`` (moto's in-memory S3 server in its own process, :mod:`zurau.testing.s3_server`;
moto is Python and not S3, so its figures bound the plugin's path, not a real bucket's).
Records: 1 KiB values (bench._workloads.make_values), keyless, confluent-kafka, one partition.

Steps per plugin:

1. *Tiering cost*: a topic created with ``remote.storage.enable=false`` (4 MiB segments) is filled
   with ``--mb`` MB; then ``remote.storage.enable=true`` and ``local.retention.bytes`` (16 MiB) are
   set, and the broker's CPU time (``/proc/<pid>/stat``, all threads) is taken from that change until
   LATEST_TIERED (ListOffsets -5) reaches the last closed segment and the local log start has moved
   (copies, metadata records, local deletions), minus the broker's idle CPU rate over the same time.
2. *Consume*: on that topic, a fresh confluent-kafka consumer per read reads ``[0, local start)``
   (the remote tier) -- *cold* once (first read: the broker's remote index cache is empty; the
   file plugin's files may still be in the OS page cache, which this does not drop), then *warm*
   three times -- and ``[local start, end)`` (the local tier; page-cache warm, as a recent tail is)
   three times; warm and local give the run of median time. MB/s from assign to the last
   record, MB = 10**6 bytes of values; broker CPU over the same span (10 ms ticks).
3. *Steady produce*: a second topic (4 MiB segments, ``local.retention.bytes`` 8 MiB) takes
   ``--rate-mb`` MB/s for ``--seconds`` s. Every 50 ms ListOffsets latest and -5 are polled: a
   segment ending at offset X rolled when the log end first passed X + 1 and was uploaded when -5
   first reached X. Every second the partition's local files and its remote objects are summed.

Tansu: no comparison. It keeps no local log to tier: with ``--storage-engine s3://`` (or
PostgreSQL) every produced batch goes to the store as it comes, so there is no segment roll, no
upload lag, no local disk to hold flat and no "remote vs local" read: steps 1 and 3 have no
counterpart. Its consume from S3 could be set against step 2's remote read, but against moto that
measures moto's Python server for both, with Tansu's per-batch objects against Zurau's per-segment
ranged reads; it was not run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from bench._brokers import ZurauBroker, process_cpu_seconds
from bench._provenance import provenance_line
from bench._steps import load_average
from bench._workloads import CONSUMER_BASE, make_values

SIZE = 1024
SEGMENT = 4 << 20
BROKER = {
    "remote.log.storage.system.enable": "true",
    "remote.log.manager.task.interval.ms": "1000",
    "log.retention.check.interval.ms": "1000",
    "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
    "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
}
BUCKET = "bench-tiered"
EARLIEST_LOCAL, LATEST_TIERED, LATEST = -4, -5, -1


@dataclass
class Store:
    """Where the remote tier is, and how big it is now."""

    plugin: str
    configs: dict[str, str]
    remote_dir: Path | None = None
    s3: Any = None  # zurau.testing.s3_server.S3Server

    def remote_bytes(self, topic: str) -> int:
        if self.remote_dir is not None:
            return sum(
                f.stat().st_size
                for d in self.remote_dir.glob(f"{topic}-*")
                for f in d.rglob("*")
                if f.is_file()
            )
        import boto3

        c = self.s3.plugin_configs(BUCKET)
        client = boto3.client(
            "s3",
            endpoint_url=self.s3.endpoint_url,
            region_name=c["s3.region"],
            aws_access_key_id=c["s3.access.key.id"],
            aws_secret_access_key=c["s3.secret.access.key"],
        )
        total = 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{topic}-"):
            total += sum(o["Size"] for o in page.get("Contents", []))
        return total


@dataclass
class Results:
    plugin: str
    tier_mb: float = 0.0
    tier_s: float = 0.0
    tier_cpu_s: float = 0.0
    reads: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # case -> MB, s, cpu s
    roll_to_upload_s: list[float] = field(default_factory=list)
    disk: list[tuple[float, float, float, float]] = field(
        default_factory=list
    )  # t, produced, local, remote MB


def _offset(c: Consumer, topic: str, ts: int) -> int:
    return int(c.offsets_for_times([TopicPartition(topic, 0, ts)], 10)[0].offset)


def _create(admin: AdminClient, topic: str, configs: dict[str, str]) -> None:
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)


def _fill(bs: str, topic: str, mb: float) -> int:
    values = make_values(SIZE)
    n = int(mb * 1e6 / SIZE)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "batch.size": 1 << 20, "acks": "1"})
    for i in range(n):
        while True:
            try:
                p.produce(topic, values[i % len(values)])
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(120) == 0, "fill did not complete"
    return n


def _read(bs: str, topic: str, start: int, end: int, broker_pid: int) -> tuple[float, float, float]:
    """(MB, seconds, broker CPU s) of reading offsets [start, end) with a fresh consumer."""
    c = Consumer({**CONSUMER_BASE, "bootstrap.servers": bs, "group.id": f"read-{time.time_ns()}"})
    cpu0 = process_cpu_seconds(broker_pid)
    t0 = time.perf_counter()
    c.assign([TopicPartition(topic, 0, start)])
    got, last, elapsed, cpu = 0, start - 1, 0.0, 0.0
    deadline = time.monotonic() + 180
    while last < end - 1 and time.monotonic() < deadline:
        # A short timeout: consume() holds fewer than 1000 records back until it expires, which
        # at the end of the range would be counted as reading time.
        for m in c.consume(1000, 0.01):
            if m.error() is None:
                got += len(m.value() or b"")
                last = m.offset()
                if last >= end - 1:
                    elapsed = time.perf_counter() - t0
                    cpu = process_cpu_seconds(broker_pid) - cpu0
                    break
    c.close()
    if last < end - 1:
        raise RuntimeError(f"read of {topic} [{start}, {end}) stopped at {last}")
    return got / 1e6, elapsed, cpu


def tiering_and_consume(broker: ZurauBroker, store: Store, mb: float, res: Results) -> None:
    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    topic = f"tier-{store.plugin}"
    _create(admin, topic, {"segment.bytes": str(SEGMENT), "retention.ms": "-1"})
    n = _fill(bs, topic, mb)
    probe = Consumer({"bootstrap.servers": bs, "group.id": "probe"})
    # The broker's idle CPU rate (its periodic tasks), to subtract.
    cpu0, t0 = process_cpu_seconds(broker.pid), time.monotonic()
    time.sleep(2.0)
    idle_rate = (process_cpu_seconds(broker.pid) - cpu0) / (time.monotonic() - t0)
    res_ = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("remote.storage.enable", "true", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("local.retention.bytes", str(16 << 20), incremental_operation=AlterConfigOpType.SET),
        ],
    )
    cpu0, t0 = process_cpu_seconds(broker.pid), time.monotonic()
    admin.incremental_alter_configs([res_])[res_].result(30)
    # Settled: LATEST_TIERED and the local log start unchanged for 3 s (three task intervals).
    state, changed, cpu_at_change = (-1, 0), t0, cpu0
    while time.monotonic() - changed < 3.0:
        if time.monotonic() - t0 > 180:
            raise RuntimeError(f"{topic}: tiering did not settle ({state})")
        now = (_offset(probe, topic, LATEST_TIERED), _offset(probe, topic, EARLIEST_LOCAL))
        if now != state or now[0] < 0 or now[1] <= 0:
            state, changed, cpu_at_change = now, time.monotonic(), process_cpu_seconds(broker.pid)
        time.sleep(0.05)
    res.tier_s = changed - t0
    res.tier_cpu_s = cpu_at_change - cpu0 - idle_rate * res.tier_s
    res.tier_mb = store.remote_bytes(topic) / 1e6
    local = _offset(probe, topic, EARLIEST_LOCAL)
    probe.close()
    res.reads["remote, cold"] = _read(bs, topic, 0, local, broker.pid)
    res.reads["remote, warm"] = _median_read(bs, topic, 0, local, broker.pid)
    res.reads["local"] = _median_read(bs, topic, local, n, broker.pid)


def _median_read(
    bs: str, topic: str, start: int, end: int, broker_pid: int, runs: int = 3
) -> tuple[float, float, float]:
    """The run of median time of ``runs`` reads (reads of tens of MB take tenths of a second)."""
    reads = sorted((_read(bs, topic, start, end, broker_pid) for _ in range(runs)), key=lambda r: r[1])
    return reads[len(reads) // 2]


def _dir_bytes(path: Path) -> int:
    return sum(e.stat().st_size for e in os.scandir(path) if e.is_file()) if path.exists() else 0


def steady_produce(broker: ZurauBroker, store: Store, rate_mb: float, seconds: float, res: Results) -> None:
    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    topic = f"steady-{store.plugin}"
    _create(
        admin,
        topic,
        {
            "remote.storage.enable": "true",
            "segment.bytes": str(SEGMENT),
            "local.retention.bytes": str(8 << 20),
            "retention.ms": "-1",
        },
    )
    stop = threading.Event()
    produced = [0]

    def produce() -> None:
        values = make_values(SIZE)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "acks": "1"})
        per_tick = max(1, int(rate_mb * 1e6 / SIZE / 100))  # 100 ticks a second
        start = time.monotonic()
        tick = 0
        while not stop.is_set():
            for _ in range(per_tick):
                p.produce(topic, values[produced[0] % len(values)])
                produced[0] += 1
            p.poll(0)
            tick += 1
            delay = start + tick / 100 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        p.flush(30)

    polls: list[tuple[float, int, int]] = []  # (t, log end, latest tiered)

    def poll() -> None:
        c = Consumer({"bootstrap.servers": bs, "group.id": "poll"})
        while not stop.is_set():
            t = time.monotonic()
            leo, tiered = _offset(c, topic, LATEST), _offset(c, topic, LATEST_TIERED)
            polls.append((t, leo, tiered))
            time.sleep(0.05)
        c.close()

    part_dir = broker.data_dir / f"{topic}-0"
    threads = [threading.Thread(target=f, daemon=True) for f in (produce, poll)]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    while time.monotonic() - t0 < seconds:
        time.sleep(1.0)
        res.disk.append(
            (
                time.monotonic() - t0,
                produced[0] * SIZE / 1e6,
                _dir_bytes(part_dir) / 1e6,
                store.remote_bytes(topic) / 1e6,
            )
        )
    stop.set()
    for th in threads:
        th.join(30)
    # Roll -> upload: for each new LATEST_TIERED value X, from the first poll with the log end past
    # X + 1 (the next segment has its first batch) to the first poll with -5 >= X.
    seen: set[int] = set()
    for t_up, _leo, tiered in polls:
        if tiered < 0 or tiered in seen:
            continue
        seen.add(tiered)
        rolled = next((t for t, leo, _ in polls if leo > tiered + 1), None)
        if rolled is not None:
            res.roll_to_upload_s.append(max(t_up - rolled, 0.0))


def run_plugin(plugin: str, workdir: Path, mb: float, rate_mb: float, seconds: float) -> Results:
    res = Results(plugin)
    s3 = None
    if plugin == "file":
        remote = workdir / f"remote-{plugin}"
        store = Store(
            plugin, {"remote.log.storage.manager.class.name": "file", "rsm.config.dir": str(remote)}, remote
        )
    else:
        from zurau.testing.s3_server import S3Server

        s3 = S3Server(log_path=workdir / "moto.log").start()
        s3.create_bucket(BUCKET)
        cfg = {f"rsm.config.{k}": v for k, v in s3.plugin_configs(BUCKET).items()}
        store = Store(plugin, {"remote.log.storage.manager.class.name": "s3", **cfg}, None, s3)
    try:
        with ZurauBroker(workdir, **BROKER, **store.configs) as broker:
            tiering_and_consume(broker, store, mb, res)
            steady_produce(broker, store, rate_mb, seconds, res)
    finally:
        if s3 is not None:
            s3.stop()
    return res


def report(results: list[Results], rate_mb: float) -> None:
    print()
    print("Consume, one partition, 1 KiB records (MB/s from assign to the last record):")
    print(f"{'plugin':<7} {'tier read':<13} {'MB':>6} {'MB/s':>7} {'vs local':>9} {'broker CPU ms/MB':>17}")
    for r in results:
        local_rate = r.reads["local"][0] / r.reads["local"][1]
        for case, (mb, s, cpu) in r.reads.items():
            print(
                f"{r.plugin:<7} {case:<13} {mb:>6.1f} {mb / s:>7.1f} {mb / s / local_rate:>8.2f}x {cpu / mb * 1e3:>17.1f}"
            )
    print()
    print("Tiering an existing 4 MiB-segment topic (remote.storage.enable turned on):")
    print(
        f"{'plugin':<7} {'MB tiered':>9} {'seconds':>8} {'MB/s':>6} {'broker CPU ms/MB (idle removed)':>32}"
    )
    for r in results:
        print(
            f"{r.plugin:<7} {r.tier_mb:>9.1f} {r.tier_s:>8.1f} {r.tier_mb / r.tier_s:>6.1f} "
            f"{r.tier_cpu_s / r.tier_mb * 1e3:>32.1f}"
        )
    print()
    print(
        f"Steady produce at {rate_mb} MB/s, 4 MiB segments, local.retention.bytes 8 MiB, task interval 1 s:"
    )
    print(f"{'plugin':<7} {'segments':>8} {'roll->upload median':>20} {'max':>6}")
    for r in results:
        xs = r.roll_to_upload_s
        med = f"{statistics.median(xs):.2f} s" if xs else "-"
        mx = f"{max(xs):.2f} s" if xs else "-"
        print(f"{r.plugin:<7} {len(xs):>8} {med:>20} {mx:>6}")
    print()
    print("Disk under that produce (MB; local = the partition's directory, remote = its objects):")
    for r in results:
        step = max(1, len(r.disk) // 6)
        rows = r.disk[step - 1 :: step]
        print(
            f"  {r.plugin}: "
            + "; ".join(
                f"t={t:.0f}s produced {p:.0f} local {lo:.0f} remote {re:.0f}" for t, p, lo, re in rows
            )
        )
        print(
            f"  {r.plugin}: local max {max(lo for _, _, lo, _ in r.disk):.1f} MB over {len(r.disk)} samples"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugins", default="file,s3")
    ap.add_argument("--mb", type=float, default=64.0, help="MB filled before tiering (step 1, 2)")
    ap.add_argument("--rate-mb", type=float, default=2.0, help="steady produce rate (step 3)")
    ap.add_argument("--seconds", type=float, default=30.0, help="steady produce duration (step 3)")
    args = ap.parse_args()
    print(provenance_line(clients=["confluent_kafka"]))
    print(f"load average before: {load_average()}")
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-tiered-") as tmp:
        for plugin in args.plugins.split(","):
            t0 = time.monotonic()
            results.append(run_plugin(plugin, Path(tmp), args.mb, args.rate_mb, args.seconds))
            print(f"{plugin}: {time.monotonic() - t0:.0f} s", flush=True)
    report(results, args.rate_mb)
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
