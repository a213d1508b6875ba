"""What TLS costs: produce and consume throughput over an SSL listener against a PLAINTEXT one.

    .venv/bin/python -m bench.tls [--runs 3] [--seconds 5] [--size 1024] [--partitions 4] [--zurau-src DIR]

Each run starts a fresh broker process (``zurau broker start``) per mode, alternating
PLAINTEXT/SSL: the SSL broker listens on ``SSL://127.0.0.1`` with a generated CA and a PEM key
store (ECDSA P-256; TLS 1.3, whatever cipher OpenSSL and librdkafka agree on) and confluent-kafka
connects with ``security.protocol=SSL``. Workloads (confluent-kafka, bench._workloads' settings):
produce ``--size``-byte records with acks=1 for ``--seconds``; then consume what a fill wrote from
offset 0. Prints, per mode, the median and best throughput and the median broker and client CPU
per MB, and the ratios SSL/PLAINTEXT of the medians (and of the bests). Under TLS, fetched bytes
cannot go out with sendfile: they are read from the page cache and encrypted in the event loop's
TLS transport. ``--zurau-src`` runs another checkout's ``src/`` (A/B runs).

Where TLS time goes (measured 2026-11-29, OpenSSL 3.0, TLS_AES_256_GCM_SHA384): confluent-kafka
writes a produce request as one TLS record per buffer segment, ~10 bytes of record header then the
value, so 1 KiB records arrive as ~2,000 TLS records per MB, and OpenSSL spends ~2.3 us per
record besides its bytes (~4.5 ms/MB in the broker's event loop, against ~0.7 ms/MB for the same
bytes in 16 KiB records); fetches go out in full 16 KiB records.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench._brokers import ZurauBroker
from bench._provenance import provenance_line
from bench._workloads import Measurement, consume_throughput, create_topic, fill, produce_throughput
from zurau.testing.certificates import TestCA


class TlsZurauBroker(ZurauBroker):
    """Zurau with a single SSL listener (PEM key store) on its port."""

    def __init__(self, workdir: Path, ca: TestCA, keystore: Path, src: Path | None = None) -> None:
        super().__init__(
            workdir,
            src,
            **{
                "listeners": f"SSL://127.0.0.1:{0}",
                "listener.security.protocol.map": "SSL:SSL",
                "inter.broker.listener.name": "SSL",
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore),
            },
        )
        self.overrides["listeners"] = f"SSL://127.0.0.1:{self.port}"
        self.ca = ca

    def client_security(self) -> dict[str, str]:
        return {"security.protocol": "SSL", "ssl.ca.location": str(self.ca.cert_path)}


Workload = Callable[[ZurauBroker, float], Measurement]


def _produce(size: int, partitions: int) -> Workload:
    def run(b: ZurauBroker, seconds: float) -> Measurement:
        topic = create_topic(b, partitions)
        return produce_throughput(
            b, topic=topic, partitions=partitions, size=size, acks="1", compression="none",
            max_records=3_000_000 * 1024 // size, max_seconds=seconds,
        )

    return run


def _consume(size: int, partitions: int, records: int) -> Workload:
    def run(b: ZurauBroker, seconds: float) -> Measurement:
        topic = create_topic(b, partitions)
        fill(b, topic, partitions, size, records)
        return consume_throughput(b, topic=topic, partitions=partitions, size=size, records=records, max_seconds=seconds * 4)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--consume-records", type=int, default=300_000)
    ap.add_argument("--zurau-src", type=Path, default=None, help="run this checkout's src/ instead of the installed one")
    args = ap.parse_args()
    print(provenance_line(clients=["confluent_kafka"]))
    with tempfile.TemporaryDirectory(prefix="zurau-bench-tls-") as tmp:
        work = Path(tmp)
        ca = TestCA(work / "pki")
        keystore = ca.issue("server", "localhost", server=True).keystore
        cases: dict[str, Workload] = {
            f"produce {args.size} B acks=1": _produce(args.size, args.partitions),
            f"consume {args.size} B": _consume(args.size, args.partitions, args.consume_records),
        }
        for label, workload in cases.items():
            results: dict[str, list[Measurement]] = {"PLAINTEXT": [], "SSL": []}
            for _ in range(args.runs):
                for mode in ("PLAINTEXT", "SSL"):
                    broker = (
                        ZurauBroker(work, args.zurau_src) if mode == "PLAINTEXT"
                        else TlsZurauBroker(work, ca, keystore, args.zurau_src)
                    )
                    broker.start()
                    try:
                        results[mode].append(workload(broker, args.seconds))
                    finally:
                        broker.stop()
            _report(label, results)


def _report(label: str, results: dict[str, list[Measurement]]) -> None:
    """One line per workload: medians (and bests) per mode and the SSL/PLAINTEXT ratios."""
    med = {m: statistics.median(r.mb_per_s for r in rs) for m, rs in results.items()}
    best = {m: max(r.mb_per_s for r in rs) for m, rs in results.items()}
    cpu = {m: statistics.median(r.cpu_s_per_mb for r in rs) * 1000 for m, rs in results.items()}
    client = {
        m: statistics.median(r.client_cpu_s / (r.payload_bytes / 1e6) for r in rs if r.payload_bytes) * 1000
        for m, rs in results.items()
    }
    runs = {m: " ".join(f"{r.mb_per_s:.0f}" for r in rs) for m, rs in results.items()}
    print(
        f"{label:24s} PLAINTEXT median {med['PLAINTEXT']:7.1f} MB/s (runs {runs['PLAINTEXT']})  "
        f"SSL median {med['SSL']:7.1f} MB/s (runs {runs['SSL']})  ratio of medians {med['SSL'] / med['PLAINTEXT']:.2f} "
        f"(of bests {best['SSL'] / best['PLAINTEXT']:.2f})   broker CPU ms/MB {cpu['PLAINTEXT']:.1f} -> {cpu['SSL']:.1f} "
        f"(x{cpu['SSL'] / cpu['PLAINTEXT']:.2f})   client CPU ms/MB {client['PLAINTEXT']:.1f} -> {client['SSL']:.1f}"
    )


if __name__ == "__main__":
    main()
