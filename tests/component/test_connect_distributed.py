"""Distributed mode: three workers in one group share connectors and tasks through the Connect
topics; one is stopped abruptly (no commit, no group leave) and its tasks restart on the others
from the offsets committed last, so no line is produced twice and new lines keep flowing."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx
from confluent_kafka import Consumer

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect

WORKER = {"group.id": "connect-cluster", "offset_flush_interval_ms": 200, "session_timeout_ms": 2000,
          "heartbeat_interval_ms": 200, "value.converter": "org.apache.kafka.connect.storage.StringConverter",
          "offset.storage.partitions": 3, "status.storage.partitions": 2}


def read_topic(bootstrap: str, topic: str, expected: int) -> Counter[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 30
    try:
        while sum(seen.values()) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen[msg.value().decode()] += 1
        end = time.monotonic() + 1.0  # and nothing beyond
        while time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen[msg.value().decode()] += 1
    finally:
        consumer.close()
    return seen


def test_tasks_move_when_a_worker_dies(tmp_path: Path) -> None:
    files = [tmp_path / f"in{i}.txt" for i in range(3)]
    for i, f in enumerate(files):
        f.write_text("".join(f"f{i} line {n}\n" for n in range(10)))
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=500) as broker:
        workers = [EmbeddedConnect(broker.bootstrap_servers, **WORKER).start() for _ in range(3)]
        try:
            http = httpx.Client(base_url=workers[0].url, timeout=20)
            for i, f in enumerate(files):
                r = http.post("/connectors", json={"name": f"src{i}", "config": {
                    "connector.class": "FileStreamSource", "file": str(f), "topic": "dist"}})
                assert r.status_code == 201, r.text

            def all_running() -> dict[str, str] | None:
                owners = {}
                for i in range(3):
                    s = httpx.get(f"{workers[1].url}/connectors/src{i}/status", timeout=10).json()
                    if s["connector"]["state"] != "RUNNING" or not s["tasks"] or s["tasks"][0]["state"] != "RUNNING":
                        return None
                    owners[f"src{i}"] = s["tasks"][0]["worker_id"]
                return owners

            owners = wait_for(all_running)
            worker_ids = {w.url.removeprefix("http://") for w in workers}
            assert set(owners.values()) <= worker_ids and len(set(owners.values())) >= 2  # spread over workers
            # every line committed before the crash
            for i, f in enumerate(files):
                wait_for(lambda i=i, f=f: http.get(f"/connectors/src{i}/offsets").json()["offsets"] == [
                    {"partition": {"filename": str(f)}, "offset": {"position": f.stat().st_size}}])

            victim_url = next(w.url for w in workers if w.url.removeprefix("http://") == owners["src0"])
            victim = next(w for w in workers if w.url == victim_url)
            victim.kill()
            survivors = [w for w in workers if w is not victim]
            http.close()
            http = httpx.Client(base_url=survivors[0].url, timeout=20)
            for i, f in enumerate(files):
                with f.open("a") as out:
                    out.write("".join(f"f{i} after {n}\n" for n in range(5)))

            def moved() -> bool:
                s = http.get("/connectors/src0/status").json()
                return bool(s["tasks"]) and s["tasks"][0]["state"] == "RUNNING" and \
                    s["tasks"][0]["worker_id"] != owners["src0"]

            wait_for(moved)
            expected = {f"f{i} line {n}" for i in range(3) for n in range(10)} | {
                f"f{i} after {n}" for i in range(3) for n in range(5)}
            seen = read_topic(broker.bootstrap_servers, "dist", len(expected))
            assert set(seen) == expected
            assert max(seen.values()) == 1  # resumed from the committed offsets: nothing twice
            statuses = {http.get(f"/connectors/src{i}/status").json()["tasks"][0]["worker_id"] for i in range(3)}
            assert statuses <= {w.url.removeprefix("http://") for w in survivors}
            http.close()
        finally:
            for w in workers:
                w.stop()
