"""``zurau connect start`` as a process: worker properties from a file and ``-o`` overrides, a
connector created from a properties file at start, the REST API, a clean stop on SIGTERM, and
one-line errors for bad configs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.broker_process import free_port
from zurau import EmbeddedBroker

ZURAU = [sys.executable, "-m", "zurau.cli.main"]


def test_connect_start_serves_and_creates_connectors(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("hello\nworld\n")
    worker = tmp_path / "worker.properties"
    worker.write_text("key.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      f"offset.storage.file.filename={tmp_path / 'offsets'}\n"
                      "offset.flush.interval.ms=200\n")
    connector = tmp_path / "source.properties"
    connector.write_text(f"name=local-file-source\nconnector.class=FileStreamSource\ntasks.max=1\nfile={src}\n"
                         "topic=connect-test\n")
    port = free_port()
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as broker:
        proc = subprocess.Popen(
            [*ZURAU, "connect", "start", "--config", str(worker), "-o", f"bootstrap.servers={broker.bootstrap_servers}",
             "-o", f"listeners=http://127.0.0.1:{port}", str(connector)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/connectors", timeout=2).json() == ["local-file-source"]:
                        break
                except httpx.HTTPError:
                    pass
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the worker did not come up"
                time.sleep(0.2)
            r = httpx.post(f"{url}/connectors", timeout=10, json={"name": "sink", "config": {
                "connector.class": "FileStreamSink", "topics": "connect-test", "file": str(dst)}})
            assert r.status_code == 201
            deadline = time.monotonic() + 30
            while not (dst.exists() and dst.read_text() == "hello\nworld\n"):
                assert time.monotonic() < deadline, "the sink did not write the lines"
                time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_connect_start_reports_bad_config(tmp_path: Path) -> None:
    bad = subprocess.run([*ZURAU, "connect", "start", "-o", "group.id=g"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr.strip().endswith('Missing required configuration "config.storage.topic" which has no default '
                                       'value (distributed mode).')
    missing = subprocess.run([*ZURAU, "connect", "start", str(tmp_path / "nope.properties")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
