"""The REST proxy across a leader's kill -9 on three node processes.

A topic with replication factor 3 and ``min.insync.replicas=2`` (non-default), a proxy whose
producer uses acks=all, and a v2 consumer instance subscribed to the topic:

* records produced over HTTP (v3, one record per request) before and after the partition's
  leader is killed are all acknowledged: requests sent while the leader moves may wait, but
  each is answered 200 with an offset (the proxy's producer retries on the new leader) or, at
  worst, a 5xx with Confluent's error body and no 500 without one; the test resends those;
* the v2 consumer instance keeps consuming through the move and reads every acknowledged record,
  in order, each once;
* the killed node, restarted, serves again and the proxy keeps working without a restart.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "rest-failover"
V2 = "application/vnd.kafka.v2+json"
OVERRIDES = {
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.fetch.wait.max.ms": "200",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "0",
}


def _leader(cluster: ClusterProcesses) -> tuple[int, list[int]]:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(TOPIC, timeout=5)
    part = md.topics[TOPIC].partitions[0]
    return part.leader, list(part.isrs)


def _produce(http: httpx.Client, cluster_id: str, value: str, deadline_s: float = 60) -> int:
    """Produce ``value`` until it is acknowledged; returns its offset."""
    deadline = time.monotonic() + deadline_s
    while True:
        r = http.post(f"/v3/clusters/{cluster_id}/topics/{TOPIC}/records",
                      json={"partition_id": 0, "value": {"type": "STRING", "data": value}})
        body: Any = r.json()
        if r.status_code == 200 and body.get("error_code", 200) == 200:
            return int(body["offset"])
        assert r.status_code != 500 or "error_code" in body, r.text
        assert time.monotonic() < deadline, f"{value} not acknowledged: {r.status_code} {r.text}"
        time.sleep(0.2)


def _poll(http: httpx.Client, base: str) -> list[str]:
    r = http.get(f"{base}/records", params={"timeout": 1000}, headers={"Accept": "application/vnd.kafka.json.v2+json"})
    assert r.status_code == 200, r.text
    return [rec["value"] for rec in r.json()]


def test_produce_and_v2_consume_through_a_leader_kill(tmp_path: Path) -> None:
    with ClusterProcesses(tmp_path, 3, **OVERRIDES) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
        with EmbeddedRestProxy(cluster.bootstrap_servers, **{"producer.acks": "all"}) as proxy, \
                httpx.Client(base_url=proxy.url, timeout=60) as http:
            cluster_id = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
            r = http.post("/consumers/rest-failover-group", headers={"Content-Type": V2},
                          json={"name": "c1", "format": "json", "auto.offset.reset": "earliest"})
            assert r.status_code == 200, r.text
            base = "/consumers/rest-failover-group/instances/c1"
            assert http.post(f"{base}/subscription", headers={"Content-Type": V2},
                             json={"topics": [TOPIC]}).status_code == 204

            sent: list[str] = []
            offsets: list[int] = []
            for i in range(20):
                sent.append(f'"before-{i}"')
                offsets.append(_produce(http, cluster_id, sent[-1]))
            seen: list[str] = []
            deadline = time.monotonic() + 60
            while len(seen) < 10 and time.monotonic() < deadline:
                seen += _poll(http, base)

            leader, _ = _leader(cluster)
            cluster.kill(leader)
            for i in range(20):
                sent.append(f'"after-{i}"')
                offsets.append(_produce(http, cluster_id, sent[-1]))
            new_leader, _ = _leader(cluster)
            assert new_leader not in (leader, -1)

            deadline = time.monotonic() + 60
            while len(seen) < len(sent) and time.monotonic() < deadline:
                seen += _poll(http, base)
            assert seen == [s.strip('"') for s in sent]
            assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)

            cluster.nodes[leader].launch()
            cluster.nodes[leader].wait_ready(60)
            sent.append('"after-restart"')
            _produce(http, cluster_id, sent[-1])
            deadline = time.monotonic() + 30
            while len(seen) < len(sent) and time.monotonic() < deadline:
                seen += _poll(http, base)
            assert seen[-1] == "after-restart"
            assert http.delete(base, headers={"Content-Type": V2}).status_code == 204
