"""Dynamic broker configs: the controller's records and checks for BROKER resources, the image
and snapshot keeping them, and a node's effective config derived from an image."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from zurau.broker.broker_reconfigurables import reconfigurable_configs
from zurau.config import BrokerConfig
from zurau.config.dynamic_broker_configs import (
    RECONFIGURED_CONFIGS,
    applied_dynamically,
    kafka_dynamic,
    per_broker_only,
)
from zurau.metadata.controller.config_control import APPEND, DELETE, SET, SUBTRACT
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    BROKER_RESOURCE,
    BrokerEndpoint,
    ConfigRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from zurau.metadata.snapshot import encode_snapshot, image_from_snapshot
from zurau.protocol import errors as E

BROKER = 4


def _controller() -> QuorumController:
    cfg = BrokerConfig.from_props({"node.id": "1", "log.retention.hours": "24"})
    return QuorumController(cfg, lambda: (1,), rng=random.Random(7))


def _cluster() -> MetadataImage:
    """Brokers 1, 2 and 3 registered and live."""
    return MetadataImage("c").apply(
        [
            RegisterBrokerRecord(b, uuid.UUID(int=b), 10 + b, (BrokerEndpoint("PLAINTEXT", "h", 9000 + b),), fenced=False)
            for b in (1, 2, 3)
        ],
        last_offset=10,
    )


def _incremental(
    c: QuorumController, image: MetadataImage, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False
) -> tuple[MetadataImage, dict[str, Any], list[Any]]:
    res = c.incremental_alter_configs(
        image,
        [{"resource_type": BROKER, "resource_name": name,
          "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
        validate_only,
    )
    return image.apply(res.records), dict(res.response[0]), list(res.records)


def test_any_registered_broker_and_the_default_are_altered_as_config_records() -> None:
    c, image = _controller(), _cluster()
    image, resp, records = _incremental(c, image, "2", ("log.retention.ms", SET, "1000"), ("min.insync.replicas", SET, "2"))
    assert resp["error_code"] == 0, resp
    assert records == [
        ConfigRecord(BROKER_RESOURCE, "2", "log.retention.ms", "1000"),
        ConfigRecord(BROKER_RESOURCE, "2", "min.insync.replicas", "2"),
    ]
    image, resp, records = _incremental(c, image, "", ("log.retention.ms", SET, "5000"))
    assert resp["error_code"] == 0 and records == [ConfigRecord(BROKER_RESOURCE, "", "log.retention.ms", "5000")]
    assert dict(image.broker_config(2)) == {"log.retention.ms": "1000", "min.insync.replicas": "2"}
    assert dict(image.broker_config("")) == {"log.retention.ms": "5000"}
    assert dict(image.broker_config(3)) == {}
    # unchanged values write nothing; DELETE writes a null value
    _, resp, records = _incremental(c, image, "2", ("log.retention.ms", SET, "1000"))
    assert resp["error_code"] == 0 and records == []
    image, _, records = _incremental(c, image, "2", ("min.insync.replicas", DELETE, None))
    assert records == [ConfigRecord(BROKER_RESOURCE, "2", "min.insync.replicas", None)]
    # legacy AlterConfigs replaces the whole set of the level
    res = c.alter_configs(
        image, [{"resource_type": BROKER, "resource_name": "2", "configs": [{"name": "compression.type", "value": "lz4"}]}], False
    )
    assert res.response[0]["error_code"] == 0
    image = image.apply(res.records)
    assert dict(image.broker_config(2)) == {"compression.type": "lz4"}


def test_validate_only_writes_nothing() -> None:
    c, image = _controller(), _cluster()
    _, resp, records = _incremental(c, image, "1", ("log.retention.ms", SET, "1000"), validate_only=True)
    assert resp["error_code"] == 0 and records == []
    _, resp, records = _incremental(c, image, "1", ("log.retention.ms", SET, "x"), validate_only=True)
    assert resp["error_code"] == E.InvalidRequestError.code and records == []


@pytest.mark.parametrize(
    ("name", "ops", "code", "message"),
    [
        ("9", [("log.retention.ms", SET, "1")], E.InvalidRequestError.code,
         "Unexpected broker id, expected one of the registered brokers (1, 2, 3) or empty string, but received 9"),
        ("x", [("log.retention.ms", SET, "1")], E.InvalidRequestError.code, "but received x"),
        ("1", [("num.partitions", SET, "3")], E.InvalidRequestError.code,
         "Cannot update these configs dynamically: Set(num.partitions)"),
        ("1", [("no.such.config", SET, "3")], E.InvalidConfigError.code, "Unknown broker configs: Set(no.such.config)"),
        ("1", [("max.connections", SET, "2")], E.InvalidRequestError.code,
         "Cannot update these configs dynamically: Set(max.connections) (Kafka can; Zurau reads"),
        ("1", [("log.cleaner.threads", SET, "0")], E.InvalidRequestError.code, "Log cleaner threads should be at least 1"),
        ("", [("num.replica.fetchers", SET, "0")], E.InvalidRequestError.code,
         "Invalid value 0 for configuration num.replica.fetchers: Value must be at least 1"),
        ("", [("sasl.kerberos.min.time.before.relogin", SET, "58000")], E.InvalidRequestError.code,
         "Cannot update these configs at default cluster level, broker id must be specified"),
        ("1", [("log.retention.ms", SET, "abc")], E.InvalidRequestError.code, "log.retention.ms"),
        ("1", [("min.insync.replicas", SET, "0")], E.InvalidRequestError.code, "min.insync.replicas"),
        ("1", [("log.retention.ms", APPEND, "1")], E.InvalidConfigError.code, "because its type is not LIST"),
    ],
)
def test_refusals(name: str, ops: list[tuple[str, int, str | None]], code: int, message: str) -> None:
    c, image = _controller(), _cluster()
    after, resp, records = _incremental(c, image, name, *ops)
    assert (resp["error_code"], records) == (code, []), resp
    assert message in resp["error_message"]


def test_list_configs_append_and_subtract_from_the_value_in_effect() -> None:
    c, image = _controller(), _cluster()
    image, resp, _ = _incremental(c, image, "", ("log.cleanup.policy", APPEND, "compact"))
    assert resp["error_code"] == 0 and dict(image.broker_config("")) == {"log.cleanup.policy": "delete,compact"}
    image, resp, _ = _incremental(c, image, "", ("log.cleanup.policy", SUBTRACT, "delete"))
    assert dict(image.broker_config("")) == {"log.cleanup.policy": "compact"}
    # a broker's own resource starts from its value in effect: the cluster default just set
    image, resp, _ = _incremental(c, image, "1", ("log.cleanup.policy", APPEND, "delete,compact"))
    assert resp["error_code"] == 0 and dict(image.broker_config("1")) == {"log.cleanup.policy": "compact,delete"}


def test_apply_incremental_takes_the_definitions_and_base_it_is_given() -> None:
    from zurau.config import TOPIC_CONFIGS
    from zurau.metadata.controller.config_control import apply_incremental

    def op(name: str, operation: int, value: str | None) -> Any:
        return {"name": name, "config_operation": operation, "value": value}

    new = apply_incremental(
        {"retention.ms": "1"},
        [op("retention.ms", DELETE, None), op("cleanup.policy", APPEND, "compact"), op("x", SET, "y")],
        TOPIC_CONFIGS, lambda d: "delete", "Unknown topic config name",
    )
    assert new == {"cleanup.policy": "delete,compact", "x": "y"}
    with pytest.raises(E.InvalidConfigError, match="Unknown topic config name: nope"):
        apply_incremental({}, [op("nope", SUBTRACT, "a")], TOPIC_CONFIGS, lambda d: "", "Unknown topic config name")


def test_kerberos_configs_are_accepted_per_broker_as_kafka_does() -> None:
    """librdkafka's admin test (0081) sets one on a broker and expects success."""
    c, image = _controller(), _cluster()
    _, resp, records = _incremental(c, image, "1", ("sasl.kerberos.min.time.before.relogin", SET, "58000"))
    assert resp["error_code"] == 0 and len(records) == 1


def test_dynamic_lists() -> None:
    assert kafka_dynamic("max.connections") and not applied_dynamically("max.connections")
    assert applied_dynamically("log.cleaner.threads") and applied_dynamically("num.replica.fetchers")
    assert applied_dynamically("log.retention.ms") and applied_dynamically("unclean.leader.election.enable")
    assert not kafka_dynamic("num.partitions") and not kafka_dynamic("no.such")
    assert per_broker_only("listeners") and per_broker_only("ssl.keystore.location")
    assert not per_broker_only("log.retention.ms")


def test_effective_config_is_derived_from_the_image_and_survives_a_snapshot() -> None:
    static = BrokerConfig.from_props({"node.id": "2", "log.retention.hours": "24", "min.insync.replicas": "1"})
    c, image = _controller(), _cluster()
    image, _, _ = _incremental(c, image, "", ("log.retention.ms", SET, "5000"), ("min.insync.replicas", SET, "2"))
    image, _, _ = _incremental(c, image, "2", ("min.insync.replicas", SET, "3"))
    view = EffectiveBrokerConfig(static)
    cfg = view.of(image)
    assert cfg.log_retention_ms == 5000 and cfg.get("min.insync.replicas") == 3
    assert view.of(image) is cfg  # the same image: the same object
    assert view.value(image, "min.insync.replicas") == 3
    assert EffectiveBrokerConfig(static, node_id=3).value(image, "min.insync.replicas") == 2
    assert view.of(MetadataImage("c")) is static
    # a snapshot of the image holds them (what a restart replays)
    restored = image_from_snapshot("c", encode_snapshot(image, 0), image.offset)
    assert dict(restored.broker_config(2)) == {"min.insync.replicas": "3"}
    assert dict(restored.broker_config("")) == {"log.retention.ms": "5000", "min.insync.replicas": "2"}
    assert EffectiveBrokerConfig(static).of(restored).log_retention_ms == 5000


def test_stored_overrides_a_broker_cannot_take_are_skipped() -> None:
    static = BrokerConfig.from_props({"node.id": "1"})
    image = MetadataImage("c").apply(
        [
            ConfigRecord(BROKER_RESOURCE, "", "log.retention.ms", "7000"),
            ConfigRecord(BROKER_RESOURCE, "", "num.partitions", "9"),  # never dynamic: not for us
            ConfigRecord(BROKER_RESOURCE, "1", "min.insync.replicas", "zero"),
        ]
    )
    cfg = EffectiveBrokerConfig(static).of(image)
    assert cfg.log_retention_ms == 7000 and cfg.get("num.partitions") == 1
    assert cfg.get("min.insync.replicas") == 1


def test_unclean_election_follows_the_dynamic_cluster_default() -> None:
    c, image = _controller(), _cluster()
    tid = uuid.UUID(int=77)
    image = image.apply([TopicRecord("t", tid), PartitionRecord(0, tid, (2, 3), (2,), 2, 1, 1)])
    t = image.get("t")
    assert t is not None
    assert not c.elections.changes.unclean_allowed(image, t)
    image, resp, _ = _incremental(c, image, "", ("unclean.leader.election.enable", SET, "true"))
    assert resp["error_code"] == 0
    assert c.elections.changes.unclean_allowed(image, t)


def test_the_cleaner_and_fetcher_pools_are_accepted_per_broker_and_as_cluster_default() -> None:
    c, image = _controller(), _cluster()
    image, resp, records = _incremental(
        c, image, "1", ("log.cleaner.threads", SET, "2"), ("log.cleaner.backoff.ms", SET, "500"),
        ("log.cleaner.dedupe.buffer.size", SET, "1048576"), ("log.cleaner.io.buffer.size", SET, "65536"),
        ("log.cleaner.io.max.bytes.per.second", SET, "1e6"), ("log.cleaner.io.buffer.load.factor", SET, "0.8"),
    )
    assert resp["error_code"] == 0 and len(records) == 6, resp
    image, resp, records = _incremental(c, image, "", ("num.replica.fetchers", SET, "3"))
    assert resp["error_code"] == 0 and dict(image.broker_config("")) == {"num.replica.fetchers": "3"}


def test_the_accepted_names_are_the_ones_the_broker_reconfigures() -> None:
    """config/ lists them by name (it may not import the broker); they must agree."""
    assert RECONFIGURED_CONFIGS == reconfigurable_configs()
