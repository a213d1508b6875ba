"""The REST proxy against the native Kafka protocol on the same broker: produce and consume
throughput over HTTP, and the proxy's CPU per MB.

    .venv/bin/python -m bench.rest_proxy [--records 20000] [--size 1024] [--runs 3] [--quick]

Each run starts a fresh broker process (``zurau broker start``) and a REST proxy process
(``zurau rest-proxy start``) in front of it, both on 127.0.0.1, and a topic of 4 partitions per
case. ``--records`` records of ``--size`` bytes each (MB = 10**6 bytes of record values):

* native produce / consume: confluent-kafka (acks=all; consume from offset 0), the ceiling;
* v3 streamed produce: one chunked ``POST .../records`` carrying every record as concatenated
  JSON (BINARY values), one delivery report per record read back as it comes;
* v2 batched produce: ``POST /topics/{t}`` with 500 records per request
  (``application/vnd.kafka.binary.v2+json``), one request at a time;
* v3 one record per request: ``--single`` records, one request each (records/s; the cost of
  one HTTP round trip and one acknowledged produce);
* v2 consume: a consumer instance (binary) assigned to every partition from offset 0, polled with
  ``max_bytes`` 8 MB and ``timeout`` 200 ms (a v2 read waits that long unless max_bytes fill) until
  every record arrived;
* streaming consume: ``GET .../records:stream?from=beginning&limit=N`` (NDJSON).

The HTTP client is httpx in this process; the table gives the proxy's CPU per MB and this
process's (the client's), so a client-bound figure shows as such. Values travel base64-encoded
in JSON, so an HTTP MB of records is ~1.4 MB on the wire. Confluent publishes no throughput
figures for its proxy to compare with.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench._brokers import ZurauBroker, process_cpu_seconds
from bench._provenance import provenance_line
from bench._workloads import CONSUMER_BASE, PRODUCER_BASE, create_topic, make_values
from zurau.testing.broker_process import HOST, ServerProcess, free_port

PARTITIONS = 4
V2 = "application/vnd.kafka.v2+json"
V2_BINARY = "application/vnd.kafka.binary.v2+json"


class RestProxyProcess(ServerProcess):
    """``zurau rest-proxy start`` on 127.0.0.1:``port`` in front of ``bootstrap``."""

    new_session = True
    start_timeout = 30.0

    def __init__(self, workdir: Path, bootstrap: str) -> None:
        port = free_port()
        super().__init__(port, workdir / f"rest-proxy-{port}.log")
        self.bootstrap = bootstrap

    def command(self) -> list[str]:
        import sys

        return [
            sys.executable, "-m", "zurau.cli.main", "rest-proxy", "start", "--log-level", "WARNING",
            "-o", f"listeners=http://{HOST}:{self.port}", "-o", f"bootstrap.servers={self.bootstrap}",
            "-o", "producer.linger.ms=5", "-o", "producer.batch.size=1048576",
        ]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


@dataclass
class Result:
    case: str
    seconds: float
    records: int
    payload_bytes: int
    proxy_cpu_s: float
    broker_cpu_s: float
    client_cpu_s: float

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / 1e6 / self.seconds if self.seconds else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


Case = Callable[["Setup"], tuple[int, int]]


@dataclass
class Setup:
    broker: ZurauBroker
    proxy: RestProxyProcess
    http: httpx.Client
    cluster_id: str
    values: list[bytes]
    records: int
    single: int

    def topic(self) -> str:
        return create_topic(self.broker, PARTITIONS, prefix="rest")

    def filled_topic(self) -> str:
        topic = self.topic()
        p = Producer({"bootstrap.servers": self.broker.bootstrap_servers, **PRODUCER_BASE, "acks": "all"})
        for i in range(self.records):
            p.produce(topic, self.values[i % len(self.values)], partition=i % PARTITIONS)
            if i % 10_000 == 0:
                p.poll(0)
        assert p.flush(120) == 0
        return topic


def _measure(case: str, setup: Setup, run: Callable[[], tuple[int, int]]) -> Result:
    proxy0, broker0, client0 = process_cpu_seconds(setup.proxy.pid), setup.broker.cpu_seconds(), time.process_time()
    t0 = time.perf_counter()
    records, payload = run()
    seconds = time.perf_counter() - t0
    return Result(
        case, seconds, records, payload,
        process_cpu_seconds(setup.proxy.pid) - proxy0, setup.broker.cpu_seconds() - broker0, time.process_time() - client0,
    )


def native_produce(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.topic()
    p = Producer({"bootstrap.servers": s.broker.bootstrap_servers, **PRODUCER_BASE, "acks": "all"})

    def run() -> tuple[int, int]:
        size = 0
        for i in range(s.records):
            v = s.values[i % len(s.values)]
            p.produce(topic, v)
            size += len(v)
            if i % 10_000 == 0:
                p.poll(0)
        assert p.flush(120) == 0
        return s.records, size

    return run


def v3_streamed_produce(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.topic()
    encoded = [base64.b64encode(v).decode() for v in s.values]

    def body() -> Iterator[bytes]:
        chunk: list[str] = []
        for i in range(s.records):
            chunk.append(json.dumps({"value": {"type": "BINARY", "data": encoded[i % len(encoded)]}}))
            if len(chunk) == 100:
                yield "".join(chunk).encode()
                chunk = []
        if chunk:
            yield "".join(chunk).encode()

    def run() -> tuple[int, int]:
        decoder = json.JSONDecoder()
        reports = 0
        buf = ""
        url = f"/v3/clusters/{s.cluster_id}/topics/{topic}/records"
        with s.http.stream("POST", url, content=body(), headers={"Content-Type": "application/json"}) as r:
            assert r.status_code == 200, r.read()
            for text in r.iter_text():
                buf += text
                while True:
                    buf = buf.lstrip()
                    if not buf:
                        break
                    try:
                        report, end = decoder.raw_decode(buf)
                    except ValueError:
                        break
                    assert report.get("error_code") == 200, report
                    reports += 1
                    buf = buf[end:]
        assert reports == s.records, (reports, s.records)
        return reports, sum(len(s.values[i % len(s.values)]) for i in range(s.records))

    return run


def v2_batched_produce(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.topic()
    encoded = [base64.b64encode(v).decode() for v in s.values]

    def run() -> tuple[int, int]:
        for start in range(0, s.records, 500):
            n = min(500, s.records - start)
            body = {"records": [{"value": encoded[(start + i) % len(encoded)]} for i in range(n)]}
            r = s.http.post(f"/topics/{topic}", content=json.dumps(body), headers={"Content-Type": V2_BINARY, "Accept": V2})
            assert r.status_code == 200, r.text
            assert all(o.get("error") is None for o in r.json()["offsets"])
        return s.records, sum(len(s.values[i % len(s.values)]) for i in range(s.records))

    return run


def v3_single_produce(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.topic()
    encoded = [base64.b64encode(v).decode() for v in s.values]

    def run() -> tuple[int, int]:
        url = f"/v3/clusters/{s.cluster_id}/topics/{topic}/records"
        for i in range(s.single):
            body = json.dumps({"value": {"type": "BINARY", "data": encoded[i % len(encoded)]}})
            r = s.http.post(url, content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == 200 and r.json()["error_code"] == 200, r.text
        return s.single, sum(len(s.values[i % len(s.values)]) for i in range(s.single))

    return run


def native_consume(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.filled_topic()
    c = Consumer({"bootstrap.servers": s.broker.bootstrap_servers, "group.id": f"bench-{topic}", **CONSUMER_BASE})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])

    def run() -> tuple[int, int]:
        got = size = 0
        deadline = time.monotonic() + 300
        while got < s.records and time.monotonic() < deadline:
            for m in c.consume(10_000, 0.1):
                if m.error() is None:
                    got += 1
                    size += len(m.value())
        c.close()
        return got, size

    return run


def v2_consume(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.filled_topic()
    group = f"bench-v2-{topic}"
    r = s.http.post(f"/consumers/{group}", json={"name": "c", "format": "binary", "auto.offset.reset": "earliest"},
                    headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    base = f"/consumers/{group}/instances/c"
    r = s.http.post(f"{base}/assignments", headers={"Content-Type": V2},
                    json={"partitions": [{"topic": topic, "partition": p} for p in range(PARTITIONS)]})
    assert r.status_code == 204, r.text
    r = s.http.post(f"{base}/positions/beginning", headers={"Content-Type": V2},
                    json={"partitions": [{"topic": topic, "partition": p} for p in range(PARTITIONS)]})
    assert r.status_code == 204, r.text

    def run() -> tuple[int, int]:
        got = size = 0
        deadline = time.monotonic() + 300
        while got < s.records and time.monotonic() < deadline:
            r = s.http.get(f"{base}/records", params={"timeout": 200, "max_bytes": 8_000_000},
                           headers={"Accept": "application/vnd.kafka.binary.v2+json"})
            assert r.status_code == 200, r.text
            for rec in r.json():
                got += 1
                size += len(base64.b64decode(rec["value"]))
        s.http.delete(base, headers={"Content-Type": V2})
        return got, size

    return run


def stream_consume(s: Setup) -> Callable[[], tuple[int, int]]:
    topic = s.filled_topic()

    def run() -> tuple[int, int]:
        got = size = 0
        url = f"/v3/clusters/{s.cluster_id}/topics/{topic}/records:stream"
        with s.http.stream("GET", url, params={"from": "beginning", "limit": s.records, "format": "binary"}) as r:
            assert r.status_code == 200, r.read()
            for line in r.iter_lines():
                if not line:
                    continue
                rec = json.loads(line)
                assert "error_code" not in rec, rec
                got += 1
                size += len(base64.b64decode(rec["value"]))
        return got, size

    return run


CASES: dict[str, Callable[[Setup], Callable[[], tuple[int, int]]]] = {
    "native produce (confluent-kafka)": native_produce,
    "v3 streamed produce (one chunked request)": v3_streamed_produce,
    "v2 batched produce (500 per request)": v2_batched_produce,
    "v3 one record per request": v3_single_produce,
    "native consume (confluent-kafka)": native_consume,
    "v2 consume (consumer instance)": v2_consume,
    "streaming consume (NDJSON)": stream_consume,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--single", type=int, default=1_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1 run, 2,000 records")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.records, args.single = 1, 2_000, 200
    import httpx as _httpx

    print(provenance_line(clients=["confluent_kafka"]) + f" HTTP client: httpx {_httpx.__version__}.")
    results: dict[str, list[Result]] = {c: [] for c in CASES}
    with tempfile.TemporaryDirectory(prefix="zurau-bench-rest-") as tmp:
        work = Path(tmp)
        for _ in range(args.runs):
            broker = ZurauBroker(work)
            broker.start()
            proxy = RestProxyProcess(work, broker.bootstrap_servers)
            try:
                proxy.start()
                with httpx.Client(base_url=proxy.url, timeout=300) as http:
                    cluster_id = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
                    setup = Setup(broker, proxy, http, cluster_id, make_values(args.size), args.records, args.single)
                    for case, make in CASES.items():
                        results[case].append(_measure(case, setup, make(setup)))
            finally:
                proxy.stop()
                broker.stop()
    _report(results, args)
    return 0


def _report(results: dict[str, list[Result]], args: argparse.Namespace) -> None:
    print(f"\n{args.records:,} records of {args.size} B ({args.single:,} for one-per-request), 4 partitions, "
          f"median of {args.runs} run(s); CPU in ms per MB of record values\n")
    print("| Case | MB/s | records/s | vs native | proxy CPU ms/MB | broker CPU ms/MB | client CPU ms/MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    native = {
        "produce": statistics.median(r.mb_per_s for r in results["native produce (confluent-kafka)"]),
        "consume": statistics.median(r.mb_per_s for r in results["native consume (confluent-kafka)"]),
    }
    for case, rs in results.items():
        mb = statistics.median(r.mb_per_s for r in rs)
        rps = statistics.median(r.records_per_s for r in rs)
        ref = native["consume" if "consume" in case else "produce"]

        def per_mb(attr: str, rs: list[Result] = rs) -> float:
            return statistics.median(getattr(r, attr) / (r.payload_bytes / 1e6) for r in rs if r.payload_bytes) * 1000

        proxy_cpu = "-" if case.startswith("native") else f"{per_mb('proxy_cpu_s'):.1f}"
        print(f"| {case} | {mb:.1f} | {rps:,.0f} | {mb / ref:.2f}x | {proxy_cpu} | {per_mb('broker_cpu_s'):.1f} | "
              f"{per_mb('client_cpu_s'):.1f} |")


if __name__ == "__main__":
    raise SystemExit(main())
