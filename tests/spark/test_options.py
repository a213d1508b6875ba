"""Option parsing, offset JSON, range splitting and rate limiting (no Spark, no broker)."""

from __future__ import annotations

import json

import pytest

from zurau.spark.errors import KafkaOptionError
from zurau.spark.offsets import (
    OffsetRange,
    TopicPartition,
    offsets_from_json,
    offsets_to_json,
    partitions_from_json,
    rate_limit,
    split_ranges,
)
from zurau.spark.options import (
    RANGE_FETCH_BYTES,
    EarliestLimit,
    GlobalTimestampLimit,
    LatestLimit,
    SpecificOffsetsLimit,
    SpecificTimestampsLimit,
    librdkafka_config,
    parse_sink_options,
    parse_source_options,
    time_string_as_ms,
)

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
BASE = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}


def test_offset_json_round_trips_in_sparks_format() -> None:
    offsets = {TopicPartition("b", 10): 7, TopicPartition("b", 2): 5, TopicPartition("a", 0): -2}
    as_json = offsets_to_json(offsets)
    assert json.dumps(as_json) == '{"a": {"0": -2}, "b": {"2": 5, "10": 7}}'
    assert offsets_from_json(as_json) == offsets
    assert offsets_from_json(json.dumps(as_json)) == offsets
    assert str(TopicPartition("orders", 3)) == "orders-3"


@pytest.mark.parametrize("bad", ['{"t": [0]}', "[1]", "nope", '{"t": {"0": "x"}}', '{"t": {"0": true}}'])
def test_bad_offset_json_is_refused_with_sparks_example(bad: str) -> None:
    with pytest.raises(ValueError, match=r'Expected e.g. \{"topicA":\{"0":23,"1":-1\},"topicB":\{"0":-2\}\}'):
        offsets_from_json(bad)


def test_assign_json() -> None:
    assert partitions_from_json('{"t": [1, 0], "u": [3]}') == [TP0, TP1, TopicPartition("u", 3)]
    with pytest.raises(ValueError, match=r"Expected e.g."):
        partitions_from_json('{"t": {"0": 1}}')


def test_strategy_is_required_and_unique() -> None:
    with pytest.raises(KafkaOptionError, match="One of the following options must be specified"):
        parse_source_options({"kafka.bootstrap.servers": "h:1"}, streaming=True)
    with pytest.raises(KafkaOptionError, match="Only one of the following options can be specified"):
        parse_source_options({**BASE, "subscribePattern": "t.*"}, streaming=True)
    with pytest.raises(KafkaOptionError, match="No topics to subscribe to"):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": " , "}, streaming=True)
    with pytest.raises(KafkaOptionError, match="No topicpartitions to assign"):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "assign": "t:0"}, streaming=True)
    with pytest.raises(KafkaOptionError, match="must be specified for configuring Kafka consumer"):
        parse_source_options({"subscribe": "t"}, streaming=False)


def test_option_names_are_case_insensitive_and_parsed() -> None:
    o = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubscribePattern": "t-.*",
            "STARTINGOFFSETS": '{"t": {"0": 5, "1": -2}}',
            "maxOffsetsPerTrigger": "100",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "30s",
            "failOnDataLoss": "False",
            "includeHeaders": "TRUE",
            "minPartitions": "4",
            "kafka.isolation.level": "READ_COMMITTED",
        },
        streaming=True,
    )
    assert o.strategy.kind == "subscribePattern" and o.strategy.pattern == "t-.*"
    assert o.starting == SpecificOffsetsLimit({TP0: 5, TP1: -2})
    assert o.ending == LatestLimit()
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (100, 10, 30_000)
    assert o.fail_on_data_loss is False and o.include_headers is True and o.min_partitions == 4
    assert o.isolation_level == "read_committed"
    cfg = o.consumer_config()
    assert cfg["isolation.level"] == "read_committed" and cfg["auto.offset.reset"] == "error"
    assert cfg["enable.auto.commit"] is False and str(cfg["group.id"]).startswith("spark-kafka-source-")
    assert "isolation.level" not in o.admin_config()


def test_range_read_fetch_tuning_defaults_and_overrides() -> None:
    """Executor consumers fetch big and never idle on librdkafka's 1 s queue backoff; kafka.* wins."""
    cfg = parse_source_options(BASE, streaming=False).consumer_config()
    assert cfg["max.partition.fetch.bytes"] == RANGE_FETCH_BYTES
    assert cfg["fetch.queue.backoff.ms"] == 10 and cfg["fetch.wait.max.ms"] == 10
    own = parse_source_options(
        {
            **BASE,
            "kafka.max.partition.fetch.bytes": "1048576",
            "kafka.fetch.max.bytes": "4194304",
            "kafka.fetch.queue.backoff.ms": "100",
        },
        streaming=False,
    ).consumer_config()
    assert own["max.partition.fetch.bytes"] == "1048576" and own["fetch.max.bytes"] == "4194304"
    assert own["fetch.queue.backoff.ms"] == "100"


def test_defaults_follow_spark() -> None:
    stream = parse_source_options(BASE, streaming=True)
    batch = parse_source_options(BASE, streaming=False)
    assert (
        stream.starting == LatestLimit()
        and batch.starting == EarliestLimit()
        and batch.ending == LatestLimit()
    )
    assert stream.fail_on_data_loss and not stream.include_headers
    # Spark's (Java's) default isolation level, not librdkafka's read_committed.
    assert stream.isolation_level == "read_uncommitted"
    assert stream.consumer_config()["isolation.level"] == "read_uncommitted"


def test_timestamp_options_take_precedence() -> None:
    o = parse_source_options(
        {
            **BASE,
            "startingOffsets": "earliest",
            "startingTimestamp": "1000",
            "endingOffsetsByTimestamp": '{"t": {"0": 5}}',
        },
        streaming=False,
    )
    assert o.starting == GlobalTimestampLimit(1000, "error")
    assert o.ending == SpecificTimestampsLimit({TP0: 5}, "error")
    o = parse_source_options(
        {
            **BASE,
            "startingOffsetsByTimestamp": '{"t": {"0": 7}}',
            "startingOffsetsByTimestampStrategy": "latest",
        },
        streaming=True,
    )
    assert o.starting == SpecificTimestampsLimit({TP0: 7}, "latest")
    with pytest.raises(KafkaOptionError, match="Expected a single long value, got soon"):
        parse_source_options({**BASE, "startingTimestamp": "soon"}, streaming=True)


@pytest.mark.parametrize(
    ("extra", "streaming", "message"),
    [
        ({"endingOffsets": "latest"}, True, "ending offset not valid in streaming queries"),
        ({"endingTimestamp": "1"}, True, "ending timestamp not valid in streaming queries"),
        ({"startingOffsets": "latest"}, False, "starting offset can't be latest for batch queries on Kafka"),
        ({"startingOffsets": '{"t": {"0": -1}}'}, False, "startingOffsets for t-0 can't be latest"),
        ({"endingOffsets": "earliest"}, False, "ending offset can't be earliest for batch queries"),
        ({"endingOffsets": '{"t": {"0": -2}}'}, False, "ending offset for t-0 can't be earliest"),
        (
            {"startingOffsets": '{"t": {"0": 9}}', "endingOffsets": '{"t": {"0": 3}}'},
            False,
            r"starting offset \(9\) is greater than the ending offset \(3\) for t-0",
        ),
        (
            {"startingOffsets": '{"t": {"0": 1}}', "endingOffsets": '{"t": {"1": 3}}'},
            False,
            "do not match",
        ),
        ({"kafka.auto.offset.reset": "earliest"}, True, "Kafka option 'auto.offset.reset' is not supported"),
        ({"kafka.key.deserializer": "x"}, True, "'key.deserializer' is not supported"),
        ({"kafka.value.deserializer": "x"}, True, "'value.deserializer' is not supported"),
        ({"kafka.enable.auto.commit": "true"}, True, "Kafka option 'enable.auto.commit' is not supported"),
        ({"kafka.interceptor.classes": "x"}, True, "Kafka option 'interceptor.classes' is not supported"),
        (
            {"kafka.isolation.level": "sometimes"},
            True,
            "Invalid value sometimes for configuration isolation.level",
        ),
        ({"minPartitions": "0"}, True, "minPartitions must be positive"),
        ({"maxRecordsPerPartition": "-1"}, False, "maxrecordsperpartition must be positive"),
        (
            {"maxOffsetsPerTrigger": "10", "minOffsetsPerTrigger": "20"},
            True,
            "higher than the maxOffsetsPerTrigger",
        ),
        ({"failOnDataLoss": "maybe"}, True, 'For input string: "maybe"'),
        ({"maxTriggerDelay": "5 parsecs"}, True, "Time must be specified as"),
    ],
)
def test_invalid_options_are_refused_like_spark(extra: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(KafkaOptionError, match=message):
        parse_source_options({**BASE, **extra}, streaming=streaming)


def test_kafka_settings_are_translated_for_librdkafka() -> None:
    cfg = librdkafka_config(
        {
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\"w";',
            "receive.buffer.bytes": "65536",
            "max.poll.records": "5",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert cfg == {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": 'p\\"w',
        "socket.receive.buffer.bytes": "65536",
        "ssl.endpoint.identification.algorithm": "none",
    }


def test_group_id_option_is_used_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    o = parse_source_options({**BASE, "kafka.group.id": "mine"}, streaming=True)
    assert o.consumer_config()["group.id"] == "mine"
    assert "not recommended" in caplog.text
    assert parse_source_options({**BASE, "groupIdPrefix": "pre"}, streaming=False).group_id.startswith("pre-")


def test_sink_options() -> None:
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "Topic": " out "})
    assert o.topic == "out"
    cfg = o.producer_config()
    assert (
        cfg["enable.idempotence"] is True and cfg["acks"] == "all" and cfg["partitioner"] == "murmur2_random"
    )
    assert (
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.acks": "1"}).producer_config()["acks"]
        == "1"
    )
    with pytest.raises(KafkaOptionError, match="'key.serializer' is not supported"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.key.serializer": "x"})
    with pytest.raises(KafkaOptionError, match="'value.serializer' is not supported"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.value.serializer": "x"})
    with pytest.raises(KafkaOptionError, match="kafka.bootstrap.servers"):
        parse_sink_options({"topic": "x"})


def test_time_strings() -> None:
    assert [time_string_as_ms(s) for s in ("250", "250ms", "10s", "15m", "2min", "1h", "1d", "500us")] == [
        250,
        250,
        10_000,
        900_000,
        120_000,
        3_600_000,
        86_400_000,
        0,
    ]


def test_split_ranges_like_sparks_range_calculator() -> None:
    big, small, empty = (
        OffsetRange(TP0, 0, 100),
        OffsetRange(TP1, 10, 20),
        OffsetRange(TopicPartition("u", 0), 5, 5),
    )
    assert split_ranges([big, small, empty]) == [big, small]
    # maxRecordsPerPartition cuts large ranges into nearly equal contiguous pieces.
    assert split_ranges([big], max_records_per_partition=30) == [
        OffsetRange(TP0, 0, 25),
        OffsetRange(TP0, 25, 50),
        OffsetRange(TP0, 50, 75),
        OffsetRange(TP0, 75, 100),
    ]
    # minPartitions spreads parts proportionally to size; every piece keeps at least one part.
    pieces = split_ranges([big, small], min_partitions=5)
    assert [p for p in pieces if p.tp == TP1] == [small]
    # 100 of 110 records -> round(4.55) = 5 parts of 20.
    assert [(p.from_offset, p.until_offset) for p in pieces if p.tp == TP0] == [
        (i, i + 20) for i in range(0, 100, 20)
    ]
    for parts in (split_ranges([big], min_partitions=7), split_ranges([big], max_records_per_partition=7)):
        assert parts[0].from_offset == 0 and parts[-1].until_offset == 100
        assert all(a.until_offset == b.from_offset for a, b in zip(parts, parts[1:], strict=False))


def test_rate_limit_spreads_by_backlog_and_never_passes_latest() -> None:
    start = {TP0: 0, TP1: 100}
    latest = {TP0: 900, TP1: 200, TopicPartition("u", 0): 50}
    got = rate_limit(100, start, latest, {TopicPartition("u", 0): 0})
    # Backlogs 900, 100, 50 of 1050: 85, 9, 4 records.
    assert got == {TP0: 85, TP1: 109, TopicPartition("u", 0): 4}
    assert rate_limit(10_000, start, latest, {TopicPartition("u", 0): 0}) == latest
    # A tiny share is rounded up, so small partitions are not starved.
    assert rate_limit(1, {TP0: 0, TP1: 0}, {TP0: 1000, TP1: 1}, {})[TP1] == 1
    assert rate_limit(5, {TP0: 7}, {TP0: 7}, {}) == {TP0: 7}
