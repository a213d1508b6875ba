"""What broker-side schema ID validation costs the produce path: the same framed records
(magic byte 0, a registered schema id, then the payload) produced to a topic without and with
``confluent.value.schema.validation=true``, interleaved, on one broker process started with
``confluent.schema.registry.url`` (a registry in this process, storing on that broker).

    .venv/bin/python -m bench.schema_validation [--runs 3] [--seconds 4]

Prints the best throughput of each mode and the median broker CPU per MB, and their ratios
on/off. Schema ids are cached by the broker, so after the first request the registry is not
asked again: what is measured is decoding every record to check its framing and id.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import urllib.request
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from bench._brokers import ZurauBroker
from bench._workloads import Measurement, make_values, produce_throughput
from zurau.embedded import free_ports
from zurau.schema_registry.embedded_registry import EmbeddedRegistry

CASES = {"1 KiB acks=1 1p": (1024, "1", 1), "100 B acks=1 1p": (100, "1", 1), "1 KiB acks=all 8p": (1024, "all", 8)}


def _topic(broker: ZurauBroker, partitions: int, validated: bool) -> str:
    name = f"sv-{uuid.uuid4().hex[:10]}"
    configs = {"confluent.value.schema.validation": "true"} if validated else {}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)], operation_timeout=30)[name].result(60)
    return name


def _register(registry_url: str, subject: str) -> int:
    body = json.dumps({"schema": json.dumps({"type": "record", "name": "Event", "fields": [{"name": "note", "type": "string"}]})})
    req = urllib.request.Request(
        f"{registry_url}/subjects/{subject}/versions", data=body.encode(), method="POST",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return int(json.loads(r.read())["id"])


def _once(broker: ZurauBroker, registry_url: str, case: tuple[int, str, int], validated: bool, seconds: float) -> Measurement:
    size, acks, partitions = case
    topic = _topic(broker, partitions, validated)
    schema_id = _register(registry_url, f"{topic}-value")
    prefix = b"\x00" + schema_id.to_bytes(4, "big")
    values = [prefix + v[5:] for v in make_values(size)]
    return produce_throughput(
        broker, topic=topic, partitions=partitions, size=size, acks=acks, compression="none",
        max_records=3_000_000 * 1024 // size, max_seconds=seconds, values=values,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these cases")
    args = parser.parse_args()
    port = free_ports(1)[0]
    registry_url = f"http://127.0.0.1:{port}"
    print(f"{'case':20} {'off MB/s':>9} {'on MB/s':>9} {'ratio':>6} {'off CPU s/MB':>13} {'on CPU s/MB':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="zurau-validation-bench-") as tmp:
        broker = ZurauBroker(Path(tmp), **{"confluent.schema.registry.url": registry_url})
        broker.start()
        try:
            with EmbeddedRegistry(broker.bootstrap_servers, listeners=registry_url):
                for name in args.case or list(CASES):
                    runs: dict[bool, list[Measurement]] = {False: [], True: []}
                    for _ in range(args.runs):
                        for validated in (False, True):
                            runs[validated].append(_once(broker, registry_url, CASES[name], validated, args.seconds))
                    best = {k: max(m.mb_per_s for m in v) for k, v in runs.items()}
                    cpu = {k: statistics.median(m.cpu_s_per_mb for m in v) for k, v in runs.items()}
                    print(
                        f"{name:20} {best[False]:9.1f} {best[True]:9.1f} {best[True] / best[False]:6.3f} "
                        f"{cpu[False]:13.5f} {cpu[True]:12.5f} {cpu[True] / cpu[False]:6.3f}",
                        flush=True,
                    )
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
