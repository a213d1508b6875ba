"""Embedded broker: time from ``EmbeddedBroker()`` to the first acknowledged produce.

Goal (issue 3): median of 20 under 100 ms. Each run builds a fresh broker with a fresh temporary
data dir, starts it, and produces one record to a topic that does not exist yet (so the time
includes auto-creating it), waits for the acknowledgement, then stops the broker (stop time is
reported separately, not counted). Variants:

* ``sync + confluent-kafka``: ``with EmbeddedBroker()`` (background thread), librdkafka producer
  with ``linger.ms=0`` (its default 5 ms would be measured otherwise).
* ``sync + zurau.client``: the same broker, Zurau's asyncio producer on the caller's thread.
* ``async + zurau.client``: ``async with EmbeddedBroker()`` on the caller's loop.
* ``cold process``: a fresh interpreter per run (imports included), sync + zurau.client, 5 runs.

Usage: ``.venv/bin/python bench/embedded_startup.py [--runs 20]``. Prints a table of medians
(ms) per phase and the ratio of each median to the 100 ms goal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

GOAL_MS = 100.0


def _ms(t0: float, t1: float) -> float:
    return (t1 - t0) * 1000


def run_sync_confluent() -> dict[str, float]:
    from confluent_kafka import Producer

    from zurau.embedded import EmbeddedBroker

    t0 = time.perf_counter()
    b = EmbeddedBroker()
    b.start()
    t1 = time.perf_counter()
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
    errors: list[object] = []
    p.produce("bench", b"first", on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    t2 = time.perf_counter()
    assert errors == [None], errors
    del p
    b.stop()
    t3 = time.perf_counter()
    return {"start": _ms(t0, t1), "first_produce": _ms(t1, t2), "total": _ms(t0, t2), "stop": _ms(t2, t3)}


async def _produce_one(bootstrap: str) -> None:
    from zurau.client import ClientConfig, Producer

    async with Producer(ClientConfig.load(bootstrap_servers=bootstrap), linger_ms=0) as p:
        fut = await p.send("bench", b"first")
        await p.flush()
        md = await fut
        assert md.offset == 0, md


def run_sync_zurau() -> dict[str, float]:
    from zurau.embedded import EmbeddedBroker

    t0 = time.perf_counter()
    b = EmbeddedBroker()
    b.start()
    t1 = time.perf_counter()
    asyncio.run(_produce_one(b.bootstrap_servers))
    t2 = time.perf_counter()
    b.stop()
    t3 = time.perf_counter()
    return {"start": _ms(t0, t1), "first_produce": _ms(t1, t2), "total": _ms(t0, t2), "stop": _ms(t2, t3)}


def run_async_zurau() -> dict[str, float]:
    from zurau.embedded import EmbeddedBroker

    out: dict[str, float] = {}

    async def main() -> None:
        t0 = time.perf_counter()
        b = EmbeddedBroker()
        await b.__aenter__()
        t1 = time.perf_counter()
        try:
            await _produce_one(b.bootstrap_servers)
            t2 = time.perf_counter()
        finally:
            await b.__aexit__(None, None, None)
        t3 = time.perf_counter()
        out.update(start=_ms(t0, t1), first_produce=_ms(t1, t2), total=_ms(t0, t2), stop=_ms(t2, t3))

    from zurau.app import new_event_loop

    loop = new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return out


_COLD = """
import time, json
t0 = time.perf_counter()
import asyncio
from zurau.embedded import EmbeddedBroker
from zurau.client import ClientConfig, Producer
t_import = time.perf_counter()
b = EmbeddedBroker(); b.start()
t1 = time.perf_counter()
async def go():
    async with Producer(ClientConfig.load(bootstrap_servers=b.bootstrap_servers), linger_ms=0) as p:
        await (await p.send("bench", b"first"))
asyncio.run(go())
t2 = time.perf_counter()
b.stop()
t3 = time.perf_counter()
ms = lambda a, c: (c - a) * 1000
print(json.dumps({"imports": ms(t0, t_import), "start": ms(t_import, t1), "first_produce": ms(t1, t2),
                  "total": ms(t0, t2), "stop": ms(t2, t3)}))
"""


def run_cold() -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _COLD], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(fn: Callable[[], dict[str, float]], runs: int, warmup: int = 1) -> list[dict[str, float]]:
    for _ in range(warmup):
        fn()
    return [fn() for _ in range(runs)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--cold-runs", type=int, default=5)
    args = ap.parse_args()

    variants: list[tuple[str, list[dict[str, float]]]] = []
    try:
        import confluent_kafka  # noqa: F401

        variants.append(("sync + confluent-kafka", measure(run_sync_confluent, args.runs)))
    except ImportError:
        print("confluent-kafka is not installed: skipping that variant", file=sys.stderr)
    variants.append(("sync + zurau.client", measure(run_sync_zurau, args.runs)))
    variants.append(("async + zurau.client", measure(run_async_zurau, args.runs)))
    if args.cold_runs:
        variants.append(("cold process (imports incl.)", measure(run_cold, args.cold_runs, warmup=0)))

    phases = ("imports", "start", "first_produce", "total", "stop")
    head = f"{'variant':30} {'runs':>4} " + " ".join(f"{p:>13}" for p in phases) + f" {'total/goal':>10}"
    print(f"Embedded broker start-to-first-produce, median ms (goal: total < {GOAL_MS:.0f} ms)")
    print(head)
    print("-" * len(head))
    for name, results in variants:
        cells = []
        for p in phases:
            vals = [r[p] for r in results if p in r]
            cells.append(f"{statistics.median(vals):13.1f}" if vals else f"{'-':>13}")
        total = statistics.median(r["total"] for r in results)
        print(f"{name:30} {len(results):>4} " + " ".join(cells) + f" {total / GOAL_MS:10.2f}")
    print()
    base = statistics.median(r["total"] for r in variants[0][1])
    print(f"ratios of median total to '{variants[0][0]}':")
    for name, results in variants:
        total = statistics.median(r["total"] for r in results)
        spread = max(r["total"] for r in results) - min(r["total"] for r in results)
        print(f"  {name:30} {total / base:6.2f}x  (min-max spread {spread:.1f} ms)")


if __name__ == "__main__":
    main()
