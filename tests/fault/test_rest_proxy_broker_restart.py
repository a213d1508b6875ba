"""The REST proxy when its only broker goes away and comes back (SIGTERM, then kill -9).

While the broker is down every request is answered, within the client's timeouts, with a 5xx
and Confluent's error body (never a hang, never a 500 without a body); once the broker is back on
the same address the proxy serves again by itself (no restart), and the records acknowledged
before and after are all there. The topic has a non-default ``cleanup.policy=compact`` and
``min.insync.replicas``, which must survive the broker's restarts as the proxy reports them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy
from zurau.testing.broker_process import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "proxy-restarts"


def _produce(http: httpx.Client, cid: str, key: str) -> dict[str, Any]:
    r = http.post(f"/v3/clusters/{cid}/topics/{TOPIC}/records",
                  json={"key": {"type": "STRING", "data": key}, "value": {"type": "STRING", "data": key}})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["error_code"] == 200, body
    return body


def _until_served(http: httpx.Client, cid: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        r = http.get(f"/v3/clusters/{cid}/topics/{TOPIC}")
        if r.status_code == 200:
            return
        assert r.status_code >= 500 and "error_code" in r.json(), r.text
        assert time.monotonic() < deadline, f"not served again: {r.status_code} {r.text}"
        time.sleep(0.3)


def test_the_proxy_answers_while_the_broker_is_down_and_serves_when_it_is_back(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", **{"group.initial.rebalance.delay.ms": "0"})
    broker.start()
    try:
        props = {"client.request.timeout.ms": "5000", "client.socket.connection.setup.timeout.ms": "2000"}
        with EmbeddedRestProxy(broker.bootstrap_servers, **props) as proxy, \
                httpx.Client(base_url=proxy.url, timeout=60) as http:
            cid = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
            r = http.post(f"/v3/clusters/{cid}/topics", json={
                "topic_name": TOPIC, "partitions_count": 2,
                "configs": [{"name": "cleanup.policy", "value": "compact"}, {"name": "min.insync.replicas", "value": "1"}],
            })
            assert r.status_code == 201, r.text
            _until_served(http, cid)
            acked = [_produce(http, cid, f"before-{i}") for i in range(5)]

            for stop in (broker.stop, broker.kill):
                stop()
                for path in (f"/v3/clusters/{cid}/topics/{TOPIC}", "/v3/clusters", "/topics"):
                    t0 = time.monotonic()
                    r = http.get(path)
                    assert r.status_code >= 500, (path, r.status_code, r.text)
                    body = r.json()
                    assert isinstance(body.get("error_code"), int) and body.get("message"), body
                    assert time.monotonic() - t0 < 30
                broker.start()
                _until_served(http, cid)
                acked += [_produce(http, cid, f"after-{stop.__name__}-{i}") for i in range(5)]

            r = http.get(f"/v3/clusters/{cid}/topics/{TOPIC}/configs/cleanup.policy")
            assert r.status_code == 200 and r.json()["value"] == "compact", r.text
            ends = {}
            for p in (0, 1):
                r = http.get(f"/v3/clusters/{cid}/topics/{TOPIC}/partitions/{p}/offset",
                             params={"offset_type": "earliest_and_latest"})
                assert r.status_code == 200, r.text
                ends[p] = r.json()["latest_offset"]
            assert sum(ends.values()) == len(acked), ends
    finally:
        broker.stop()
