"""Console message browser: how fast a filtered scan reads a big topic.

Produces ``--records`` small JSON records (confluent-kafka, lz4, 4 partitions) to an embedded
broker, then asks the console's API for ``key == "needle"`` from the beginning of every partition
with bounds large enough to read the whole topic (the needle is near the end), and prints the
records scanned, the time the console reported and records per second. A second run with a
filter on the decoded JSON value (``value.n == N``) shows the cost of decoding values.

Usage: ``.venv/bin/python -m bench.console_browse [--records 1000000]``. The broker runs in the
same process as the console, so both share one interpreter (the GIL), as in the tests.
"""

from __future__ import annotations

import argparse
import time

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zurau import EmbeddedBroker
from zurau.console.embedded_console import EmbeddedConsole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.records
    needle_at = n - n // 100
    with EmbeddedBroker() as broker, EmbeddedConsole(broker.bootstrap_servers) as console:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("big", 4, 1)])["big"].result(30)
        p = Producer({
            "bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50, "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000, "compression.type": "lz4",
        })
        t0 = time.perf_counter()
        for i in range(n):
            key = b"needle" if i == needle_at else b"k%d" % i
            p.produce("big", key=key, value=b'{"n":%d,"kind":"beat"}' % i, partition=i % 4)
            if i % 100_000 == 0:
                p.poll(0)
        p.flush(120)
        print(f"produced {n:,} records in {time.perf_counter() - t0:.1f} s")
        for label, flt in (("key filter", 'key == "needle"'), ("JSON value filter", f"value.n == {needle_at}")):
            r = httpx.get(
                f"{console.url}/api/topics/big/messages",
                params={"start": "beginning", "filter": flt, "max_scan": 5_000_000, "time_budget_ms": 60_000},
                timeout=120,
            ).json()
            secs = r["elapsed_ms"] / 1000
            print(
                f"{label:18s} scanned {r['scanned']:,} in {secs:.1f} s ({r['scanned'] / secs:,.0f} records/s), "
                f"found {r['matched']}, stopped: {r['stopped']}"
            )


if __name__ == "__main__":
    main()
