"""Tests for zurau.config: Kafka defaults, precedence, properties parsing, validation, describe."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from zurau.config import (
    BROKER_CONFIGS,
    LONG_MAX,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    Listener,
    Password,
    QuorumVoter,
    describe_broker_config,
    describe_topic_config,
    format_value,
    java_double_str,
    load_properties,
    parse_listeners,
    parse_properties,
    resolve_topic_config,
    topic_config_values,
    validate_topic_configs,
)

# ---------------------------------------------------------------------------------------------
# Defaults match Kafka 4.x
# ---------------------------------------------------------------------------------------------

KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": ("delete",),
    "compression.type": "producer",
    "compression.gzip.level": -1,
    "compression.lz4.level": 9,
    "compression.zstd.level": 3,
    "delete.retention.ms": 86_400_000,
    "file.delete.delay.ms": 60_000,
    "flush.messages": 9_223_372_036_854_775_807,
    "flush.ms": 9_223_372_036_854_775_807,
    "index.interval.bytes": 4096,
    "max.compaction.lag.ms": 9_223_372_036_854_775_807,
    "max.message.bytes": 1_048_588,
    "message.timestamp.after.max.ms": 3_600_000,  # KIP-1030, Kafka 4.0
    "message.timestamp.before.max.ms": 9_223_372_036_854_775_807,
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": 0.5,
    "min.compaction.lag.ms": 0,
    "min.insync.replicas": 1,
    "preallocate": False,
    "retention.bytes": -1,
    "retention.ms": 604_800_000,
    "segment.bytes": 1_073_741_824,
    "segment.index.bytes": 10_485_760,
    "segment.jitter.ms": 0,
    "segment.ms": 604_800_000,
    "unclean.leader.election.enable": False,
}

KAFKA_BROKER_DEFAULTS = {
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    "message.max.bytes": 1_048_588,
    "socket.request.max.bytes": 104_857_600,
    "socket.send.buffer.bytes": 102_400,
    "socket.receive.buffer.bytes": 102_400,
    "num.io.threads": 8,
    "num.network.threads": 3,
    "num.recovery.threads.per.data.dir": 2,
    "log.segment.bytes": 1_073_741_824,
    "log.roll.hours": 168,
    "log.retention.hours": 168,
    "log.retention.bytes": -1,
    "log.retention.check.interval.ms": 300_000,
    "log.flush.offset.checkpoint.interval.ms": 60_000,
    "log.index.interval.bytes": 4096,
    "log.index.size.max.bytes": 10_485_760,
    "log.cleanup.policy": ("delete",),
    "log.cleaner.enable": True,
    "compression.type": "producer",
    "min.insync.replicas": 1,
    "offsets.topic.num.partitions": 50,
    "transaction.state.log.num.partitions": 50,
    "transaction.max.timeout.ms": 900_000,
    "transactional.id.expiration.ms": 604_800_000,
    "producer.id.expiration.ms": 86_400_000,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1_800_000,
    "offsets.retention.minutes": 10_080,
    "connections.max.idle.ms": 600_000,
    "request.timeout.ms": 30_000,
    "fetch.max.bytes": 57_671_680,
    "replica.fetch.max.bytes": 1_048_576,
    "queued.max.requests": 500,
    "unclean.leader.election.enable": False,
    "log.message.timestamp.type": "CreateTime",
    "security.inter.broker.protocol": "PLAINTEXT",
}


@pytest.mark.parametrize(("name", "expected"), sorted(KAFKA_TOPIC_DEFAULTS.items()))
def test_topic_defaults_match_kafka(name, expected):
    assert TOPIC_CONFIGS[name].default == expected


@pytest.mark.parametrize(("name", "expected"), sorted(KAFKA_BROKER_DEFAULTS.items()))
def test_broker_defaults_match_kafka(name, expected):
    assert BROKER_CONFIGS[name].kafka_default_value == expected
    assert BrokerConfig().get(name) == expected


def test_types_and_validators_sample():
    assert TOPIC_CONFIGS["retention.ms"].type is ConfigType.LONG
    assert TOPIC_CONFIGS["segment.bytes"].type is ConfigType.INT
    assert TOPIC_CONFIGS["cleanup.policy"].type is ConfigType.LIST
    assert TOPIC_CONFIGS["min.cleanable.dirty.ratio"].type is ConfigType.DOUBLE
    assert BROKER_CONFIGS["offsets.topic.replication.factor"].type is ConfigType.SHORT
    assert BROKER_CONFIGS["ssl.keystore.password"].type is ConfigType.PASSWORD
    assert BROKER_CONFIGS["ssl.keystore.password"].sensitive
    assert [t.code for t in ConfigType] == list(range(1, 10))
    assert TOPIC_CONFIGS["segment.bytes"].valid_values == "[1048576,...]"
    assert TOPIC_CONFIGS["compression.gzip.level"].valid_values == "[1,...,9] or -1"
    assert TOPIC_CONFIGS["min.cleanable.dirty.ratio"].valid_values == "[0,...,1]"
    assert TOPIC_CONFIGS["message.timestamp.type"].valid_values == "[CreateTime, LogAppendTime]"


def test_every_definition_has_a_short_doc():
    for d in [*TOPIC_CONFIGS.values(), *BROKER_CONFIGS.values()]:
        assert d.doc and "\n" not in d.doc and len(d.doc) < 160, d.name


def test_topic_synonyms_follow_kafka():
    syn = {n: tuple(s.name for s in d.synonyms) for n, d in TOPIC_CONFIGS.items()}
    assert syn["retention.ms"] == ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
    assert syn["segment.ms"] == ("log.roll.ms", "log.roll.hours")
    assert syn["max.message.bytes"] == ("message.max.bytes",)
    assert syn["segment.index.bytes"] == ("log.index.size.max.bytes",)
    assert syn["file.delete.delay.ms"] == ("log.segment.delete.delay.ms",)
    assert syn["flush.ms"] == ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    assert syn["min.cleanable.dirty.ratio"] == ("log.cleaner.min.cleanable.ratio",)
    assert syn["remote.storage.enable"] == ()
    for names in syn.values():
        for n in names:
            assert n in BROKER_CONFIGS, n


def test_zurau_specific_defaults():
    cfg = BrokerConfig()
    assert cfg.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092)]
    assert cfg.advertised_listeners == cfg.listeners
    assert cfg.log_dirs == [Path("./data")]
    assert cfg.node_id == 1 and cfg.broker_id == 1
    assert cfg.process_roles == ("broker", "controller")
    assert cfg.is_broker and cfg.is_controller
    assert cfg.cluster_id is None
    differing = {n for n, d in BROKER_CONFIGS.items() if d.differs_from_kafka}
    assert differing == {
        "group.consumer.migration.policy",
        "listeners",
        "log.dir",
        "node.id",
        "process.roles",
        "transaction.state.log.min.isr",
    }
    assert BROKER_CONFIGS["listeners"].kafka_default_value == ("PLAINTEXT://:9092",)
    assert BROKER_CONFIGS["log.dir"].kafka_default_value == "/tmp/kafka-logs"


def test_snake_case_keys_cover_log_config_fields():
    values = topic_config_values()
    for f in (
        "segment_bytes",
        "segment_ms",
        "segment_index_bytes",
        "index_interval_bytes",
        "retention_ms",
        "retention_bytes",
        "max_message_bytes",
        "message_timestamp_type",
        "cleanup_policy",
        "flush_messages",
        "flush_ms",
        "file_delete_delay_ms",
        "min_insync_replicas",
        "compression_type",
        "message_timestamp_before_max_ms",
        "message_timestamp_after_max_ms",
    ):
        assert f in values
    assert all(k.isidentifier() for k in values)
    assert values["segment_bytes"] == 1_073_741_824
    assert values["cleanup_policy"] == "delete"  # LIST in Kafka's string form for LogConfig
    assert values["leader_replication_throttled_replicas"] == ""


# ---------------------------------------------------------------------------------------------
# Precedence rules
# ---------------------------------------------------------------------------------------------


def test_retention_ms_beats_minutes_beats_hours():
    both = BrokerConfig(
        {"log.retention.ms": "1234", "log.retention.minutes": "5", "log.retention.hours": "2"}
    )
    assert both.log_retention_ms == 1234
    minutes = BrokerConfig({"log.retention.minutes": "5", "log.retention.hours": "2"})
    assert minutes.log_retention_ms == 5 * 60_000
    hours = BrokerConfig({"log.retention.hours": "2"})
    assert hours.log_retention_ms == 2 * 3_600_000
    assert BrokerConfig().log_retention_ms == 7 * 24 * 3_600_000
    assert hours.topic_defaults()["retention.ms"] == 2 * 3_600_000


@pytest.mark.parametrize(
    "props", [{"log.retention.ms": "-1"}, {"log.retention.hours": "-5"}, {"log.retention.ms": "-7"}]
)
def test_negative_retention_means_unlimited(props):
    cfg = BrokerConfig(props)
    assert cfg.log_retention_ms == -1
    assert resolve_topic_config(cfg)["retention_ms"] == -1


def test_roll_ms_beats_hours_and_flush_fallback():
    assert BrokerConfig({"log.roll.ms": "1000", "log.roll.hours": "3"}).log_roll_ms == 1000
    assert BrokerConfig({"log.roll.hours": "3"}).log_roll_ms == 3 * 3_600_000
    assert BrokerConfig({"log.roll.jitter.hours": "1"}).log_roll_jitter_ms == 3_600_000
    assert BrokerConfig().log_flush_interval_ms == LONG_MAX
    assert BrokerConfig({"log.flush.scheduler.interval.ms": "500"}).log_flush_interval_ms == 500
    assert (
        BrokerConfig(
            {"log.flush.interval.ms": "10", "log.flush.scheduler.interval.ms": "500"}
        ).log_flush_interval_ms
        == 10
    )


def test_log_dirs_beats_log_dir():
    assert BrokerConfig({"log.dir": "/a"}).log_dirs == [Path("/a")]
    cfg = BrokerConfig({"log.dir": "/a", "log.dirs": " /b , /c "})
    assert cfg.log_dirs == [Path("/b"), Path("/c")]
    assert cfg.metadata_log_dir == Path("/b")
    assert BrokerConfig({"metadata.log.dir": "/m"}).metadata_log_dir == Path("/m")


def test_broker_synonyms_feed_topic_config():
    cfg = BrokerConfig(
        {
            "log.segment.bytes": "2097152",
            "message.max.bytes": "2000000",
            "log.cleanup.policy": "compact,delete",
            "log.cleaner.min.cleanable.ratio": "0.25",
            "log.message.timestamp.type": "LogAppendTime",
        }
    )
    v = resolve_topic_config(cfg, {"segment.bytes": "1048576"})
    assert v["segment_bytes"] == 1_048_576  # topic override wins
    assert v["max_message_bytes"] == 2_000_000
    assert v["cleanup_policy"] == "compact,delete"
    assert v["min_cleanable_dirty_ratio"] == 0.25
    assert v["message_timestamp_type"] == "LogAppendTime"
    assert topic_config_values({"retention.ms": 5})["retention_ms"] == 5


def test_node_id_and_broker_id_alias():
    assert BrokerConfig({"broker.id": "7"}).node_id == 7
    assert BrokerConfig({"node.id": "3"}).node_id == 3
    assert BrokerConfig({"node.id": "3", "broker.id": "3"}).node_id == 3
    with pytest.raises(ConfigError, match=r"node.id \(3\) and broker.id \(4\)"):
        BrokerConfig({"node.id": "3", "broker.id": "4"})
    with pytest.raises(ConfigError, match="node.id"):
        BrokerConfig({"node.id": "-1"})


def test_typed_attribute_access():
    cfg = BrokerConfig(
        {"message.max.bytes": " 2048 ", "auto.create.topics.enable": "FALSE", "cluster.id": "abc"}
    )
    assert cfg.message_max_bytes == 2048
    assert cfg.auto_create_topics_enable is False
    assert cfg.get("message.max.bytes") == 2048
    assert cfg.cluster_id == "abc"
    assert cfg.offsets_retention_ms == 10_080 * 60_000
    assert cfg.is_set("message.max.bytes") and not cfg.is_set("num.partitions")
    with pytest.raises(AttributeError):
        _ = cfg.no_such_config
    with pytest.raises(KeyError):
        cfg.get("no.such.config")
    assert cfg.get("no.such.config", None) is None


# ---------------------------------------------------------------------------------------------
# Properties files
# ---------------------------------------------------------------------------------------------

PROPS_TEXT = (
    "# a comment\n"
    "! another comment \\\n"
    "not.a.continuation=1\n"
    "   \n"
    "a=1\n"
    "b : 2\n"
    "c 3\n"
    "d\t=\t4\n"
    "   e=  leading spaces dropped, trailing kept  \n"
    "f=one,\\\n"
    "    two,\\\n"
    "\tthree\n"
    "g=back\\\\slash\\\\\n"
    "h=after\n"
    "key\\ with\\ space=x\n"
    "colon\\:key=y\n"
    "eq\\=key=z\n"
    "tab=a\\tb\\nc\n"
    "uni=caf\\u00e9\n"
    "empty=\n"
    "alone\n"
    "a=overridden\n"
    "url=PLAINTEXT://host:9092\n"
    "hash=value # not a comment\r\n"
    "crlf=yes\r"
    "last=continued at eof\\"
)


def test_parse_properties_java_syntax():
    p = parse_properties(PROPS_TEXT)
    assert p["not.a.continuation"] == "1"  # comment lines never continue
    assert p["a"] == "overridden"
    assert p["b"] == "2"
    assert p["c"] == "3"
    assert p["d"] == "4"
    assert p["e"] == "leading spaces dropped, trailing kept  "
    assert p["f"] == "one,two,three"
    assert p["g"] == "back\\slash\\"  # even number of backslashes: no continuation
    assert p["h"] == "after"
    assert p["key with space"] == "x"
    assert p["colon:key"] == "y"
    assert p["eq=key"] == "z"
    assert p["tab"] == "a\tb\nc"
    assert p["uni"] == "café"
    assert p["empty"] == ""
    assert p["alone"] == ""
    assert p["url"] == "PLAINTEXT://host:9092"
    assert p["hash"] == "value # not a comment"
    assert p["crlf"] == "yes"
    assert p["last"] == "continued at eof"
    assert len(p) == 20


def test_parse_properties_malformed_unicode_escape():
    with pytest.raises(ConfigError, match="Malformed"):
        parse_properties("k=\\u12G4\n")


def test_load_properties_utf8_and_latin1(tmp_path):
    f = tmp_path / "server.properties"
    f.write_bytes("node.id=5\nlog.dirs=/tmp/\u00e9\nlisteners=PLAINTEXT://:9999\n".encode())
    assert load_properties(f)["log.dirs"] == "/tmp/\u00e9"
    g = tmp_path / "latin1.properties"
    g.write_bytes("x=caf\u00e9\n".encode("iso-8859-1"))
    assert load_properties(g)["x"] == "caf\u00e9"
    cfg = BrokerConfig.from_file(f, overrides={"num.partitions": "3"})
    assert cfg.node_id == 5 and cfg.num_partitions == 3
    assert cfg.listeners == [Listener("PLAINTEXT", "", 9999)]


def test_unknown_keys_are_kept_and_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="zurau.config"):
        cfg = BrokerConfig.from_props({"zookeeper.connect": "x:2181"})
        # Per-listener overrides are not unknown keys: Zurau refuses them (not implemented).
        with pytest.raises(ConfigError, match="listener.name.plaintext.num.partitions is not supported"):
            BrokerConfig.from_props({"listener.name.plaintext.num.partitions": "3"})
    assert cfg.unknown == {"zookeeper.connect": "x:2181"}
    assert cfg.get("zookeeper.connect") == "x:2181"
    assert cfg.listener_overrides == {}
    warned = [r.getMessage() for r in caplog.records]
    assert any("zookeeper.connect" in m for m in warned)
    assert not any("listener.name" in m for m in warned)


# ---------------------------------------------------------------------------------------------
# Validation errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "pattern"),
    [
        (
            {"num.partitions": "abc"},
            r"Invalid value abc for configuration num.partitions: Not a number of type INT",
        ),
        (
            {"num.partitions": "0"},
            r"Invalid value 0 for configuration num.partitions: Value must be at least 1",
        ),
        ({"num.partitions": "2147483648"}, r"num.partitions: Not a number of type INT"),
        ({"log.segment.bytes": "100"}, r"log.segment.bytes: Value must be at least 1048576"),
        ({"compression.type": "brotli"}, r"compression.type: String must be one of: uncompressed, zstd"),
        ({"delete.topic.enable": "yes"}, r"delete.topic.enable: Expected value to be either true or false"),
        (
            {"log.cleanup.policy": "delete,shred"},
            r"log.cleanup.policy: String must be one of: compact, delete",
        ),
        ({"log.cleaner.min.cleanable.ratio": "1.5"}, r"Value must be no more than 1"),
        ({"log.roll.ms": "0"}, r"log.roll.ms: invalid as the default of topic config segment.ms"),
        ({"process.roles": ""}, r"process.roles: Empty list is not allowed"),
        ({"replica.fetch.wait.max.ms": "40000"}, r"replica.socket.timeout.ms should always be at least"),
    ],
)
def test_invalid_broker_values_name_key_value_and_rule(props, pattern):
    with pytest.raises(ConfigError, match=pattern) as exc:
        BrokerConfig(props)
    assert isinstance(exc.value, ValueError)
    assert exc.value.name is not None


def test_config_error_attributes():
    with pytest.raises(ConfigError) as exc:
        BrokerConfig({"num.partitions": "-3"})
    assert (exc.value.name, exc.value.value, exc.value.reason) == (
        "num.partitions",
        -3,
        "Value must be at least 1",
    )


def test_validate_topic_configs_typed_values():
    typed = validate_topic_configs(
        {
            "retention.ms": "-1",
            "cleanup.policy": "compact, delete",
            "min.cleanable.dirty.ratio": "0.1",
            "preallocate": "TRUE",
            "compression.zstd.level": "-5",
            "leader.replication.throttled.replicas": "0:1,1:2",
            "follower.replication.throttled.replicas": "*",
        }
    )
    assert typed == {
        "retention.ms": -1,
        "cleanup.policy": ("compact", "delete"),
        "min.cleanable.dirty.ratio": 0.1,
        "preallocate": True,
        "compression.zstd.level": -5,
        "leader.replication.throttled.replicas": ("0:1", "1:2"),
        "follower.replication.throttled.replicas": ("*",),
    }
    assert validate_topic_configs({}) == {}


@pytest.mark.parametrize(
    ("configs", "pattern"),
    [
        ({"retention.millis": "1"}, r"^Unknown topic config name: retention.millis$"),
        ({"retention.ms": None}, r"^Null value not supported for topic configs: retention.ms$"),
        ({"retention.ms": "-2"}, r"retention.ms: Value must be at least -1"),
        ({"segment.bytes": "1048575"}, r"segment.bytes: Value must be at least 1048576"),
        ({"compression.gzip.level": "0"}, r"compression.gzip.level: Value must be at least 1"),
        ({"compression.gzip.level": "10"}, r"compression.gzip.level: Value must be no more than 9"),
        ({"message.timestamp.type": "createtime"}, r"String must be one of: CreateTime, LogAppendTime"),
        ({"leader.replication.throttled.replicas": "0-1"}, r"must be the literal '\*'"),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            r"min.compaction.lag.ms \(10\) > max",
        ),
        ({"max.message.bytes": "1.5"}, r"Not a number of type INT"),
    ],
)
def test_validate_topic_configs_errors(configs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        validate_topic_configs(configs)


def test_gzip_minus_one_allowed_and_cross_check_uses_broker_defaults():
    assert validate_topic_configs({"compression.gzip.level": "-1"}) == {"compression.gzip.level": -1}
    cfg = BrokerConfig({"log.cleaner.max.compaction.lag.ms": "100"})
    with pytest.raises(ConfigError, match="conflict topic config"):
        validate_topic_configs({"min.compaction.lag.ms": "200"}, cfg)
    assert validate_topic_configs({"min.compaction.lag.ms": "200"}) == {"min.compaction.lag.ms": 200}


# ---------------------------------------------------------------------------------------------
# Listeners, voters, protocol map
# ---------------------------------------------------------------------------------------------


def test_parse_listeners():
    got = parse_listeners("plaintext://:9092, SSL://host.example:9093,INTERNAL://[::1]:9094")
    assert got == [
        Listener("PLAINTEXT", "", 9092),
        Listener("SSL", "host.example", 9093),
        Listener("INTERNAL", "::1", 9094),
    ]
    for bad in ("PLAINTEXT:9092", "PLAINTEXT://host", "://h:1", "PLAINTEXT://h:70000"):
        with pytest.raises(ConfigError, match="listeners"):
            parse_listeners(bad)


def test_listener_validation_rules():
    with pytest.raises(ConfigError, match="different name"):
        BrokerConfig({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"})
    with pytest.raises(ConfigError, match="different port"):
        BrokerConfig({"listeners": "PLAINTEXT://:1,SSL://:1"})
    with pytest.raises(ConfigError, match="No security protocol defined for listener CLIENT"):
        BrokerConfig({"listeners": "CLIENT://:9092"})
    with pytest.raises(ConfigError, match="0.0.0.0"):
        BrokerConfig(
            {"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}
        )
    with pytest.raises(ConfigError, match="subset"):
        BrokerConfig({"advertised.listeners": "SSL://h:9093"})
    with pytest.raises(ConfigError, match="inter.broker.listener.name must be a listener name"):
        BrokerConfig({"listeners": "CLIENT://:9092", "listener.security.protocol.map": "CLIENT:PLAINTEXT"})


def test_controller_listener_and_protocol_map():
    cfg = BrokerConfig(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
            "advertised.listeners": "PLAINTEXT://broker.example:9092",
            "controller.quorum.voters": "1@localhost:9093",
        }
    )
    assert cfg.security_protocol("controller") == "PLAINTEXT"  # implied for controller listeners
    assert cfg.controller_listener_names == ["CONTROLLER"]
    assert cfg.advertised_listeners == [Listener("PLAINTEXT", "broker.example", 9092)]
    assert cfg.controller_quorum_voters == [QuorumVoter(1, "localhost", 9093)]
    assert cfg.inter_broker_listener_name == "PLAINTEXT"
    default_adv = BrokerConfig(
        {"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"}
    )
    assert [x.name for x in default_adv.advertised_listeners] == ["PLAINTEXT"]
    with pytest.raises(ConfigError, match="node id 1 must be included"):
        BrokerConfig({"controller.quorum.voters": "2@h:9093"})
    with pytest.raises(ConfigError, match="controller.quorum.voters"):
        BrokerConfig({"controller.quorum.voters": "h:9093"})
    mapped = BrokerConfig(
        {
            "listeners": "EXTERNAL://:9092,INTERNAL://:9094",
            "listener.security.protocol.map": "EXTERNAL:plaintext,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "internal",
        }
    )
    assert mapped.security_protocol("external") == "PLAINTEXT"
    assert mapped.inter_broker_listener_name == "INTERNAL"
    # A SASL listener needs mechanisms Zurau has (Kafka's default, GSSAPI, is not one).
    with pytest.raises(ConfigError, match="listener EXTERNAL uses SASL"):
        BrokerConfig(
            {
                "listeners": "EXTERNAL://:9092,INTERNAL://:9094",
                "listener.security.protocol.map": "EXTERNAL:SASL_SSL,INTERNAL:PLAINTEXT",
                "inter.broker.listener.name": "internal",
            }
        )
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        BrokerConfig({"listener.security.protocol.map": "PLAINTEXT:TLS"})
    with pytest.raises(ConfigError, match="Only one of"):
        BrokerConfig(
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}
        )


# ---------------------------------------------------------------------------------------------
# Formatting and describe
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (0.9, "0.9"),
        (0.0, "0.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (0.0001, "1.0E-4"),
        (-2.5e-5, "-2.5E-5"),
        (123.25, "123.25"),
    ],
)
def test_java_double_str(x, expected):
    assert java_double_str(x) == expected


def test_format_value_like_kafka():
    assert format_value(ConfigType.BOOLEAN, True) == "true"
    assert format_value(ConfigType.LIST, ("compact", "delete")) == "compact,delete"
    assert format_value(ConfigType.LIST, ()) == ""
    assert format_value(ConfigType.LONG, LONG_MAX) == "9223372036854775807"
    assert format_value(ConfigType.PASSWORD, Password("s3cret")) == "[hidden]"
    assert format_value(ConfigType.STRING, None) is None
    assert repr(Password("s3cret")) == "[hidden]"


def _by_name(entries):
    return {e.name: e for e in entries}


def test_describe_topic_sources_and_synonyms():
    cfg = BrokerConfig({"log.retention.minutes": "30", "log.segment.bytes": "2097152"})
    entries = _by_name(
        describe_topic_config(
            cfg, {"cleanup.policy": "compact,delete", "preallocate": "TRUE", "segment.bytes": "1048576"}
        )
    )
    assert len(entries) == len(TOPIC_CONFIGS)

    default = entries["max.message.bytes"]
    assert default.source == ConfigSource.DEFAULT_CONFIG and default.is_default
    assert default.value_str == "1048588"
    assert default.synonyms == [ConfigSynonym("message.max.bytes", "1048588", 5)]
    assert (default.type_name, default.config_type, default.read_only, default.sensitive) == (
        "INT",
        3,
        False,
        False,
    )

    static = entries["retention.ms"]
    assert static.value_str == str(30 * 60_000)
    assert static.source == ConfigSource.STATIC_BROKER_CONFIG and not static.is_default
    assert static.synonyms == [
        ConfigSynonym("log.retention.minutes", "30", 4),
        ConfigSynonym("log.retention.hours", "168", 5),
    ]

    override = entries["segment.bytes"]
    assert override.source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert override.synonyms == [
        ConfigSynonym("segment.bytes", "1048576", 1),
        ConfigSynonym("log.segment.bytes", "2097152", 4),
        ConfigSynonym("log.segment.bytes", "1073741824", 5),
    ]
    assert entries["cleanup.policy"].value_str == "compact,delete"
    assert entries["preallocate"].value_str == "true"
    assert entries["min.cleanable.dirty.ratio"].value_str == "0.5"
    no_syn = entries["remote.storage.enable"]
    assert (
        no_syn.synonyms == [] and no_syn.source == ConfigSource.DEFAULT_CONFIG and no_syn.value_str == "false"
    )
    assert entries["leader.replication.throttled.replicas"].value_str == ""

    only = describe_topic_config(cfg, {}, names=["retention.ms", "bogus"])
    assert [e.name for e in only] == ["retention.ms"]
    with pytest.raises(ConfigError):
        describe_topic_config(cfg, {"bogus": "1"})


def test_describe_broker_passwords_read_only_and_dynamic_layers():
    # TLS is refused until security lands; the refusal does not reveal the password.
    with pytest.raises(ConfigError, match="ssl.keystore.password") as refused:
        BrokerConfig({"ssl.keystore.password": "s3cret"})
    assert "s3cret" not in str(refused.value) and "[hidden]" in str(refused.value)
    assert isinstance(refused.value.value, Password) and refused.value.value.value == "s3cret"
    cfg = BrokerConfig({"message.max.bytes": "2000000", "num.partitions": "4"})
    assert cfg.ssl_keystore_password is None

    dyn = cfg.with_dynamic(
        dynamic_default={"message.max.bytes": "3000000"}, dynamic_broker={"log.retention.ms": "5"}
    )
    assert dyn.message_max_bytes == 3_000_000 and dyn.log_retention_ms == 5
    assert cfg.message_max_bytes == 2_000_000  # original untouched
    assert resolve_topic_config(dyn)["max_message_bytes"] == 3_000_000

    entries = _by_name(describe_broker_config(dyn))
    pw = entries["ssl.keystore.password"]
    assert pw.value_str is None and pw.sensitive and pw.config_type == 9
    assert pw.synonyms == []
    mmb = entries["message.max.bytes"]
    assert mmb.value_str == "3000000" and mmb.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert [s.source for s in mmb.synonyms] == [3, 4, 5] and not mmb.read_only
    assert entries["num.partitions"].read_only and entries["num.partitions"].source == 4
    assert entries["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG
    unset = entries["log.retention.minutes"]
    assert unset.value_str is None and unset.source == ConfigSource.DEFAULT_CONFIG and unset.synonyms == []
    assert entries["auto.create.topics.enable"].value_str == "true"
    assert entries["listeners"].value_str == "PLAINTEXT://127.0.0.1:9092"

    topic = _by_name(describe_topic_config(dyn, {}, names=["retention.ms"]))["retention.ms"]
    assert topic.source == ConfigSource.DYNAMIC_BROKER_CONFIG and topic.value_str == "5"

    cluster = _by_name(
        describe_broker_config(dyn, names=["message.max.bytes", "num.partitions"], per_broker=False)
    )
    assert [s.source for s in cluster["message.max.bytes"].synonyms] == [3]
    assert cluster["num.partitions"].source == ConfigSource.DEFAULT_CONFIG

    with pytest.raises(ConfigError, match="Cannot update these configs dynamically"):
        cfg.with_dynamic(dynamic_broker={"num.partitions": "2"})
    with pytest.raises(ConfigError, match="message.max.bytes"):
        cfg.with_dynamic(dynamic_broker={"message.max.bytes": "-1"})


def test_programmatic_typed_props():
    cfg = BrokerConfig(
        {"num.partitions": 3, "auto.create.topics.enable": False, "log.cleanup.policy": ["compact"]}
    )
    assert cfg.num_partitions == 3 and cfg.auto_create_topics_enable is False
    assert cfg.log_cleanup_policy == ("compact",)
    with pytest.raises(ConfigError, match="num.partitions"):
        BrokerConfig({"num.partitions": True})


def test_values_build_the_storage_log_config():
    from zurau.storage import log_config

    names = {f.name for f in dataclasses.fields(log_config.LogConfig)}
    cfg = BrokerConfig({"log.cleanup.policy": "compact,delete", "log.retention.hours": "1"})
    for broker, overrides in (
        (None, {}),
        (cfg, {}),
        (cfg, {"cleanup.policy": "compact", "segment.bytes": "1048576"}),
    ):
        values = topic_config_values(overrides, broker)
        assert names <= set(values), names - set(values)
        lc = log_config.LogConfig(**{k: v for k, v in values.items() if k in names})
        assert lc.retention_ms == values["retention_ms"]
        assert lc.cleanup_policy == values["cleanup_policy"]
        assert lc.message_timestamp_after_max_ms == 3_600_000
