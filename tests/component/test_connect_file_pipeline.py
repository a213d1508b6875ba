"""File source → topic → file sink through a standalone worker, and a worker restart that resumes
both connectors from their committed offsets: every line arrives once, none twice."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect


def post_connectors(url: str, src: Path, dst: Path) -> None:
    with httpx.Client(base_url=url, timeout=20) as http:
        r = http.post("/connectors", json={"name": "file-in", "config": {
            "connector.class": "FileStreamSource", "file": str(src), "topic": "lines", "batch.size": "3"}})
        assert r.status_code == 201, r.text
        r = http.post("/connectors", json={"name": "file-out", "config": {
            "connector.class": "FileStreamSink", "file": str(dst), "topics": "lines",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}})
        assert r.status_code == 201, r.text


def test_file_to_topic_to_file_resumes_without_duplicates(tmp_path: Path) -> None:
    src, dst, offsets = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "connect.offsets"
    first = [f"line {i}" for i in range(20)]
    src.write_text("".join(f"{line}\n" for line in first) + "partial")
    props = {"offset.storage.file.filename": str(offsets), "offset_flush_interval_ms": 200,
             "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as broker:
        with EmbeddedConnect(broker.bootstrap_servers, **props) as connect:
            post_connectors(connect.url, src, dst)
            wait_for(lambda: dst.exists() and dst.read_text().splitlines() == first)
        # A line without its newline is not read; the offsets file holds the position after "line 19".
        saved = json.loads(offsets.read_text())
        assert saved == {json.dumps(["file-in", {"filename": str(src)}], separators=(",", ":")): {
            "position": sum(len(line) + 1 for line in first)}}
        with src.open("a") as f:
            f.write(" line\n" + "".join(f"more {i}\n" for i in range(5)))
        second = [*first, "partial line", *(f"more {i}" for i in range(5))]
        with EmbeddedConnect(broker.bootstrap_servers, **props) as connect:
            post_connectors(connect.url, src, dst)
            wait_for(lambda: dst.read_text().splitlines() == second)
            time.sleep(0.5)  # nothing more arrives
            assert dst.read_text().splitlines() == second
