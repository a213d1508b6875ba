"""The console's tiers of a topic from a scraped broker's exposition text: partitions led by the
scraped broker get its remote bytes, segments and copy lag; the others are "not scraped"; the
broker-wide remote counters are summed; text that is not Prometheus' format is a 502."""

from __future__ import annotations

import pytest

from zurau.client.admin import PartitionDescription
from zurau.console.metrics_view import parse_exposition
from zurau.console.service_clients import ServiceError
from zurau.console.tier_metrics_view import topic_tiers

SCRAPE = """\
# HELP kafka_server_brokertopicmetrics_remotelogsizebytes Bytes of copied remote segments.
# TYPE kafka_server_brokertopicmetrics_remotelogsizebytes gauge
kafka_server_brokertopicmetrics_remotelogsizebytes{partition="0",topic="t"} 3145728.0
kafka_server_brokertopicmetrics_remotelogsizebytes{partition="0",topic="other"} 7.0
# TYPE kafka_server_brokertopicmetrics_remotelogmetadatacount gauge
kafka_server_brokertopicmetrics_remotelogmetadatacount{partition="0",topic="t"} 3.0
# TYPE kafka_server_brokertopicmetrics_remotecopylagbytes gauge
kafka_server_brokertopicmetrics_remotecopylagbytes{partition="0",topic="t"} 1048576.0
# TYPE kafka_server_brokertopicmetrics_remotecopylagsegments gauge
kafka_server_brokertopicmetrics_remotecopylagsegments{partition="0",topic="t"} 1.0
# TYPE kafka_log_log_size gauge
kafka_log_log_size{partition="0",topic="t"} 2000.0
kafka_log_log_size{partition="1",topic="t"} 999.0
# TYPE kafka_log_log_numlogsegments gauge
kafka_log_log_numlogsegments{partition="0",topic="t"} 2.0
# TYPE kafka_server_brokertopicmetrics_remotecopybytes_total counter
kafka_server_brokertopicmetrics_remotecopybytes_total 4194304.0
# TYPE kafka_server_brokertopicmetrics_remotefetchbytes_total counter
kafka_server_brokertopicmetrics_remotefetchbytes_total 1500.5
# TYPE kafka_server_brokertopicmetrics_remotefetcherrors_total counter
kafka_server_brokertopicmetrics_remotefetcherrors_total 0.0
"""


def _partition(index: int, leader: int) -> PartitionDescription:
    return PartitionDescription(index, leader, 0, (1, 2), (1, 2), 0, 40)


def test_led_partitions_have_their_tiers_and_others_are_not_scraped() -> None:
    doc = topic_tiers(parse_exposition(SCRAPE), "t", [_partition(1, 2), _partition(0, 1)])
    assert doc["topic"] == "t" and doc["remote_tier_exported"] is True
    assert doc["scraped_broker"] == 1
    led, other = doc["partitions"]
    assert led == {
        "partition": 0,
        "leader": 1,
        "scraped": True,
        "remote_size": 3145728,
        "remote_segments": 3,
        "copy_lag_bytes": 1048576,
        "copy_lag_segments": 1,
        "local_size": 2000,
        "local_segments": 2,
    }
    # Partition 1's local size here is a follower's: not shown as the partition's.
    assert other["partition"] == 1 and other["leader"] == 2 and other["scraped"] is False
    assert all(other[f] is None for f in ("remote_size", "copy_lag_bytes", "local_size", "local_segments"))
    assert doc["broker"] == {
        "remote_copy_bytes": 4194304,
        "remote_fetch_bytes": 1500.5,
        "remote_copy_errors": None,
        "remote_fetch_errors": 0,
    }


def test_a_broker_without_the_remote_tier_exports_nothing_for_it() -> None:
    text = '# TYPE kafka_log_log_size gauge\nkafka_log_log_size{partition="0",topic="t"} 5.0\n'
    doc = topic_tiers(parse_exposition(text), "t", [_partition(0, 1)])
    assert doc["remote_tier_exported"] is False and doc["scraped_broker"] is None
    assert doc["partitions"][0]["scraped"] is False and doc["partitions"][0]["local_size"] is None
    assert set(doc["broker"].values()) == {None}


def test_text_that_is_not_the_exposition_format_is_a_bad_gateway() -> None:
    with pytest.raises(ServiceError) as e:
        parse_exposition("kafka_log_log_size{partition= 1 2 3\n")
    assert e.value.status == 502
