"""Tiered storage configs: the broker's definitions and plugin prefixes, and the topic rules the
controller applies at CreateTopics / AlterConfigs (Kafka's LogConfig.validate, KIP-950)."""

from __future__ import annotations

import pytest

from zurau.config import BROKER_CONFIGS, BrokerConfig, ConfigError
from zurau.config.types import LONG_MAX
from zurau.metadata.controller.config_control import check_topic_configs
from zurau.protocol.errors import InvalidConfigError

TIERED_BROKER = BrokerConfig(
    {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "file",
        "rsm.config.dir": "/mnt/tier",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "7",
    }
)


def test_broker_definitions_and_defaults() -> None:
    defaults = {
        "remote.log.storage.system.enable": False,
        "remote.log.manager.task.interval.ms": 30_000,
        "remote.log.manager.copier.thread.pool.size": 10,
        "remote.log.manager.expiration.thread.pool.size": 10,
        "remote.log.reader.threads": 10,
        "remote.log.reader.max.pending.tasks": 100,
        "remote.fetch.max.wait.ms": 500,
        "remote.log.storage.manager.class.name": None,
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "remote.log.index.file.cache.total.size.bytes": 1 << 30,
        "remote.log.manager.copy.max.bytes.per.second": LONG_MAX,
        "remote.log.manager.fetch.max.bytes.per.second": LONG_MAX,
        "log.local.retention.ms": -2,
        "log.local.retention.bytes": -2,
    }
    for name, value in defaults.items():
        assert BROKER_CONFIGS[name].default == value, name
        assert not BROKER_CONFIGS[name].differs_from_kafka, name
    view = BrokerConfig().remote_log_manager
    assert (view.metadata_topic_num_partitions, view.metadata_topic_replication_factor) == (50, 3)
    assert view.metadata_topic_retention_ms == -1 and not view.system_enable
    with pytest.raises(ConfigError, match="remote.log.reader.threads"):
        BrokerConfig({"remote.log.reader.threads": "0"})


def test_plugin_settings_under_the_prefixes_are_accepted() -> None:
    assert TIERED_BROKER.unknown == {}
    view = TIERED_BROKER.remote_log_manager
    assert view.storage_manager_props == {"dir": "/mnt/tier"}
    assert view.metadata_manager_props == {"remote.log.metadata.topic.num.partitions": "7"}
    assert view.metadata_topic_num_partitions == 7 and view.storage_manager_class_name == "file"
    other = BrokerConfig(
        {"remote.log.storage.manager.impl.prefix": "rsm.s3.", "rsm.s3.bucket": "b", "rsm.config.x": "1"}
    )
    assert other.remote_log_manager.storage_manager_props == {"bucket": "b"}
    assert other.unknown == {"rsm.config.x": "1"}  # not under this broker's prefix
    with pytest.raises(ConfigError, match="remote.log.storage.manager.class.name"):
        BrokerConfig({"remote.log.storage.system.enable": "true"})
    with pytest.raises(ConfigError, match="remote.log.metadata.topic.num.partitions"):
        _ = BrokerConfig({"rlmm.config.remote.log.metadata.topic.num.partitions": "0"}).remote_log_manager
    with pytest.raises(ConfigError, match="remote.log.metadata.manager.class.name"):
        BrokerConfig({"remote.log.metadata.manager.class.name": "com.example.Rlmm"})


def _check(
    configs: dict[str, str], old: dict[str, str] | None = None, broker: BrokerConfig = TIERED_BROKER
) -> None:
    check_topic_configs(broker, dict(configs), old)


def test_topic_rules() -> None:
    _check({"remote.storage.enable": "true", "local.retention.ms": "1000", "local.retention.bytes": "10"})
    with pytest.raises(InvalidConfigError, match="Tiered Storage functionality is disabled in the broker"):
        _check({"remote.storage.enable": "true"}, broker=BrokerConfig())
    _check({"remote.storage.enable": "false"}, broker=BrokerConfig())
    for policy in ("compact", "compact,delete"):
        with pytest.raises(
            InvalidConfigError, match="Remote log storage is unsupported for the compacted topics"
        ):
            _check({"remote.storage.enable": "true", "cleanup.policy": policy})
    # cleanup.policy cannot become compact on a tiered topic
    with pytest.raises(InvalidConfigError, match="compacted topics"):
        _check(
            {"remote.storage.enable": "true", "cleanup.policy": "compact"}, {"remote.storage.enable": "true"}
        )
    bad = [
        (
            {"retention.bytes": "100", "local.retention.bytes": "200"},
            "Value must not be more than retention.bytes property value: 100",
        ),
        (
            {"retention.bytes": "100", "local.retention.bytes": "-1"},
            "Value must not be -1 as retention.bytes value is set as 100.",
        ),
        (
            {"retention.ms": "100", "local.retention.ms": "200"},
            "Value must not be more than retention.ms property value: 100",
        ),
        (
            {"retention.ms": "100", "local.retention.ms": "-1"},
            "Value must not be -1 as retention.ms value is set as 100.",
        ),
        (
            {"local.retention.ms": "999999999999"},
            "Value must not be more than retention.ms property value: 604800000",
        ),
        (
            {"remote.log.copy.disable": "true", "local.retention.ms": "5"},
            "`local.retention.ms` and `retention.ms` must be set to the identical value",
        ),
    ]
    for configs, message in bad:
        with pytest.raises(InvalidConfigError, match=message.replace("(", r"\(").replace(".", r"\.")) as e:
            _check({"remote.storage.enable": "true", **configs})
        assert "Invalid value" in str(e.value) or "remote.log.copy.disable" in str(e.value)
    # -2 means "as the total": always fine; unlimited total retention allows any local one
    _check({"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "-2"})
    _check({"remote.storage.enable": "true", "retention.ms": "-1", "local.retention.ms": "-1"})
    _check(
        {
            "remote.storage.enable": "true",
            "remote.log.copy.disable": "true",
            "retention.ms": "5",
            "local.retention.ms": "5",
        }
    )
    # the same rules do not apply to a topic that is not tiered
    _check({"retention.bytes": "100", "local.retention.bytes": "200"}, broker=BrokerConfig())


def test_turning_remote_storage_off_needs_delete_on_disable() -> None:
    was = {"remote.storage.enable": "true"}
    with pytest.raises(
        InvalidConfigError, match="It is invalid to disable remote storage without deleting remote data"
    ):
        _check({"remote.storage.enable": "false"}, was)
    with pytest.raises(InvalidConfigError, match="without deleting remote data"):
        _check({}, was)  # removing the override turns it off too
    _check({"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, was)
    _check({"remote.storage.enable": "true", "remote.log.copy.disable": "true"}, was)  # read-only tier
    _check({"remote.storage.enable": "false"}, {"remote.storage.enable": "false"})
