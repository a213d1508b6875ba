"""The REST proxy beside Zurau's own tools, through the pytest plugin's ``zurau_rest_proxy``
fixture: a topic created over v3 (with a non-default config) is what ``zurau topics describe``
shows, and the offsets a v2 consumer instance commits are what ``zurau groups describe`` shows."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import httpx
from typer.testing import CliRunner

from tests.support.cli_results import ok
from zurau.cli.main import app
from zurau.embedded import EmbeddedBroker

V2 = {"Content-Type": "application/vnd.kafka.v2+json"}
runner = CliRunner()


def cli_json(broker: EmbeddedBroker, *args: str) -> Any:
    return json.loads(ok(runner.invoke(app, [*args, "--json", "--bootstrap-server", broker.bootstrap_servers])))


def test_topics_and_group_offsets_made_over_http_are_what_the_tools_see(
    zurau_broker: EmbeddedBroker, zurau_rest_proxy: Any
) -> None:
    topic, group = f"http-made-{uuid.uuid4().hex[:8]}", f"http-group-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=zurau_rest_proxy.url, timeout=30) as http:
        cid = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
        r = http.post(f"/v3/clusters/{cid}/topics", json={
            "topic_name": topic, "partitions_count": 3, "replication_factor": 1,
            "configs": [{"name": "retention.ms", "value": "12345678"}, {"name": "cleanup.policy", "value": "compact"}],
        })
        assert r.status_code == 201, r.text

        [doc] = cli_json(zurau_broker, "topics", "describe", topic)
        assert doc["partition_count"] == 3 and [p["partition"] for p in doc["partitions"]] == [0, 1, 2]
        assert doc["configs"]["retention.ms"] == "12345678" and doc["configs"]["cleanup.policy"] == "compact"

        for i in range(6):
            r = http.post(f"/v3/clusters/{cid}/topics/{topic}/records", json={
                "partition_id": i % 3, "key": {"type": "STRING", "data": f"k{i}"},
                "value": {"type": "BINARY", "data": base64.b64encode(b"v%d" % i).decode()},
            })
            assert r.status_code == 200 and r.json()["error_code"] == 200, r.text

        r = http.post(f"/consumers/{group}", json={"name": "c", "format": "binary", "auto.offset.reset": "earliest",
                                                   "auto.commit.enable": "false"}, headers=V2)
        assert r.status_code == 200, r.text
        base = f"/consumers/{group}/instances/c"
        assert http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2).status_code == 204
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            r = http.get(f"{base}/records", params={"timeout": 500},
                         headers={"Accept": "application/vnd.kafka.binary.v2+json"})
            assert r.status_code == 200, r.text
            got += [base64.b64decode(rec["value"]) for rec in r.json()]
        assert sorted(got) == [b"v%d" % i for i in range(6)]
        assert http.post(f"{base}/offsets", headers=V2).status_code == 200  # commit everything read

        [described] = cli_json(zurau_broker, "groups", "describe", group)
        offsets = {(o["topic"], o["partition"]): (o["current_offset"], o["lag"]) for o in described["offsets"]}
        assert offsets == {(topic, p): (2, 0) for p in range(3)}
        assert http.delete(base, headers=V2).status_code == 204
