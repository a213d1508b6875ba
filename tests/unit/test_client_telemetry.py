"""Client telemetry (KIP-714) without sockets: subscription configs and matching, the OTLP
decoder on hand-built protobuf bytes, compression, the manager's answers and errors, the series
store's accumulation and expiry, and the Prometheus families."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping

import pytest

from zurau.broker.client_metrics_manager import ClientMetricsManager, RequestOrigin
from zurau.broker.client_telemetry_store import MAX_SERIES_PER_CLIENT, ClientTelemetryStore
from zurau.clock import ManualClock
from zurau.config import BrokerConfig
from zurau.config.client_metrics_configs import (
    ClientAttributes,
    subscription_id,
    subscription_of,
    validate_client_metrics_configs,
)
from zurau.metadata.controller.config_control import ConfigurationControlManager
from zurau.metadata.image import MetadataImage
from zurau.metadata.snapshot import image_records
from zurau.metrics.client_telemetry import client_telemetry_families, prometheus_name
from zurau.metrics.collector import error_name
from zurau.protocol.errors import (
    InvalidConfigError,
    InvalidRecordError,
    InvalidRequestError,
    TelemetryTooLargeError,
    ThrottlingQuotaExceededError,
    UnknownSubscriptionIdError,
    UnsupportedCompressionTypeError,
)
from zurau.protocol.otlp_metrics import CUMULATIVE, DELTA, GAUGE, SUM, OtlpDecodeError, decode_metrics_data
from zurau.protocol.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress


# ------------------------------------------------------------------------------ a protobuf writer
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len(field: int, body: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(body)) + body


def _str(field: int, s: str) -> bytes:
    return _len(field, s.encode())


def _vint(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _f64(field: int, x: float) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<d", x)


def _sf64(field: int, n: int) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<q", n)


def kv(key: str, value: str | int) -> bytes:
    any_value = _str(1, value) if isinstance(value, str) else _vint(3, value)
    return _str(1, key) + _len(2, any_value)


def number_point(value: float | int, attrs: Mapping[str, str | int] = {}, t: int = 1) -> bytes:
    body = b"".join(_len(7, kv(k, v)) for k, v in attrs.items())
    body += _varint(3 << 3 | 1) + struct.pack("<Q", t)
    body += _sf64(6, value) if isinstance(value, int) else _f64(4, value)
    return body


def gauge(name: str, *points: bytes) -> bytes:
    return _str(1, name) + _len(5, b"".join(_len(1, p) for p in points))


def sum_metric(name: str, *points: bytes, temporality: int = DELTA, monotonic: bool = True) -> bytes:
    body = b"".join(_len(1, p) for p in points) + _vint(2, temporality) + _vint(3, int(monotonic))
    return _str(1, name) + _len(7, body)


def metrics_data(*metrics: bytes, resource: Mapping[str, str] = {"client_id": "app"}) -> bytes:
    res = b"".join(_len(1, kv(k, v)) for k, v in resource.items())
    scope = _len(1, _str(1, "librdkafka")) + b"".join(_len(2, m) for m in metrics)
    return _len(1, _len(1, res) + _len(2, scope))


# ------------------------------------------------------------------------------ configs
def test_subscription_configs_are_checked_as_kafka_does() -> None:
    validate_client_metrics_configs("s", {"metrics": "a.,b.", "interval.ms": "100", "match": "client_id=x.*"})
    validate_client_metrics_configs("s", {"metrics": None})  # a removal is not checked
    cases = [
        ("", {}, InvalidRequestError, "Subscription name can't be empty"),
        ("s", {"color": "red"}, InvalidRequestError, "Unknown client metrics configuration: color"),
        ("s", {"interval.ms": "99"}, InvalidRequestError, "interval must be between 100 and 3600000"),
        ("s", {"interval.ms": "3600001"}, InvalidRequestError, "interval must be between"),
        ("s", {"interval.ms": "soon"}, InvalidConfigError, "interval.ms"),
        ("s", {"match": "client_id"}, InvalidConfigError, "Illegal client matching pattern: client_id"),
        ("s", {"match": "client_id="}, InvalidConfigError, "Illegal client matching pattern"),
        ("s", {"match": "a=b=c"}, InvalidConfigError, "Illegal client matching pattern"),
        ("s", {"match": "host=x"}, InvalidConfigError, "Illegal client matching pattern: host=x"),
        ("s", {"match": "client_id=(["}, InvalidConfigError, "Illegal client matching pattern"),
    ]
    for name, configs, error, text in cases:
        with pytest.raises(error, match=text.replace("(", r"\(").replace("[", r"\[")):
            validate_client_metrics_configs(name, configs)


def test_match_patterns_match_whole_attributes_and_all_must_match() -> None:
    cid = uuid.uuid4()
    client = ClientAttributes.of(cid, "orders-app", "confluent-kafka-python", "2.16.1", "127.0.0.1", 50000)
    sub = subscription_of(
        "s", {"match": "client_software_name=confluent-kafka-.*, client_id=orders-.*", "metrics": "*"}
    )
    assert sub.matches(client)
    assert not subscription_of("s", {"match": "client_id=orders"}).matches(client)  # not a whole match
    assert not subscription_of("s", {"match": "client_id=orders-.*,client_source_port=1"}).matches(client)
    assert subscription_of("s", {"match": "client_source_port=50000"}).matches(client)
    assert subscription_of("s", {"match": f"client_instance_id={cid}"}).matches(client)
    assert subscription_of("s", {}).matches(client)  # no pattern: every client
    # A client that named no software does not match a software pattern.
    anonymous = ClientAttributes.of(cid, "orders-app", None, None, "127.0.0.1", 1)
    assert not subscription_of("s", {"match": "client_software_name=.*"}).matches(anonymous)


def test_subscription_ids_are_stable_and_change_with_the_subscription() -> None:
    cid = uuid.uuid4()
    a = subscription_id(["b.", "a."], 1000, cid)
    assert a == subscription_id(["a.", "b."], 1000, cid)
    assert -(2**31) <= a < 2**31
    assert a != subscription_id(["a."], 1000, cid)
    assert a != subscription_id(["a.", "b."], 2000, cid)
    assert a != subscription_id(["a.", "b."], 1000, uuid.uuid4())


def test_the_controller_writes_subscriptions_as_config_records_that_survive_a_snapshot() -> None:
    control = ConfigurationControlManager(BrokerConfig.from_props({}), brokers=lambda: [1])
    image = MetadataImage(cluster_id="c")
    set_ops = [
        {"name": "metrics", "config_operation": 0, "value": "org.apache.kafka.producer."},
        {"name": "interval.ms", "config_operation": 0, "value": "1000"},
    ]
    result = control.incremental_alter_configs(
        image, [{"resource_type": 16, "resource_name": "prod", "configs": set_ops}], False
    )
    assert [r["error_code"] for r in result.response] == [0]
    image = image.apply(result.records)
    assert dict(image.client_metrics["prod"]) == {
        "metrics": "org.apache.kafka.producer.",
        "interval.ms": "1000",
    }
    # APPEND works on the LIST configs.
    append = [{"name": "metrics", "config_operation": 2, "value": "org.apache.kafka.consumer."}]
    result = control.incremental_alter_configs(
        image, [{"resource_type": 16, "resource_name": "prod", "configs": append}], False
    )
    image = image.apply(result.records)
    assert image.client_metrics["prod"]["metrics"] == "org.apache.kafka.producer.,org.apache.kafka.consumer."
    # A snapshot replays to the same subscriptions.
    replayed = MetadataImage(cluster_id="c").apply(image_records(image))
    assert replayed.client_metrics == image.client_metrics
    # Bad input is refused per resource, as Kafka.
    bad = [{"name": "interval.ms", "config_operation": 0, "value": "5"}]
    result = control.incremental_alter_configs(
        image, [{"resource_type": 16, "resource_name": "prod", "configs": bad}], False
    )
    assert [r["error_code"] for r in result.response] == [InvalidRequestError.code] and not result.records
    # Deleting every config removes the subscription.
    delete = [{"name": n, "config_operation": 1, "value": None} for n in ("metrics", "interval.ms", "match")]
    result = control.incremental_alter_configs(
        image, [{"resource_type": 16, "resource_name": "prod", "configs": delete}], False
    )
    image = image.apply(result.records)
    assert "prod" not in image.client_metrics


# ------------------------------------------------------------------------------ OTLP
def test_decode_gauges_sums_attributes_and_resource() -> None:
    payload = metrics_data(
        gauge("org.apache.kafka.producer.node.request.latency.avg", number_point(1.5, {"node.id": 1})),
        sum_metric(
            "org.apache.kafka.producer.connection.creation.total",
            number_point(3, {"topic": "t", "partition": 0}),
            temporality=CUMULATIVE,
        ),
        resource={"client_id": "app", "client_software_name": "x"},
    )
    data = decode_metrics_data(payload)
    assert data.resource == {"client_id": "app", "client_software_name": "x"}
    g, s = data.points
    assert (g.name, g.kind, g.value, g.attributes) == (
        "org.apache.kafka.producer.node.request.latency.avg",
        GAUGE,
        1.5,
        (("node.id", "1"),),
    )
    assert (s.kind, s.value, s.temporality, s.monotonic) == (SUM, 3.0, CUMULATIVE, True)
    assert s.attributes == (("partition", "0"), ("topic", "t"))


def test_decode_skips_unknown_fields_and_refuses_garbage() -> None:
    extra = _str(99, "future field") + _vint(98, 7)
    data = decode_metrics_data(metrics_data(gauge("g", number_point(2.0) + extra) + extra))
    assert [p.value for p in data.points] == [2.0]
    assert decode_metrics_data(b"").points == []
    for garbage in (b"\x0a\x05ab", b"\xff" * 11, b"\x0b\x00", bytes([0x0A, 0x02, 0x0A, 0x80])):
        with pytest.raises(OtlpDecodeError):
            decode_metrics_data(garbage)


# ------------------------------------------------------------------------------ the manager
ORIGIN = RequestOrigin("app", "confluent-kafka-python", "2.16.1", "127.0.0.1", 40000)


def manager(subs: Mapping[str, Mapping[str, str]], clock: ManualClock, max_bytes: int = 1 << 20):
    state = {"subs": dict(subs)}
    m = ClientMetricsManager(lambda: state["subs"], clock.now_ms, lambda: max_bytes, ClientTelemetryStore(10))
    return m, state


def test_no_subscription_means_no_metrics_at_the_default_interval() -> None:
    m, _ = manager({}, ManualClock())
    resp = m.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    assert resp["error_code"] == 0 and resp["client_instance_id"] != uuid.UUID(int=0)
    assert resp["requested_metrics"] == [] and resp["push_interval_ms"] == 300_000
    assert resp["accepted_compression_types"] == [ZSTD, LZ4, GZIP, SNAPPY]
    assert resp["delta_temporality"] is True and resp["telemetry_max_bytes"] == 1 << 20


def test_matching_subscriptions_combine_and_a_change_gives_a_new_subscription_id() -> None:
    clock = ManualClock()
    m, state = manager(
        {
            "a": {"metrics": "org.apache.kafka.producer.", "interval.ms": "2000"},
            "b": {"metrics": "org.apache.kafka.consumer.", "interval.ms": "1000", "match": "client_id=app"},
            "c": {"metrics": "*", "match": "client_id=other"},
        },
        clock,
    )
    first = m.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    cid = first["client_instance_id"]
    assert first["requested_metrics"] == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert first["push_interval_ms"] == 1000
    # Asking again within the interval is throttled.
    clock.advance(10)
    assert m.get_subscriptions(cid, ORIGIN)["error_code"] == ThrottlingQuotaExceededError.code
    # A changed subscription is seen at once; a push with the old id is told so.
    state["subs"] = {**state["subs"], "c": {"metrics": "*", "match": "client_id=app"}}
    clock.advance(10)
    assert m.push(cid, first["subscription_id"], False, NONE, b"", ORIGIN) == UnknownSubscriptionIdError.code
    again = m.get_subscriptions(cid, ORIGIN)  # allowed at once after UNKNOWN_SUBSCRIPTION_ID
    assert again["error_code"] == 0 and again["requested_metrics"] == ["*"]
    assert again["subscription_id"] != first["subscription_id"]


def test_pushes_are_throttled_to_the_interval_and_terminating_ends_the_instance() -> None:
    clock = ManualClock()
    m, _ = manager({"all": {"metrics": "*", "interval.ms": "1000"}}, clock)
    sub = m.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    cid, sid = sub["client_instance_id"], sub["subscription_id"]
    payload = metrics_data(gauge("g", number_point(1.0)))
    clock.advance(100)
    assert m.push(cid, sid, False, NONE, payload, ORIGIN) == 0  # the first push after a get
    clock.advance(500)
    assert m.push(cid, sid, False, NONE, payload, ORIGIN) == ThrottlingQuotaExceededError.code
    clock.advance(500)
    assert m.push(cid, sid, False, NONE, payload, ORIGIN) == 0
    clock.advance(1)
    assert m.push(cid, sid, True, NONE, payload, ORIGIN) == 0  # terminating: whatever the interval
    clock.advance(5000)
    assert m.push(cid, sid, False, NONE, payload, ORIGIN) == InvalidRequestError.code
    assert m.push(uuid.UUID(int=0), sid, False, NONE, payload, ORIGIN) == InvalidRequestError.code
    assert m.pushes == 3 and m.throttled == 1


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_every_accepted_compression_decodes(codec: int) -> None:
    clock = ManualClock()
    m, _ = manager({"all": {"metrics": "*", "interval.ms": "1000"}}, clock)
    sub = m.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    payload = compress(codec, metrics_data(gauge("org.apache.kafka.g", number_point(4.0))))
    assert m.push(sub["client_instance_id"], sub["subscription_id"], False, codec, payload, ORIGIN) == 0
    (client,) = m.store.clients(clock.now_ms())
    assert [s.value for s in client.series.values()] == [4.0]


def test_push_errors_as_kafka() -> None:
    clock = ManualClock()
    m, _ = manager({"all": {"metrics": "*", "interval.ms": "100"}}, clock, max_bytes=200)
    sub = m.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    cid, sid = sub["client_instance_id"], sub["subscription_id"]

    def push(codec: int, payload: bytes) -> int:
        clock.advance(1000)
        return m.push(cid, sid, False, codec, payload, ORIGIN)

    assert push(9, b"x") == UnsupportedCompressionTypeError.code
    assert push(NONE, b"\x00" * 201) == TelemetryTooLargeError.code
    big = metrics_data(*(gauge(f"metric.{i}", number_point(1.0)) for i in range(40)))
    assert len(compress(ZSTD, big)) <= 200 < len(big)
    assert push(ZSTD, compress(ZSTD, big)) == TelemetryTooLargeError.code  # too large once decompressed
    assert push(NONE, b"\x0b\x00") == InvalidRecordError.code
    assert push(GZIP, b"not gzip") == InvalidRecordError.code
    assert push(NONE, metrics_data(gauge("ok", number_point(1.0)))) == 0
    assert m.push_errors[TelemetryTooLargeError.code] == 2


def test_a_push_to_a_broker_that_never_saw_the_client_is_accepted() -> None:
    """After a restart (or on another broker) the instance is recreated from the push: the
    subscription id is the same function of the same subscriptions."""
    clock = ManualClock()
    subs = {"all": {"metrics": "*", "interval.ms": "1000"}}
    before, _ = manager(subs, clock)
    sub = before.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    after, _ = manager(subs, clock)
    payload = metrics_data(gauge("g", number_point(1.0)))
    assert after.push(sub["client_instance_id"], sub["subscription_id"], False, NONE, payload, ORIGIN) == 0


# ------------------------------------------------------------------------------ the store
def test_delta_sums_accumulate_gauges_replace_and_silent_clients_expire() -> None:
    clock = ManualClock()
    m, _ = manager({"all": {"metrics": "*", "interval.ms": "1000"}}, clock)
    sub = m.get_subscriptions(uuid.UUID(int=0), ORIGIN)
    cid, sid = sub["client_instance_id"], sub["subscription_id"]
    for value in (5, 7):
        clock.advance(1000)
        payload = metrics_data(
            sum_metric("org.apache.kafka.producer.record.send.total", number_point(value, {"topic": "t"})),
            gauge("org.apache.kafka.producer.record.queue.time.avg", number_point(float(value))),
        )
        assert m.push(cid, sid, False, NONE, payload, ORIGIN) == 0
    families = {f.name: f for f in client_telemetry_families(m, error_name)}
    sent = families["org_apache_kafka_producer_record_send"]  # a counter: "_total" on the sample
    assert sent.type == "counter"
    (sample,) = sent.samples
    assert sample.name == "org_apache_kafka_producer_record_send_total" and sample.value == 12
    assert sample.labels == {"client_instance_id": str(cid), "client_id": "app", "topic": "t"}
    (queue,) = families["org_apache_kafka_producer_record_queue_time_avg"].samples
    assert queue.value == 7.0
    (info,) = families["zurau_client_telemetry_info"].samples
    assert info.labels["client_software_name"] == "confluent-kafka-python"
    # Silent for longer than 3 intervals (at least 60 s): forgotten.
    clock.advance(60_001)
    families = {f.name: f for f in client_telemetry_families(m, error_name)}
    assert "org_apache_kafka_producer_record_send" not in families
    assert families["zurau_client_telemetry_info"].samples == []
    assert families["kafka_server_client_metrics_instance_count"].samples[0].value == 0


def test_the_store_caps_clients_and_series() -> None:
    store = ClientTelemetryStore(max_clients=3)
    data = decode_metrics_data(metrics_data(gauge("g", number_point(1.0))))
    ids = [uuid.uuid4() for _ in range(5)]
    for i, cid in enumerate(ids):
        store.record(i, cid, f"c{i}", (None, None), None, 1000, data)
    assert [c.client_id for c in store.clients(5)] == ["c2", "c3", "c4"]  # least recent dropped
    many = decode_metrics_data(
        metrics_data(
            gauge("g", *(number_point(1.0, {"partition": i}) for i in range(MAX_SERIES_PER_CLIENT + 5)))
        )
    )
    store.record(6, ids[4], "c4", (None, None), None, 1000, many)
    c4 = [c for c in store.clients(6) if c.client_id == "c4"][0]
    assert len(c4.series) == MAX_SERIES_PER_CLIENT and c4.dropped_points == 6


def test_prometheus_names() -> None:
    assert prometheus_name("org.apache.kafka.producer.node.request.latency.avg") == (
        "org_apache_kafka_producer_node_request_latency_avg"
    )
    assert prometheus_name("node.id") == "node_id"
    assert prometheus_name("1x") == "_1x"
