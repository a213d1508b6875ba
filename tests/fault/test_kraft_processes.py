"""KRaft clusters of real processes under kill -9.

* Three combined nodes: SIGKILL the active controller; a new one is elected (the time is printed;
  Kafka's default election timeout is 1 s, and followers only stand after the 2 s fetch timeout),
  topic creation works again through the survivors, and the killed node, restarted, catches up.
* Three dedicated controllers and three brokers: the same with topics created through every broker.
* 200 topics created through random brokers while the active controller is killed and restarted
  in a loop: afterwards every broker's Metadata lists exactly the topics whose creation was
  acknowledged (a creation whose answer was lost is retried until it gets a definite answer:
  created, or already exists because the lost attempt had been committed).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAlreadyExistsError
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _config(bootstrap: str) -> ClientConfig:
    return ClientConfig.from_props({"bootstrap.servers": bootstrap, "request.timeout.ms": "10000"})


async def _quorum_leader(bootstrap: str) -> int:
    cluster = Cluster(_config(bootstrap))
    try:
        await cluster.bootstrap()
        conn = await cluster.any_connection()
        body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        resp = await conn.request(ApiKey.DESCRIBE_QUORUM, body, timeout=5)
        part = resp["topics"][0]["partitions"][0]
        return int(part["leader_id"]) if part["error_code"] == 0 else -1
    except Exception:
        return -1
    finally:
        await cluster.close()


async def _topics(bootstrap: str) -> set[str]:
    cluster = Cluster(_config(bootstrap))
    try:
        await cluster.bootstrap()
        conn = await cluster.any_connection()
        md = await conn.request(ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False})
        return {t["name"] for t in md["topics"] if not t["is_internal"]}
    finally:
        await cluster.close()


async def _create(bootstrap: str, name: str, deadline: float) -> None:
    """Create ``name`` through ``bootstrap``, retrying until a definite answer or ``deadline``."""
    while True:
        try:
            async with AdminClient(_config(bootstrap)) as admin:
                err = (await admin.create_topics([NewTopic(name, 1, 1)]))[name]
            if err is None or isinstance(err, TopicAlreadyExistsError):
                return
            last: Any = err
        except Exception as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"creating {name} through {bootstrap} failed: {last}")
        await asyncio.sleep(0.2)


async def _wait_leader(survivors: list[str], not_this: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for b in survivors:
            leader = await _quorum_leader(b)
            if leader not in (-1, not_this):
                return leader
        await asyncio.sleep(0.02)
    raise AssertionError(f"no new leader within {timeout} s")


async def _converged(cluster: ClusterProcesses, expected: set[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        seen = {i: await _topics(cluster.nodes[i].bootstrap_servers) for i in cluster.broker_ids}
        if all(s == expected for s in seen.values()):
            return
        if time.monotonic() > deadline:
            diffs = {i: (sorted(expected - s)[:5], sorted(s - expected)[:5]) for i, s in seen.items()}
            raise AssertionError(f"brokers disagree with the acknowledged topics (missing, extra): {diffs}")
        await asyncio.sleep(0.2)


@pytest.fixture
def combined(tmp_path: Path) -> Iterator[ClusterProcesses]:
    c = ClusterProcesses(tmp_path, controllers=3).start()
    try:
        yield c
    finally:
        c.stop()


async def test_kill_9_the_active_controller_of_three_combined_nodes(combined: ClusterProcesses) -> None:
    c = combined
    await _create(c.bootstrap_servers, "before", time.monotonic() + 30)
    leader = await _quorum_leader(c.bootstrap_servers)
    assert leader in c.controller_ids
    survivors = [c.nodes[i].bootstrap_servers for i in c.broker_ids if i != leader]
    killed_at = time.monotonic()
    c.kill(leader)
    new = await _wait_leader(survivors, leader, 30)
    elected = time.monotonic() - killed_at
    await _create(survivors[0], "after", time.monotonic() + 30)
    writable = time.monotonic() - killed_at
    print(f"\nnew active controller {new} elected {elected:.2f} s after kill -9; CreateTopics after {writable:.2f} s")
    c.restart(leader)
    await _converged(c, {"before", "after"})


async def test_dedicated_controllers_and_brokers_survive_a_controller_kill(tmp_path: Path) -> None:
    c = ClusterProcesses(tmp_path, controllers=3, brokers=3).start()
    try:
        names = set()
        for i in c.broker_ids:
            name = f"via-{i}"
            await _create(c.nodes[i].bootstrap_servers, name, time.monotonic() + 30)
            names.add(name)
        await _converged(c, names)
        leader = await _quorum_leader(c.bootstrap_servers)
        assert leader in c.controller_ids
        c.kill(leader)
        for i in c.broker_ids:
            name = f"after-{i}"
            await _create(c.nodes[i].bootstrap_servers, name, time.monotonic() + 30)
            names.add(name)
        c.restart(leader)
        await _converged(c, names)
    finally:
        c.stop()


async def test_200_topics_while_the_active_controller_is_killed_in_a_loop(combined: ClusterProcesses) -> None:
    c = combined
    rng = random.Random(1)
    stop = threading.Event()
    kills: list[int] = []

    def chaos() -> None:
        loop = asyncio.new_event_loop()
        try:
            while not stop.is_set() and len(kills) < 4:
                if stop.wait(rng.uniform(0.5, 1.5)):
                    return
                leader = loop.run_until_complete(_quorum_leader(c.bootstrap_servers))
                if leader < 0:
                    continue
                kills.append(leader)
                c.kill(leader)
                if stop.wait(rng.uniform(0.2, 1.5)):
                    return
                c.restart(leader)
        finally:
            loop.close()

    thread = threading.Thread(target=chaos, daemon=True)
    thread.start()
    acknowledged: set[str] = set()
    sem = asyncio.Semaphore(8)

    async def one(i: int) -> None:
        name = f"t{i:03d}"
        await asyncio.sleep(i * 0.05)  # spread the creations over ~10 s, across several kills
        async with sem:
            node = rng.choice(c.broker_ids)
            deadline = time.monotonic() + 120
            while True:
                bootstrap = c.nodes[node].bootstrap_servers if c.nodes[node].running else c.bootstrap_servers
                try:
                    await _create(bootstrap, name, min(deadline, time.monotonic() + 10))
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise
                    node = rng.choice(c.broker_ids)
            acknowledged.add(name)

    try:
        await asyncio.gather(*(one(i) for i in range(200)))
    finally:
        stop.set()
        thread.join(30)
    for i in c.broker_ids:
        if not c.nodes[i].running:
            c.restart(i)
    assert kills, "the chaos loop killed no controller"
    assert len(acknowledged) == 200
    await _converged(c, acknowledged, timeout=60)
