"""Dynamic broker configs (BROKER config resources) through real admin clients: confluent-kafka
(librdkafka sends a BROKER resource to the broker it names; the empty name is the cluster
default) and kafka-python (``KafkaAdminClient.alter_configs`` / ``describe_configs``), each on its
default settings. librdkafka cannot name the cluster default (it refuses an empty BROKER
resource name) and neither can kafka-python (broker resource names must be integers), so
``zurau configs alter --entity-default`` (kafka-configs.sh's way) sets that one. A broker of its own (module scope): the changes
must not reach other tests."""

from __future__ import annotations

from collections.abc import Iterator

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
from typer.testing import CliRunner

from tests.support.cli_results import ok
from zurau.cli.main import app
from zurau.embedded import EmbeddedBroker

runner = CliRunner()

WEEK_MS = 7 * 24 * 3600 * 1000


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _log_retention(b: EmbeddedBroker, topic: str) -> int:
    return b.broker.replica_manager.partition(topic, 0).log.config.retention_ms


def test_confluent_kafka_alters_and_describes_broker_configs(broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    node = str(broker.broker.node_id)
    broker.broker.create_topic("dyn-ck", 1, 1, {})

    def alter(name: str, *entries: ConfigEntry) -> None:
        res = ConfigResource(ResourceType.BROKER, name, incremental_configs=list(entries))
        admin.incremental_alter_configs([res])[res].result(30)

    def describe(name: str) -> dict[str, ConfigEntry]:
        res = ConfigResource(ResourceType.BROKER, name)
        return admin.describe_configs([res])[res].result(30)

    def alter_default(*args: str) -> None:
        ok(runner.invoke(app, ["configs", "alter", "--entity-type", "brokers", "--entity-default", *args,
                               "--bootstrap-server", broker.bootstrap_servers]))  # fmt: skip

    try:
        alter_default("--add-config", "log.retention.ms=120000")
        alter(node, ConfigEntry("compression.type", "lz4", incremental_operation=AlterConfigOpType.SET),
              ConfigEntry("sasl.kerberos.min.time.before.relogin", "58000",
                          incremental_operation=AlterConfigOpType.SET))  # fmt: skip
        own = describe(node)
        assert own["log.retention.ms"].value == "120000"
        assert own["log.retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        assert not own["log.retention.ms"].is_read_only
        assert own["compression.type"].value == "lz4"
        assert own["compression.type"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert own["num.partitions"].is_read_only
        assert _log_retention(broker, "dyn-ck") == 120000

        res = ConfigResource(
            ResourceType.BROKER, node,
            incremental_configs=[ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)],
        )  # fmt: skip
        with pytest.raises(KafkaException) as ei:
            admin.incremental_alter_configs([res])[res].result(30)
        assert ei.value.args[0].code() == KafkaError.INVALID_REQUEST
        assert "Cannot update these configs dynamically" in ei.value.args[0].str()
    finally:
        alter_default("--delete-config", "log.retention.ms")
        alter(node, ConfigEntry("compression.type", None, incremental_operation=AlterConfigOpType.DELETE),
              ConfigEntry("sasl.kerberos.min.time.before.relogin", None,
                          incremental_operation=AlterConfigOpType.DELETE))  # fmt: skip
    assert _log_retention(broker, "dyn-ck") == WEEK_MS
    assert dict(broker.broker.image.broker_config(node)) == {}


def test_kafka_python_alters_and_describes_broker_configs(broker: EmbeddedBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    node = str(broker.broker.node_id)
    broker.broker.create_topic("dyn-kp", 1, 1, {})
    try:
        for incremental in (True, False):
            done = admin.alter_configs(
                [KpConfigResource(ConfigResourceType.BROKER, node, {"log.retention.ms": "90000"})],
                incremental=incremental,
            )
            assert "Error" not in str(done), done
            assert _log_retention(broker, "dyn-kp") == 90000
            described = admin.describe_configs([KpConfigResource(ConfigResourceType.BROKER, node)])
            entry = described["broker"][node]["log.retention.ms"]
            assert (entry["value"], entry["config_source"]) == ("90000", "DYNAMIC_BROKER_CONFIG")
            admin.alter_configs(
                [KpConfigResource(ConfigResourceType.BROKER, node, {"log.retention.ms": ("DELETE", None)})],
                incremental=True,
            )
            assert _log_retention(broker, "dyn-kp") == WEEK_MS
    finally:
        admin.close()
    assert dict(broker.broker.image.broker_config(node)) == {}
