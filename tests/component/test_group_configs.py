"""Dynamic group configs (GROUP config resources, type 32) on an in-process broker:
IncrementalAlterConfigs / AlterConfigs / DescribeConfigs, deleting an override, validation errors,
and the overrides surviving a restart on the same data dir (they live in the metadata log)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.config.group_configs import effective_group_config

GROUP = 32
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
SET, DELETE, APPEND = 0, 1, 2
NONE, INVALID_CONFIG, INVALID_REQUEST = 0, 40, 42
DEFAULT_CONFIG, GROUP_CONFIG = 5, 8


async def _start(data_dir: Path, **extra: str) -> tuple[Broker, KafkaWireClient]:
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir), **extra}
    broker = Broker(BrokerConfig.from_props(props))
    await broker.start()
    host, port = broker.listen_addresses[0]
    return broker, await KafkaWireClient.connect(host, port)


async def _alter(
    client: KafkaWireClient,
    group: str,
    *ops: tuple[str, int, str | None],
    validate_only: bool = False,
    version: int = 1,
) -> dict[str, Any]:
    body = {
        "resources": [
            {
                "resource_type": GROUP,
                "resource_name": group,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
            }
        ],
        "validate_only": validate_only,
    }
    r = await client.request(INCREMENTAL_ALTER_CONFIGS, version, body)
    return r["responses"][0]


async def _describe(
    client: KafkaWireClient, group: str, keys: list[str] | None = None, version: int = 4
) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}],
        "include_synonyms": True,
        "include_documentation": True,
    }
    r = await client.request(DESCRIBE_CONFIGS, version, body)
    return r["results"][0]


def _values(result: dict[str, Any]) -> dict[str, tuple[str | None, int]]:
    return {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}


async def test_alter_describe_delete_and_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker, client = await _start(data_dir)
    try:
        # a group nobody has configured: every group config, broker defaults, DEFAULT_CONFIG
        fresh = await _describe(client, "orders")
        assert fresh["error_code"] == NONE
        values = _values(fresh)
        assert len(values) == 14  # Kafka 4.2 group configs, KIP-1191 dead letters, Zurau redelivery delay
        assert values["share.auto.offset.reset"] == ("latest", DEFAULT_CONFIG)
        assert values["share.isolation.level"] == ("read_uncommitted", DEFAULT_CONFIG)
        assert values["share.record.lock.duration.ms"] == ("30000", DEFAULT_CONFIG)
        assert values["consumer.session.timeout.ms"] == ("45000", DEFAULT_CONFIG)
        assert not any(c["read_only"] for c in fresh["configs"])

        r = await _alter(
            client,
            "orders",
            ("share.auto.offset.reset", SET, "by_duration:PT1H"),
            ("share.isolation.level", SET, "read_committed"),
            ("share.record.lock.duration.ms", SET, "20000"),
            ("consumer.session.timeout.ms", SET, "50000"),
        )
        assert r["error_code"] == NONE, r
        assert dict(broker.image.group_config("orders")) == {
            "share.auto.offset.reset": "by_duration:PT1H",
            "share.isolation.level": "read_committed",
            "share.record.lock.duration.ms": "20000",
            "consumer.session.timeout.ms": "50000",
        }
        described = await _describe(client, "orders", ["share.isolation.level", "share.session.timeout.ms"])
        assert _values(described) == {
            "share.isolation.level": ("read_committed", GROUP_CONFIG),
            "share.session.timeout.ms": ("45000", DEFAULT_CONFIG),
        }
        iso = next(c for c in described["configs"] if c["name"] == "share.isolation.level")
        assert iso["synonyms"] == [
            {"name": "share.isolation.level", "value": "read_committed", "source": GROUP_CONFIG}
        ]
        assert iso["config_type"] == 2 and iso["documentation"]  # STRING

        # DELETE returns a config to its default
        assert (await _alter(client, "orders", ("share.record.lock.duration.ms", DELETE, None)))[
            "error_code"
        ] == NONE
        assert _values(await _describe(client, "orders"))["share.record.lock.duration.ms"] == (
            "30000",
            DEFAULT_CONFIG,
        )

        # validate_only changes nothing; errors change nothing
        before = dict(broker.image.group_config("orders"))
        assert (
            await _alter(client, "orders", ("share.auto.offset.reset", SET, "earliest"), validate_only=True)
        )["error_code"] == NONE
        errors = [
            (
                ("share.record.lock.duration.ms", SET, "100000"),
                INVALID_CONFIG,
                "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms",
            ),
            (
                ("consumer.heartbeat.interval.ms", SET, "1"),
                INVALID_CONFIG,
                "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (("share.auto.offset.reset", SET, "sometimes"), INVALID_CONFIG, "share.auto.offset.reset"),
            (("retention.ms", SET, "1"), INVALID_CONFIG, "Unknown group config name: retention.ms"),
            (
                ("share.isolation.level", APPEND, "read_committed"),
                INVALID_CONFIG,
                "because its type is not LIST",
            ),
            (("share.isolation.level", SET, None), INVALID_REQUEST, "Null value"),
        ]
        for op, code, text in errors:
            got = await _alter(client, "orders", op)
            assert got["error_code"] == code and text in got["error_message"], (op, got)
        empty = await _alter(client, "", ("share.isolation.level", SET, "read_committed"))
        assert empty["error_code"] == INVALID_REQUEST
        assert dict(broker.image.group_config("orders")) == before

        # AlterConfigs (legacy) replaces the whole set of another group's overrides
        r = await client.request(
            ALTER_CONFIGS,
            2,
            {
                "resources": [
                    {
                        "resource_type": GROUP,
                        "resource_name": "billing",
                        "configs": [{"name": "share.auto.offset.reset", "value": "earliest"}],
                    }
                ],
                "validate_only": False,
            },
        )
        assert r["responses"][0]["error_code"] == NONE, r
        assert dict(broker.image.group_config("billing")) == {"share.auto.offset.reset": "earliest"}
    finally:
        await client.close()
        await broker.stop()

    broker, client = await _start(data_dir)
    try:
        assert dict(broker.image.group_config("orders")) == {
            "share.auto.offset.reset": "by_duration:PT1H",
            "share.isolation.level": "read_committed",
            "consumer.session.timeout.ms": "50000",
        }
        values = _values(await _describe(client, "orders"))
        assert values["share.auto.offset.reset"] == ("by_duration:PT1H", GROUP_CONFIG)
        assert values["consumer.session.timeout.ms"] == ("50000", GROUP_CONFIG)
        assert _values(await _describe(client, "billing"))["share.auto.offset.reset"] == (
            "earliest",
            GROUP_CONFIG,
        )
        overrides = broker.image.group_config("orders")
        assert effective_group_config(broker.config, overrides, "share.isolation.level") == "read_committed"
        assert effective_group_config(broker.config, overrides, "share.record.lock.duration.ms") == 30_000
    finally:
        await client.close()
        await broker.stop()


async def test_broker_defaults_show_in_describe(tmp_path: Path) -> None:
    broker, client = await _start(
        tmp_path / "data",
        **{"group.share.record.lock.duration.ms": "40000", "group.consumer.heartbeat.interval.ms": "6000"},
    )
    try:
        values = _values(await _describe(client, "g"))
        assert values["share.record.lock.duration.ms"] == ("40000", DEFAULT_CONFIG)
        assert values["consumer.heartbeat.interval.ms"] == ("6000", DEFAULT_CONFIG)
    finally:
        await client.close()
        await broker.stop()
