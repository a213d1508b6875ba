"""Dynamic broker configs on an in-process broker over a real socket: IncrementalAlterConfigs and
AlterConfigs on BROKER resources, DescribeConfigs of the broker and of topics, the live logs
following the dynamic topic defaults, produce honouring a dynamic ``min.insync.replicas``, and
all of it again after a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from tests.component.test_admin_handlers import Env, _start
from zurau.app import Broker
from zurau.config import BrokerConfig

BROKER, TOPIC = 4, 2
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
SET, DELETE = 0, 1
NOT_ENOUGH_REPLICAS, INVALID_REQUEST, INVALID_CONFIG = 19, 42, 40
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
WEEK_MS = 7 * 24 * 3600 * 1000


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    data_dir = tmp_path / "data"
    broker, client = await _start(data_dir, **{"node.id": "1", "min.insync.replicas": "1"})
    e = Env(broker, client, data_dir)
    try:
        yield e
    finally:
        await e.client.close()
        await e.broker.stop()


async def _alter(env: Env, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False) -> dict[str, Any]:
    r = await env.req(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [{"resource_type": BROKER, "resource_name": name,
                           "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
            "validate_only": validate_only,
        },
    )
    return dict(r["responses"][0])


async def _describe(env: Env, rtype: int, name: str, keys: list[str] | None = None) -> dict[str, dict[str, Any]]:
    r = await env.req(
        DESCRIBE_CONFIGS,
        4,
        {"resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
         "include_synonyms": True, "include_documentation": False},
    )
    result = r["results"][0]
    assert result["error_code"] == 0, result
    return {c["name"]: c for c in result["configs"]}


def _retention(broker: Broker, topic: str) -> int:
    return broker.replica_manager.partition(topic, 0).log.config.retention_ms


async def test_cluster_default_and_per_broker_configs_apply_and_describe(env: Env) -> None:
    await env.create("plain")
    await env.create("own", configs={"retention.ms": "1234"})
    assert _retention(env.broker, "plain") == WEEK_MS

    assert (await _alter(env, "", ("log.retention.ms", SET, "60000"), validate_only=True))["error_code"] == 0
    assert _retention(env.broker, "plain") == WEEK_MS  # validate_only changed nothing
    assert (await _alter(env, "", ("log.retention.ms", SET, "60000")))["error_code"] == 0
    assert _retention(env.broker, "plain") == 60000  # a topic without an override follows
    assert _retention(env.broker, "own") == 1234

    topic = await _describe(env, TOPIC, "plain", ["retention.ms"])
    assert (topic["retention.ms"]["value"], topic["retention.ms"]["config_source"]) == ("60000", DYNAMIC_DEFAULT)
    default = await _describe(env, BROKER, "")
    assert list(default) == ["log.retention.ms"]
    assert default["log.retention.ms"]["config_source"] == DYNAMIC_DEFAULT

    assert (await _alter(env, "1", ("log.retention.ms", SET, "30000")))["error_code"] == 0
    assert _retention(env.broker, "plain") == 30000
    own = await _describe(env, BROKER, "1", ["log.retention.ms", "num.partitions", "min.insync.replicas"])
    e = own["log.retention.ms"]
    assert (e["value"], e["config_source"], e["read_only"], e["is_default"]) == ("30000", DYNAMIC_BROKER, False, False)
    assert [(s["value"], s["source"]) for s in e["synonyms"]] == [("30000", DYNAMIC_BROKER), ("60000", DYNAMIC_DEFAULT)]
    assert own["num.partitions"]["read_only"] is True
    assert (own["min.insync.replicas"]["config_source"], own["min.insync.replicas"]["read_only"]) == (STATIC, False)

    # the per-broker override goes: the cluster default is in effect again
    assert (await _alter(env, "1", ("log.retention.ms", DELETE, None)))["error_code"] == 0
    assert _retention(env.broker, "plain") == 60000
    # legacy AlterConfigs of the default level replaces its whole set
    r = await env.req(ALTER_CONFIGS, 1, {"resources": [{"resource_type": BROKER, "resource_name": "",
                                                         "configs": []}], "validate_only": False})
    assert r["responses"][0]["error_code"] == 0
    assert _retention(env.broker, "plain") == WEEK_MS


async def test_dynamic_min_insync_replicas_refuses_acks_all_and_survives_a_restart(env: Env) -> None:
    await env.create("t")
    assert (await env.produce("t", 0, [b"a"]))["error_code"] == 0
    assert (await _alter(env, "", ("min.insync.replicas", SET, "2")))["error_code"] == 0
    assert (await env.produce("t", 0, [b"b"]))["error_code"] == NOT_ENOUGH_REPLICAS
    assert (await _alter(env, "1", ("log.retention.ms", SET, "90000")))["error_code"] == 0

    # restart on the same data: the settings are replayed from the metadata log and applied
    await env.client.close()
    await env.broker.stop()
    env.broker, env.client = await _start(env.data_dir, **{"node.id": "1", "min.insync.replicas": "1"})
    assert (await env.produce("t", 0, [b"c"]))["error_code"] == NOT_ENOUGH_REPLICAS
    assert _retention(env.broker, "t") == 90000
    described = await _describe(env, BROKER, "1", ["min.insync.replicas"])
    assert (described["min.insync.replicas"]["value"], described["min.insync.replicas"]["config_source"]) == (
        "2", DYNAMIC_DEFAULT
    )
    # with eligible leader replicas on (the default), the cluster-level value may change but not go
    # (KAFKA-16540), and no broker may have a value of its own
    removed = await _alter(env, "", ("min.insync.replicas", DELETE, None))
    assert (removed["error_code"], removed["error_message"]) == (
        INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
    )
    own = await _alter(env, "1", ("min.insync.replicas", SET, "1"))
    assert (own["error_code"], own["error_message"]) == (
        INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
    )
    assert (await _alter(env, "", ("min.insync.replicas", SET, "1")))["error_code"] == 0
    assert (await env.produce("t", 0, [b"d"]))["error_code"] == 0


async def test_refusals_name_kafkas_reason(env: Env) -> None:
    r = await _alter(env, "1", ("num.partitions", SET, "3"))
    assert (r["error_code"], r["error_message"]) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions)"
    )
    r = await _alter(env, "5", ("log.retention.ms", SET, "3"))
    assert r["error_code"] == INVALID_REQUEST and "registered brokers (1)" in r["error_message"]
    r = await _alter(env, "1", ("max.connections", SET, "3"))
    assert r["error_code"] == INVALID_REQUEST and "Zurau reads them only at start-up" in r["error_message"]


def test_static_config_is_unchanged_by_dynamic_layers() -> None:
    static = BrokerConfig.from_props({"node.id": "1"})
    dyn = static.with_dynamic(dynamic_default={"log.retention.ms": "5"})
    assert static.log_retention_ms == WEEK_MS and dyn.log_retention_ms == 5
