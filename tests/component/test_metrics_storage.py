"""/metrics of the storage layer: log flushes and log cleaner passes show up as they happen."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from tests.compat.test_metrics_confluent_kafka import scrape
from zurau.embedded import EmbeddedBroker

COMPACTED = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01", "flush.ms": "50"}


def test_flushes_and_cleaner_passes_are_counted() -> None:
    with EmbeddedBroker(
        metrics_http_listener="http://127.0.0.1:0", log_cleaner_backoff_ms=50, log_flush_scheduler_interval_ms=50
    ) as broker:
        url = broker.metrics_url
        assert url is not None
        before = scrape(url)
        assert before[("zurau_log_cleaner_passes_total", ())] == 0
        assert before[("kafka_log_logcleanermanager_time_since_last_run_ms", ())] == -1
        topic = broker.create_topic("compacted", 1, COMPACTED)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for round_ in range(4):  # segment.ms=100: each round in a segment of its own
            for i in range(50):
                producer.produce(topic, key=b"k-%d" % (i % 5), value=b"v-%d-%d" % (round_, i))
            assert producer.flush(10) == 0
            time.sleep(0.15)
        deadline = time.monotonic() + 30
        while True:
            samples = scrape(url)
            if samples[("zurau_log_cleaner_passes_total", ())] >= 1:
                break
            assert time.monotonic() < deadline, "no cleaning pass within 30 s"
            time.sleep(0.2)
        assert samples[("zurau_log_cleaner_removed_records_total", ())] > 0
        assert 0 < samples[("zurau_log_cleaner_written_bytes_total", ())] < samples[("zurau_log_cleaner_read_bytes_total", ())]
        assert samples[("kafka_log_logcleanermanager_time_since_last_run_ms", ())] >= 0
        assert samples[("kafka_log_logcleanermanager_uncleanable_partitions_count", ())] == 0
        # flush.ms=50: the flush scheduler fsynced the log (and the metadata log) meanwhile.
        assert samples[("kafka_log_logflushstats_logflushrateandtime_seconds_count", ())] > 0
        partition = (("partition", "0"), ("topic", topic))
        assert samples[("kafka_log_log_logendoffset", partition)] == 200
        assert samples[("kafka_log_log_numlogsegments", partition)] >= 2
