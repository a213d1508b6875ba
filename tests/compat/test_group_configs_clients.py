"""Dynamic group configs (GROUP config resources) through real admin clients: confluent-kafka
(librdkafka maps ``ResourceType.GROUP`` to config resource type 32) and kafka-python
(``ConfigResourceType.GROUP``), each on its default settings."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker


def _group() -> str:
    return f"gcfg-{uuid.uuid4().hex[:8]}"


def test_confluent_kafka_alters_and_describes_group_configs(zurau_broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": zurau_broker.bootstrap_servers})
    group = _group()

    def alter(*entries: ConfigEntry) -> None:
        res = ConfigResource(ResourceType.GROUP, group, incremental_configs=list(entries))
        admin.incremental_alter_configs([res])[res].result(30)

    def describe() -> dict[str, ConfigEntry]:
        res = ConfigResource(ResourceType.GROUP, group)
        return admin.describe_configs([res])[res].result(30)

    fresh = describe()
    assert fresh["share.auto.offset.reset"].value == "latest"
    assert fresh["share.auto.offset.reset"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not fresh["share.auto.offset.reset"].is_read_only

    alter(
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.record.lock.duration.ms", "20000", incremental_operation=AlterConfigOpType.SET),
    )
    configs = describe()
    assert configs["share.auto.offset.reset"].value == "earliest"
    assert configs["share.auto.offset.reset"].source == ConfigSource.GROUP_CONFIG.value
    assert configs["share.record.lock.duration.ms"].value == "20000"
    assert configs["share.isolation.level"].value == "read_uncommitted"

    alter(ConfigEntry("share.record.lock.duration.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    configs = describe()
    assert configs["share.record.lock.duration.ms"].value == "30000"
    assert configs["share.record.lock.duration.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    for bad in ("no.such.config", "share.isolation.level"):
        res = ConfigResource(
            ResourceType.GROUP, group,
            incremental_configs=[ConfigEntry(bad, "serializable", incremental_operation=AlterConfigOpType.SET)],
        )  # fmt: skip
        with pytest.raises(KafkaException) as ei:
            admin.incremental_alter_configs([res])[res].result(30)
        assert ei.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert dict(zurau_broker.broker.image.group_config(group)) == {"share.auto.offset.reset": "earliest"}


def test_kafka_python_alters_and_describes_group_configs(zurau_broker: EmbeddedBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=zurau_broker.bootstrap_servers)
    group = _group()
    try:
        done = admin.alter_configs(
            [KpConfigResource(ConfigResourceType.GROUP, group, {"share.isolation.level": "read_committed"})]
        )
        assert done == {"group": {group: "OK"}}
        modified = admin.describe_configs([KpConfigResource(ConfigResourceType.GROUP, group)])
        entry = modified["group"][group]["share.isolation.level"]
        assert (entry["value"], entry["config_source"]) == ("read_committed", "DYNAMIC_GROUP_CONFIG")
        every = admin.describe_configs(
            [KpConfigResource(ConfigResourceType.GROUP, group)], config_filter="all"
        )
        assert every["group"][group]["consumer.session.timeout.ms"]["config_source"] == "DEFAULT_CONFIG"
        refused = admin.alter_configs(
            [KpConfigResource(ConfigResourceType.GROUP, group, {"share.record.lock.duration.ms": "999999"})]
        )
        assert "InvalidConfigurationError" in str(refused["group"][group])
        admin.alter_configs(
            [KpConfigResource(ConfigResourceType.GROUP, group, {"share.isolation.level": ("DELETE", None)})]
        )
        assert dict(zurau_broker.broker.image.group_config(group)) == {}
    finally:
        admin.close()
