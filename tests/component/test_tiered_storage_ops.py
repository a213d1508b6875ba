"""The operator's view of tiered storage (issue 33) on one in-process broker with the ``file``
plugin: once segments of a tiered topic are copied and deleted locally, ``zurau topics describe``
(text and JSON) shows each partition's log start, local log start, highest offset in remote
storage and local size; ``/metrics`` has the remote tier's Kafka series (copy lag, remote size
and segment count per partition, bytes copied and read, ...); the console's topic JSON has the
same tiers as the command line, and with the broker's metrics URL its tiers JSON
(``/api/topics/{t}/tiers``) has the remote bytes, segments and copy lag from those series."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from typer.testing import CliRunner

from tests.support.cli_results import ok
from tests.support.waiting import wait_for
from zurau.cli.main import app
from zurau.console.embedded_console import EmbeddedConsole
from zurau.embedded import EmbeddedBroker

N = 40
VALUE = 100_000
SEGMENT = 1024 * 1024  # Kafka's smallest segment.bytes: ten records a segment, three closed segments


def _scrape(url: str) -> dict[str, float]:
    """``name{labels}`` -> value of every sample (labels as Prometheus prints them)."""
    out = {}
    for line in httpx.get(url, timeout=10).text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_describe_metrics_and_console_show_both_tiers(tmp_path: Path) -> None:
    with EmbeddedBroker(
        tmp_path / "data",
        metrics_http_listener="http://127.0.0.1:0",
        **{
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": "file",
            "rsm.config.dir": str(tmp_path / "remote"),
            "remote.log.manager.task.interval.ms": "100",
            "log.retention.check.interval.ms": "100",
            "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        },
    ) as broker:
        bs = broker.bootstrap_servers
        topic = "tiered-ops"
        configs = {
            "remote.storage.enable": "true",
            "segment.bytes": str(SEGMENT),
            "local.retention.bytes": str(SEGMENT),
            "retention.ms": "-1",
        }
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
        for i in range(N):
            p.produce(topic, bytes([i]) * VALUE, f"k{i}".encode())
            p.poll(0)
        assert p.flush(10) == 0

        c = Consumer({"bootstrap.servers": bs, "group.id": "probe"})
        local_start = wait_for(
            lambda: max(c.offsets_for_times([TopicPartition(topic, 0, -4)], 5)[0].offset, 0),
            timeout=30,
            what="local segments deleted after their copy",
        )
        c.close()

        # zurau topics describe: text and JSON.
        runner = CliRunner()
        doc = json.loads(
            ok(runner.invoke(app, ["topics", "describe", topic, "--json", "--bootstrap-server", bs]))
        )
        (part,) = doc[0]["partitions"]
        assert part["log_start_offset"] == 0 and part["log_end_offset"] == N
        assert part["local_log_start_offset"] >= local_start > 0
        assert part["local_log_start_offset"] - 1 <= part["highest_offset_in_remote"] < N
        assert 0 < part["local_size"] < N * VALUE
        text = ok(runner.invoke(app, ["topics", "describe", topic, "--bootstrap-server", bs]))
        line = next(x for x in text.splitlines() if "Partition: 0" in x)
        assert re.search(
            r"\tLogStartOffset: 0\tLogEndOffset: 40\tLocalLogStartOffset: \d+\tHighestOffsetInRemote: \d+\tLocalSize: \d+",
            line,
        ), line

        # Read the remote part back, so that the remote fetch counters move.
        c = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": "reader",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        wait_for(
            lambda: got.extend(m for m in c.consume(10, 0.5) if not m.error()) or len(got) >= N, timeout=30
        )
        c.close()
        assert [m.offset() for m in got[:N]] == list(range(N))

        # /metrics: the remote tier of the partition led here, and the totals.
        url = broker.metrics_url
        assert url is not None
        labels = f'{{partition="0",topic="{topic}"}}'

        def remote_size_known() -> dict[str, float]:
            m = _scrape(url)
            return m if m.get(f"kafka_server_brokertopicmetrics_remotelogsizebytes{labels}", 0) > 0 else {}

        m = wait_for(remote_size_known, timeout=30, what="the remote size gauge")
        segments = m[f"kafka_server_brokertopicmetrics_remotelogmetadatacount{labels}"]
        assert segments >= 1
        assert m["zurau_remote_copied_segments_total"] >= segments
        assert (
            m["kafka_server_brokertopicmetrics_remotecopybytes_total"]
            >= m[f"kafka_server_brokertopicmetrics_remotelogsizebytes{labels}"]
        )
        assert m["kafka_server_brokertopicmetrics_remotecopyrequests_total"] >= segments
        assert m["kafka_server_brokertopicmetrics_remotefetchrequests_total"] >= 1
        assert m["kafka_server_brokertopicmetrics_remotefetchbytes_total"] > 0
        assert m[f"kafka_server_brokertopicmetrics_remotecopylagsegments{labels}"] >= 0
        assert f"kafka_server_brokertopicmetrics_remotecopylagbytes{labels}" in m
        assert m[f"kafka_log_log_size{labels}"] > 0  # the local tier
        for name in (
            "remotecopyerrors",
            "remotefetcherrors",
            "remotedeleterequests",
            "remotedeleteerrors",
        ):
            assert m[f"kafka_server_brokertopicmetrics_{name}_total"] == 0, name
        assert "kafka_server_delayedremotefetchmetrics_expires_total" in m
        assert m["zurau_remote_index_cache_misses_total"] >= 1
        assert "zurau_remote_index_cache_hits_total" in m

        # The console's topic JSON: the same tiers; with this broker's metrics URL, its tiers JSON
        # has the remote bytes, segments and copy lag of the partition (led here).
        with EmbeddedConsole(bs, metrics_url=url) as console:
            t = httpx.get(f"{console.url}/api/topics/{topic}", timeout=30).json()
            tiers = httpx.get(f"{console.url}/api/topics/{topic}/tiers", timeout=30).json()
            unknown = httpx.get(f"{console.url}/api/topics/no-such-topic/tiers", timeout=30)
        assert t["remote_storage"] is True
        (cp,) = t["partitions"]
        assert cp["log_start_offset"] == 0
        assert cp["local_log_start_offset"] >= part["local_log_start_offset"]
        assert cp["highest_offset_in_remote"] >= part["highest_offset_in_remote"]
        assert cp["local_size"] > 0

        assert tiers["topic"] == topic and tiers["metrics_url"] == url
        assert tiers["remote_tier_exported"] is True
        assert tiers["scraped_broker"] == cp["leader"]
        (tp,) = tiers["partitions"]
        assert tp["partition"] == 0 and tp["leader"] == cp["leader"] and tp["scraped"] is True
        # Remote data only grows here (retention.ms=-1), so the later scrape has at least as much.
        assert tp["remote_size"] >= m[f"kafka_server_brokertopicmetrics_remotelogsizebytes{labels}"] > 0
        assert tp["remote_segments"] >= segments
        assert tp["copy_lag_bytes"] >= 0 and tp["copy_lag_segments"] >= 0
        assert tp["local_size"] > 0 and tp["local_segments"] >= 1
        assert tiers["broker"]["remote_copy_bytes"] >= tp["remote_size"]
        assert (
            tiers["broker"]["remote_fetch_bytes"]
            >= m["kafka_server_brokertopicmetrics_remotefetchbytes_total"]
        )
        assert tiers["broker"]["remote_copy_errors"] == tiers["broker"]["remote_fetch_errors"] == 0
        assert unknown.status_code == 404, unknown.text
