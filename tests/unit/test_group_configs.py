"""Group configs (Kafka's GroupConfig): definitions, validation against the broker's bounds,
effective values, DescribeConfigs entries, the metadata image, the controller, and the
coordinators' use of a group's session timeout and heartbeat interval."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.unit.group_driver import Driver
from zurau.config import BrokerConfig, ConfigError, describe_group_config
from zurau.config.group_configs import (
    GROUP_CONFIGS,
    ShareAutoOffsetReset,
    effective_group_config,
    effective_group_overrides,
    group_config_defaults,
    parse_iso8601_duration_ms,
    parse_share_auto_offset_reset,
    resolve_group_config,
    validate_group_configs,
)
from zurau.coordinator.group.share_group import SESSION_TIMER
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import GROUP_RESOURCE, ConfigRecord
from zurau.metadata.snapshot import image_records
from zurau.protocol import errors as E

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DEFAULT_CONFIG, GROUP_CONFIG = 5, 8
BROKER = BrokerConfig.from_props({})

KAFKA_42_GROUP_CONFIGS = [
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "share.auto.offset.reset",
    "share.heartbeat.interval.ms",
    "share.isolation.level",
    "share.record.lock.duration.ms",
    "share.session.timeout.ms",
    "streams.heartbeat.interval.ms",
    "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas",
    "streams.session.timeout.ms",
]


# ------------------------------------------------------------------------------ definitions


def test_definitions_are_kafkas() -> None:
    # Kafka 4.2's, KIP-1191's dead-letter configs (Kafka 4.4) and Zurau's redelivery delay
    extra = [
        "errors.deadletterqueue.copy.record.enable",
        "errors.deadletterqueue.topic.name",
        "share.redelivery.delay.ms",
    ]
    assert sorted(GROUP_CONFIGS) == sorted(KAFKA_42_GROUP_CONFIGS + extra)
    assert group_config_defaults(BROKER) == {
        "errors.deadletterqueue.copy.record.enable": False,
        "errors.deadletterqueue.topic.name": "",
        "share.redelivery.delay.ms": 0,
        "consumer.heartbeat.interval.ms": 5000,
        "consumer.session.timeout.ms": 45_000,
        "share.auto.offset.reset": "latest",
        "share.heartbeat.interval.ms": 5000,
        "share.isolation.level": "read_uncommitted",
        "share.record.lock.duration.ms": 30_000,
        "share.session.timeout.ms": 45_000,
        "streams.heartbeat.interval.ms": 5000,
        "streams.initial.rebalance.delay.ms": 3000,
        "streams.num.standby.replicas": 0,
        "streams.session.timeout.ms": 45_000,
    }
    assert GROUP_CONFIGS["share.record.lock.duration.ms"].valid_values == "[1000,...]"


def test_dead_letter_topic_must_carry_the_broker_prefix() -> None:
    assert validate_group_configs(BROKER, {"errors.deadletterqueue.topic.name": "dlq.jobs"})
    with pytest.raises(ConfigError, match="must start with 'dlq.'"):
        validate_group_configs(BROKER, {"errors.deadletterqueue.topic.name": "payments"})
    custom = BrokerConfig.from_props({"errors.deadletterqueue.topic.name.prefix": "dead."})
    assert validate_group_configs(custom, {"errors.deadletterqueue.topic.name": "dead.jobs"})


def test_defaults_come_from_the_broker_configs() -> None:
    broker = BrokerConfig.from_props(
        {"group.consumer.session.timeout.ms": "50000", "group.share.record.lock.duration.ms": "20000"}
    )
    defaults = group_config_defaults(broker)
    assert defaults["consumer.session.timeout.ms"] == 50_000
    assert defaults["share.record.lock.duration.ms"] == 20_000
    # plain dicts of typed values work too
    assert (
        effective_group_config({"group.share.heartbeat.interval.ms": 7000}, {}, "share.heartbeat.interval.ms")
        == 7000
    )


def test_broker_share_config_bounds_are_checked_at_start() -> None:
    with pytest.raises(ConfigError, match="group.share.min.record.lock.duration.ms"):
        BrokerConfig.from_props({"group.share.record.lock.duration.ms": "10000"})
    with pytest.raises(ConfigError, match="group.share.max.size"):
        BrokerConfig.from_props({"group.share.max.share.sessions": "100", "group.share.max.size": "200"})
    with pytest.raises(ConfigError, match="Value must be no more than 10"):
        BrokerConfig.from_props({"group.share.delivery.count.limit": "11"})


# ------------------------------------------------------------------------------ share.auto.offset.reset


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P1D", 86_400_000),
        ("PT0.5S", 500),
        ("pt1m30s", 90_000),
        ("P1DT2H", 93_600_000),
        ("PT-1H", -3_600_000),
        ("-PT-1H", 3_600_000),
        ("PT0S", 0),
    ],
)
def test_iso8601_durations_parse_as_java_does(text: str, ms: int) -> None:
    assert parse_iso8601_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1H", "PT1", "P1H", "PT1H2D", "PT1.5H"])
def test_malformed_iso8601_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_iso8601_duration_ms(text)


def test_share_auto_offset_reset_values() -> None:
    assert parse_share_auto_offset_reset("earliest") == ShareAutoOffsetReset("earliest")
    assert parse_share_auto_offset_reset("latest") == ShareAutoOffsetReset("latest")
    assert parse_share_auto_offset_reset("by_duration:PT15M") == ShareAutoOffsetReset("by_duration", 900_000)
    for bad in ("LATEST", "none", "by_duration", "by_duration:", "by_duration:PT-1S", "by_duration:1h"):
        with pytest.raises(ValueError):
            parse_share_auto_offset_reset(bad)
        with pytest.raises(
            ConfigError, match="'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'"
        ):
            validate_group_configs(BROKER, {"share.auto.offset.reset": bad})


# ------------------------------------------------------------------------------ validation


def test_valid_overrides_are_typed() -> None:
    typed = validate_group_configs(
        BROKER,
        {
            "consumer.session.timeout.ms": "50000",
            "share.isolation.level": "read_committed",
            "share.auto.offset.reset": "by_duration:P1D",
            "share.record.lock.duration.ms": "15000",
            "streams.num.standby.replicas": "2",
        },
    )
    assert typed["consumer.session.timeout.ms"] == 50_000
    assert typed["share.isolation.level"] == "read_committed"


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"no.such.config": "1"}, "Unknown group config name: no.such.config"),
        (
            {"consumer.session.timeout.ms": None},
            "Null value not supported for group configs: consumer.session.timeout.ms",
        ),
        ({"consumer.session.timeout.ms": "abc"}, "Not a number of type INT"),
        (
            {"share.isolation.level": "serializable"},
            "String must be one of: read_committed, read_uncommitted",
        ),
        ({"share.record.lock.duration.ms": "999"}, "Value must be at least 1000"),
        (
            {"consumer.heartbeat.interval.ms": "4999"},
            "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
        ),
        (
            {"consumer.heartbeat.interval.ms": "15001"},
            "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
        ),
        (
            {"consumer.session.timeout.ms": "44999"},
            "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
        ),
        (
            {"consumer.session.timeout.ms": "60001"},
            "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
        ),
        (
            {"share.session.timeout.ms": "1000"},
            "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms",
        ),
        (
            {"share.heartbeat.interval.ms": "20000"},
            "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms",
        ),
        (
            {"share.record.lock.duration.ms": "14999"},
            "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms",
        ),
        (
            {"share.record.lock.duration.ms": "60001"},
            "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms",
        ),
        (
            {"streams.num.standby.replicas": "3"},
            "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas",
        ),
    ],
)
def test_invalid_overrides_are_refused_with_kafkas_message(configs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate_group_configs(BROKER, configs)
    assert message in str(e.value)


def test_session_timeout_must_exceed_heartbeat_interval() -> None:
    broker = BrokerConfig.from_props(
        {"group.consumer.min.session.timeout.ms": "5000", "group.consumer.max.heartbeat.interval.ms": "30000"}
    )
    validate_group_configs(
        broker, {"consumer.session.timeout.ms": "10000", "consumer.heartbeat.interval.ms": "9000"}
    )
    with pytest.raises(
        ConfigError, match="consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    ):
        validate_group_configs(
            broker, {"consumer.session.timeout.ms": "10000", "consumer.heartbeat.interval.ms": "10000"}
        )


# ------------------------------------------------------------------------------ effective values


def test_effective_values_take_the_override_else_the_broker_default() -> None:
    overrides = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "20000"}
    assert effective_group_config(BROKER, overrides, "share.auto.offset.reset") == "earliest"
    assert effective_group_config(BROKER, overrides, "share.record.lock.duration.ms") == 20_000
    assert effective_group_config(BROKER, overrides, "share.isolation.level") == "read_uncommitted"
    assert effective_group_config(BROKER, {}, "share.auto.offset.reset") == "latest"
    assert effective_group_config(BROKER, {}, "consumer.session.timeout.ms") == 45_000
    resolved = resolve_group_config(BROKER, overrides)
    assert (
        resolved["share.record.lock.duration.ms"] == 20_000 and resolved["share.session.timeout.ms"] == 45_000
    )
    with pytest.raises(KeyError):
        effective_group_config(BROKER, {}, "share.no.such")


def test_stored_values_outside_new_bounds_are_capped_and_garbage_ignored() -> None:
    # set when the bounds were wider; the broker has since restarted with the defaults
    stored = {
        "share.record.lock.duration.ms": "120000",
        "consumer.session.timeout.ms": "1000",
        "share.isolation.level": "x",
    }
    assert effective_group_overrides(BROKER, stored) == {
        "share.record.lock.duration.ms": 60_000,
        "consumer.session.timeout.ms": 45_000,
    }
    assert effective_group_config(BROKER, stored, "share.isolation.level") == "read_uncommitted"


# ------------------------------------------------------------------------------ DescribeConfigs


def test_describe_lists_every_group_config_with_its_source() -> None:
    entries = describe_group_config(BROKER, {"share.auto.offset.reset": "earliest"})
    assert [e.name for e in entries] == sorted(GROUP_CONFIGS)
    by = {e.name: e for e in entries}
    reset = by["share.auto.offset.reset"]
    assert (reset.value_str, reset.source, reset.is_default, reset.read_only) == (
        "earliest",
        GROUP_CONFIG,
        False,
        False,
    )
    assert [tuple(s) for s in reset.synonyms] == [("share.auto.offset.reset", "earliest", GROUP_CONFIG)]
    session = by["consumer.session.timeout.ms"]
    assert (session.value_str, session.source, session.is_default) == ("45000", DEFAULT_CONFIG, True)
    assert session.type_name == "INT" and session.doc
    some = describe_group_config(BROKER, {}, ["share.isolation.level", "bogus"])
    assert [(e.name, e.value_str) for e in some] == [("share.isolation.level", "read_uncommitted")]


# ------------------------------------------------------------------------------ image and controller


def test_image_keeps_overrides_per_group_and_drops_an_empty_group() -> None:
    image = MetadataImage("c").apply(
        [
            ConfigRecord(GROUP_RESOURCE, "g", "share.auto.offset.reset", "earliest"),
            ConfigRecord(GROUP_RESOURCE, "g", "consumer.session.timeout.ms", "50000"),
            ConfigRecord(GROUP_RESOURCE, "h", "share.isolation.level", "read_committed"),
        ]
    )
    assert dict(image.group_config("g")) == {
        "share.auto.offset.reset": "earliest",
        "consumer.session.timeout.ms": "50000",
    }
    assert dict(image.group_config("missing")) == {} and image.broker_configs == {}
    again = MetadataImage("c").apply(image_records(image))
    assert again.group_configs == image.group_configs
    image = image.apply(
        [
            ConfigRecord(GROUP_RESOURCE, "g", "share.auto.offset.reset", None),
            ConfigRecord(GROUP_RESOURCE, "g", "consumer.session.timeout.ms", None),
        ]
    )
    assert "g" not in image.group_configs and dict(image.group_config("h")) == {
        "share.isolation.level": "read_committed"
    }


def _controller() -> QuorumController:
    return QuorumController(BrokerConfig.from_props({}), lambda: (1,), rng=random.Random(7))


def _inc(
    c: QuorumController,
    image: MetadataImage,
    group: str,
    *ops: tuple[str, int, str | None],
    validate_only: bool = False,
) -> tuple[MetadataImage, dict[str, Any]]:
    res = c.incremental_alter_configs(
        image,
        [
            {
                "resource_type": GROUP_RESOURCE,
                "resource_name": group,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
            }
        ],
        validate_only,
    )
    return image.apply(res.records), dict(res.response[0])


def test_controller_sets_and_deletes_group_configs() -> None:
    c = _controller()
    image = MetadataImage("c")
    image, r = _inc(
        c,
        image,
        "g",
        ("share.auto.offset.reset", SET, "earliest"),
        ("share.record.lock.duration.ms", SET, "20000"),
    )
    assert r["error_code"] == 0
    assert dict(image.group_config("g")) == {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": "20000",
    }
    image, r = _inc(c, image, "g", ("share.record.lock.duration.ms", DELETE, None), ("no.such", DELETE, None))
    assert r["error_code"] == 0 and dict(image.group_config("g")) == {"share.auto.offset.reset": "earliest"}
    image, r = _inc(c, image, "g", ("share.isolation.level", SET, "read_committed"), validate_only=True)
    assert r["error_code"] == 0 and "share.isolation.level" not in image.group_config("g")
    res = c.alter_configs(
        image,
        [
            {
                "resource_type": GROUP_RESOURCE,
                "resource_name": "g",
                "configs": [{"name": "share.isolation.level", "value": "read_committed"}],
            }
        ],
        False,
    )
    image = image.apply(res.records)
    assert res.response[0]["error_code"] == 0
    assert dict(image.group_config("g")) == {
        "share.isolation.level": "read_committed"
    }  # the whole set replaced


@pytest.mark.parametrize(
    ("group", "ops", "code", "text"),
    [
        (
            "",
            (("share.isolation.level", SET, "read_committed"),),
            E.InvalidRequestError.code,
            "Default group resources",
        ),
        ("g", (("nope", SET, "1"),), E.InvalidConfigError.code, "Unknown group config name: nope"),
        (
            "g",
            (("share.record.lock.duration.ms", SET, "1000"),),
            E.InvalidConfigError.code,
            "must be greater than or equal to group.share.min.record.lock.duration.ms",
        ),
        (
            "g",
            (("consumer.session.timeout.ms", APPEND, "1"),),
            E.InvalidConfigError.code,
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
        ),
        ("g", (("consumer.session.timeout.ms", SUBTRACT, "1"),), E.InvalidConfigError.code, "Can't SUBTRACT"),
        ("g", (("consumer.session.timeout.ms", SET, None),), E.InvalidRequestError.code, "Null value"),
    ],
)
def test_controller_refuses_bad_group_changes(group: str, ops: Any, code: int, text: str) -> None:
    image, r = _inc(_controller(), MetadataImage("c"), group, *ops)
    assert r["error_code"] == code and text in r["error_message"], r
    assert image.group_configs == MetadataImage("c").group_configs


# ------------------------------------------------------------------------------ the coordinators


def test_consumer_group_heartbeat_uses_the_groups_session_and_interval() -> None:
    d = Driver()
    overrides = {"cg": {"consumer.session.timeout.ms": 50_000, "consumer.heartbeat.interval.ms": 7000}}
    d.rt.group_configs = lambda gid: overrides.get(gid, {})
    r = d.cg_join("cg", "m1", ["t"])
    assert (r.error_code, r.heartbeat_interval_ms) == (0, 7000)
    assert d.core.timers.deadline(("cg-session", "cg", "m1")) == d.now + 50_000
    other = d.cg_join("other", "m2", ["t"])
    assert other.heartbeat_interval_ms == 5000
    assert d.core.timers.deadline(("cg-session", "other", "m2")) == d.now + 45_000


def test_share_group_heartbeat_uses_the_groups_session_and_interval() -> None:
    d = Driver()
    d.rt.group_configs = lambda gid: {"share.session.timeout.ms": 55_000, "share.heartbeat.interval.ms": 6000}
    t = d.call(
        "share_group_heartbeat",
        group_id="sg",
        member_id="m1",
        member_epoch=0,
        subscribed_topic_names=["t"],
        client_id="c",
        client_host="/127.0.0.1",
    )
    r = d.reply(t)
    assert (r.error_code, r.heartbeat_interval_ms) == (0, 6000)
    assert d.core.timers.deadline((SESSION_TIMER, "sg", "m1")) == d.now + 55_000
