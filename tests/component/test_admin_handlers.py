"""Admin APIs through a real socket: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster, DescribeLogDirs, plus a
produce -> fetch round trip.

Each test starts a broker in-process on an ephemeral port with a temp data dir and talks to it
with :class:`tests.component.kafka_wire.KafkaWireClient`, at a non-flexible and a flexible version
of each API.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch

ZERO = uuid.UUID(int=0)
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8

# error codes
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC = 17
TOPIC_AUTHORIZATION_FAILED = 29
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
TOPIC_DELETION_DISABLED = 73
UNKNOWN_TOPIC_ID = 100
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115

CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, CREATE_PARTITIONS = 19, 20, 21, 37
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
DESCRIBE_CLUSTER, DESCRIBE_LOG_DIRS = 60, 35
PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS = 0, 1, 2, 3, 18


class Env:
    def __init__(self, broker: Broker, client: KafkaWireClient, data_dir: Path) -> None:
        self.broker = broker
        self.client = client
        self.data_dir = data_dir

    async def req(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        return await self.client.request(api_key, version, body)

    async def create(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None, version: int = 4
    ) -> dict[str, Any]:
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": 5000,
            "validate_only": False,
        }
        r = await self.req(CREATE_TOPICS, version, body)
        assert r["topics"][0]["error_code"] == NONE, r
        return r["topics"][0]

    async def produce(
        self, topic: str, partition: int, values: list[bytes], version: int = 7
    ) -> dict[str, Any]:
        batch = build_batch([NewRecord(None, v) for v in values])
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        }
        r = await self.req(PRODUCE, version, body)
        return r["responses"][0]["partition_responses"][0]


def _props(data_dir: Path, **extra: str) -> dict[str, str]:
    return {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir), **extra}


async def _start(data_dir: Path, **extra: str) -> tuple[Broker, KafkaWireClient]:
    broker = Broker(BrokerConfig.from_props(_props(data_dir, **extra)))
    await broker.start()
    host, port = broker.listen_addresses[0]
    client = await KafkaWireClient.connect(host, port)
    return broker, client


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    data_dir = tmp_path / "data"
    broker, client = await _start(data_dir)
    try:
        yield Env(broker, client, data_dir)
    finally:
        await client.close()
        await broker.stop()


def new_topic(
    name: str, partitions: int = 1, rf: int = 1, assignments: Any = (), configs: Any = ()
) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": list(assignments),
        "configs": [{"name": k, "value": v} for k, v in dict(configs).items()],
    }


def by_name(items: list[dict[str, Any]], key: str = "name") -> dict[Any, dict[str, Any]]:
    return {i[key]: i for i in items}


# ============================================================================ CreateTopics


@pytest.mark.parametrize("version", [2, 4, 5, 7])
async def test_create_topics_happy_path(env: Env, version: int) -> None:
    node = env.broker.node_id
    body = {
        "topics": [
            new_topic("orders", 3, 1, configs={"retention.ms": "1000", "cleanup.policy": "compact"}),
            new_topic("defaults", -1, -1) if version >= 4 else new_topic("defaults", 1, 1),
            new_topic(
                "manual",
                -1,
                -1,
                assignments=[
                    {"partition_index": 1, "broker_ids": [node]},
                    {"partition_index": 0, "broker_ids": [node]},
                ],
            ),
        ],
        "timeout_ms": 5000,
        "validate_only": False,
    }
    r = await env.req(CREATE_TOPICS, version, body)
    res = by_name(r["topics"])
    assert {n: t["error_code"] for n, t in res.items()} == {"orders": 0, "defaults": 0, "manual": 0}
    assert env.broker.image.get("orders").num_partitions == 3
    assert env.broker.image.get("orders").configs == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert env.broker.image.get("defaults").num_partitions == env.broker.config.get("num.partitions")
    assert env.broker.image.get("manual").num_partitions == 2
    assert env.broker.replica_manager.partition("orders", 2).log.config.retention_ms == 1000
    assert (env.data_dir / "orders-2").is_dir()
    if version >= 5:
        o = res["orders"]
        assert (o["num_partitions"], o["replication_factor"]) == (3, 1)
        cfgs = by_name(o["configs"])
        assert cfgs["retention.ms"]["value"] == "1000" and cfgs["retention.ms"]["config_source"] == 1
        assert cfgs["cleanup.policy"]["value"] == "compact"
        assert cfgs["segment.bytes"]["config_source"] in (4, 5)  # static broker config or default
        assert res["manual"]["num_partitions"] == 2
    else:
        assert res["orders"]["num_partitions"] == -1  # not on the wire below v5
    if version >= 7:
        assert res["orders"]["topic_id"] == env.broker.image.get("orders").topic_id != ZERO
    # the new topics are visible in Metadata
    md = await env.req(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert {"orders", "defaults", "manual"} <= {t["name"] for t in md["topics"]}


@pytest.mark.parametrize("version", [4, 7])
async def test_create_topics_errors(env: Env, version: int) -> None:
    await env.create("exists")
    node = env.broker.node_id
    topics = [
        new_topic("exists"),
        new_topic("bad name!"),
        new_topic("dup"),
        new_topic("dup"),
        new_topic("rf3", 1, 3),
        new_topic("zero", 0, 1),
        new_topic("negrf", 1, -2),
        new_topic("badval", configs={"retention.ms": "abc"}),
        new_topic("unknowncfg", configs={"no.such.config": "1"}),
        new_topic("nullcfg", configs={"retention.ms": None}),
        new_topic("segtiny", configs={"segment.bytes": "1"}),
        new_topic("otherbroker", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [node + 7]}]),
        new_topic(
            "gap",
            -1,
            -1,
            assignments=[
                {"partition_index": 0, "broker_ids": [node]},
                {"partition_index": 2, "broker_ids": [node]},
            ],
        ),
        new_topic(
            "twice",
            -1,
            -1,
            assignments=[
                {"partition_index": 0, "broker_ids": [node]},
                {"partition_index": 0, "broker_ids": [node]},
            ],
        ),
        new_topic("duprep", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [node, node]}]),
        new_topic("emptyrep", -1, -1, assignments=[{"partition_index": 0, "broker_ids": []}]),
        new_topic("rfset", 1, 1, assignments=[{"partition_index": 0, "broker_ids": [node]}]),
        new_topic("__cluster_metadata"),
    ]
    r = await env.req(CREATE_TOPICS, version, {"topics": topics, "timeout_ms": 1000, "validate_only": False})
    assert len(r["topics"]) == len(topics) - 1  # one result for the duplicated name
    codes = {t["name"]: t["error_code"] for t in r["topics"]}
    assert codes == {
        "exists": TOPIC_ALREADY_EXISTS,
        "bad name!": INVALID_TOPIC,
        "dup": INVALID_REQUEST,
        "rf3": INVALID_REPLICATION_FACTOR,
        "zero": INVALID_PARTITIONS,
        "negrf": INVALID_REPLICATION_FACTOR,
        "badval": INVALID_CONFIG,
        "unknowncfg": INVALID_CONFIG,
        "nullcfg": INVALID_CONFIG,
        "segtiny": INVALID_CONFIG,
        "otherbroker": INVALID_REPLICA_ASSIGNMENT,
        "gap": INVALID_REPLICA_ASSIGNMENT,
        "twice": INVALID_REPLICA_ASSIGNMENT,
        "duprep": INVALID_REPLICA_ASSIGNMENT,
        "emptyrep": INVALID_REPLICA_ASSIGNMENT,
        "rfset": INVALID_REQUEST,
        "__cluster_metadata": TOPIC_AUTHORIZATION_FAILED,
    }
    msgs = {t["name"]: t["error_message"] for t in r["topics"]}
    assert msgs["dup"] == "Duplicate topic name."
    assert "already exists" in msgs["exists"]
    assert "retention.ms" in msgs["badval"] and "no.such.config" in msgs["unknowncfg"]
    assert "no such broker" in msgs["otherbroker"]
    for t in r["topics"]:
        assert t["num_partitions"] == -1 and t["replication_factor"] == -1
        if version >= 7:
            assert t["topic_id"] == ZERO
    assert env.broker.image.names() == ["exists"]


@pytest.mark.parametrize("version", [3, 5])
async def test_create_topics_validate_only(env: Env, version: int) -> None:
    body = {
        "topics": [new_topic("vo", 4, configs={"retention.ms": "60000"})],
        "timeout_ms": 1000,
        "validate_only": True,
    }
    r = await env.req(CREATE_TOPICS, version, body)
    assert r["topics"][0]["error_code"] == NONE
    if version >= 5:
        assert r["topics"][0]["num_partitions"] == 4
        assert by_name(r["topics"][0]["configs"])["retention.ms"]["value"] == "60000"
    assert env.broker.image.get("vo") is None
    assert not (env.data_dir / "vo-0").exists()
    # validate_only still reports errors
    body["topics"] = [new_topic("vo", 4, configs={"retention.ms": "x"})]
    r = await env.req(CREATE_TOPICS, version, body)
    assert r["topics"][0]["error_code"] == INVALID_CONFIG


# ============================================================================ DeleteTopics


@pytest.mark.parametrize("version", [1, 3, 4, 5])
async def test_delete_topics_by_name(env: Env, version: int) -> None:
    await env.create("a", 2)
    await env.create("b")
    r = await env.req(DELETE_TOPICS, version, {"topic_names": ["a", "missing", "b", "b"], "timeout_ms": 1000})
    res = by_name(r["responses"])
    assert res["a"]["error_code"] == NONE
    assert res["missing"]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
    assert res["b"]["error_code"] == INVALID_REQUEST  # given twice: not deleted
    assert len(r["responses"]) == 3
    if version >= 5:
        assert res["b"]["error_message"] == "Duplicate topic name."
    assert env.broker.image.get("a") is None and env.broker.image.get("b") is not None
    assert env.broker.replica_manager.get("a", 0) is None
    assert not (env.data_dir / "a-0").exists() and not (env.data_dir / "a-1").exists()


async def test_delete_topics_v6_by_id_and_name(env: Env) -> None:
    a = await env.create("a", version=7)
    b = await env.create("b", version=7)
    c = await env.create("c", version=7)
    unknown = uuid.uuid4()
    topics = [
        {"name": None, "topic_id": a["topic_id"]},
        {"name": "b", "topic_id": ZERO},
        {"name": None, "topic_id": unknown},
        {"name": None, "topic_id": ZERO},
        {"name": "c", "topic_id": c["topic_id"]},
        {"name": "nope", "topic_id": ZERO},
    ]
    r = await env.req(DELETE_TOPICS, 6, {"topics": topics, "timeout_ms": 1000})
    out = r["responses"]
    assert len(out) == 6
    got = {(x["name"], x["topic_id"]): (x["error_code"], x["error_message"]) for x in out}
    assert got[("a", a["topic_id"])][0] == NONE
    assert got[("b", b["topic_id"])][0] == NONE
    assert got[(None, unknown)][0] == UNKNOWN_TOPIC_ID
    assert got[(None, ZERO)] == (INVALID_REQUEST, "Neither topic name nor id were specified.")
    assert got[("c", c["topic_id"])][0] == INVALID_REQUEST  # both name and id
    assert got[("nope", ZERO)][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert env.broker.image.names() == ["c"]


@pytest.mark.parametrize("version", [1, 3, 4, 6])
async def test_delete_topics_disabled(tmp_path: Path, version: int) -> None:
    broker, client = await _start(tmp_path / "d", **{"delete.topic.enable": "false"})
    try:
        env = Env(broker, client, tmp_path / "d")
        t = await env.create("keep", version=7)
        if version >= 6:
            body = {"topics": [{"name": "keep", "topic_id": ZERO}], "timeout_ms": 1000}
        else:
            body = {"topic_names": ["keep"], "timeout_ms": 1000}
        r = await env.req(DELETE_TOPICS, version, body)
        expected = TOPIC_DELETION_DISABLED if version >= 3 else INVALID_REQUEST
        assert [x["error_code"] for x in r["responses"]] == [expected]
        assert broker.image.get("keep").topic_id == t["topic_id"]
    finally:
        await client.close()
        await broker.stop()


# ============================================================================ CreatePartitions


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_create_partitions(env: Env, version: int) -> None:
    node = env.broker.node_id
    for name in ("grow", "same", "less", "manual", "wrongcount", "otherbroker", "vo", "dup"):
        await env.create(name, 2)
    topics = [
        {"name": "grow", "count": 4, "assignments": None},
        {"name": "same", "count": 2, "assignments": None},
        {"name": "less", "count": 1, "assignments": None},
        {"name": "missing", "count": 3, "assignments": None},
        {"name": "manual", "count": 3, "assignments": [{"broker_ids": [node]}]},
        {"name": "wrongcount", "count": 4, "assignments": [{"broker_ids": [node]}]},
        {"name": "otherbroker", "count": 3, "assignments": [{"broker_ids": [node + 1]}]},
        {"name": "dup", "count": 3, "assignments": None},
        {"name": "dup", "count": 4, "assignments": None},
    ]
    r = await env.req(
        CREATE_PARTITIONS, version, {"topics": topics, "timeout_ms": 1000, "validate_only": False}
    )
    res = by_name(r["results"])
    assert len(r["results"]) == 8
    assert {n: x["error_code"] for n, x in res.items()} == {
        "grow": NONE,
        "same": INVALID_PARTITIONS,
        "less": INVALID_PARTITIONS,
        "missing": UNKNOWN_TOPIC_OR_PARTITION,
        "manual": NONE,
        "wrongcount": INVALID_REPLICA_ASSIGNMENT,
        "otherbroker": INVALID_REPLICA_ASSIGNMENT,
        "dup": INVALID_REQUEST,
    }
    assert (
        res["less"]["error_message"]
        == "The topic less currently has 2 partition(s); 1 would not be an increase."
    )
    assert res["same"]["error_message"] == "Topic already has 2 partition(s)."
    assert env.broker.image.get("grow").num_partitions == 4
    assert env.broker.replica_manager.partition("grow", 3) is not None
    assert (env.data_dir / "grow-3").is_dir()
    assert env.broker.image.get("manual").num_partitions == 3
    assert env.broker.image.get("dup").num_partitions == 2
    # validate_only: checked, not applied
    r = await env.req(
        CREATE_PARTITIONS,
        version,
        {
            "topics": [
                {"name": "vo", "count": 5, "assignments": None},
                {"name": "vo2", "count": 5, "assignments": None},
            ],
            "timeout_ms": 1000,
            "validate_only": True,
        },
    )
    assert [x["error_code"] for x in r["results"]] == [NONE, UNKNOWN_TOPIC_OR_PARTITION]
    assert env.broker.image.get("vo").num_partitions == 2


# ============================================================================ DeleteRecords


@pytest.mark.parametrize(("version", "produce_version"), [(0, 7), (1, 8), (2, 9)])
async def test_delete_records(env: Env, version: int, produce_version: int) -> None:
    await env.create("dr", 2)
    await env.create("compacted", configs={"cleanup.policy": "compact"})
    for i in range(2):
        p = await env.produce("dr", 0, [b"v%d" % j for j in range(5)], version=produce_version)
        assert p["error_code"] == NONE and p["base_offset"] == 5 * i
    await env.produce("compacted", 0, [b"x"], version=produce_version)
    body = {
        "topics": [
            {
                "name": "dr",
                "partitions": [
                    {"partition_index": 0, "offset": 3},
                    {"partition_index": 1, "offset": 1},
                    {"partition_index": 7, "offset": 0},
                ],
            },
            {"name": "compacted", "partitions": [{"partition_index": 0, "offset": 1}]},
            {"name": "missing", "partitions": [{"partition_index": 0, "offset": 1}]},
        ],
        "timeout_ms": 1000,
    }
    r = await env.req(DELETE_RECORDS, version, body)
    res = {
        (t["name"], p["partition_index"]): (p["error_code"], p["low_watermark"])
        for t in r["topics"]
        for p in t["partitions"]
    }
    assert res == {
        ("dr", 0): (NONE, 3),
        ("dr", 1): (OFFSET_OUT_OF_RANGE, -1),  # partition 1 is empty: HW 0
        ("dr", 7): (UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("compacted", 0): (POLICY_VIOLATION, -1),
        ("missing", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1),
    }
    assert env.broker.replica_manager.partition("dr", 0).log.log_start_offset == 3

    async def delete(offset: int) -> tuple[int, int]:
        rr = await env.req(
            DELETE_RECORDS,
            version,
            {
                "topics": [{"name": "dr", "partitions": [{"partition_index": 0, "offset": offset}]}],
                "timeout_ms": 1000,
            },
        )
        p = rr["topics"][0]["partitions"][0]
        return p["error_code"], p["low_watermark"]

    assert await delete(2) == (NONE, 3)  # below the log start offset: no change
    assert await delete(11) == (OFFSET_OUT_OF_RANGE, -1)
    assert await delete(-5) == (OFFSET_OUT_OF_RANGE, -1)
    assert await delete(-1) == (NONE, 10)  # -1 = high watermark
    lo = await env.req(
        LIST_OFFSETS,
        5,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": "dr",
                    "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}],
                }
            ],
        },
    )
    assert lo["topics"][0]["partitions"][0]["offset"] == 10


# ============================================================================ DescribeConfigs


@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_describe_configs_topic(env: Env, version: int) -> None:
    await env.create("dc", configs={"retention.ms": "12345"})
    body = {
        "resources": [
            {"resource_type": TOPIC, "resource_name": "dc", "configuration_keys": None},
            {
                "resource_type": TOPIC,
                "resource_name": "dc",
                "configuration_keys": ["retention.ms", "cleanup.policy", "bogus"],
            },
            {"resource_type": TOPIC, "resource_name": "missing", "configuration_keys": None},
            {"resource_type": TOPIC, "resource_name": "bad name!", "configuration_keys": None},
        ],
        "include_synonyms": True,
        "include_documentation": True,
    }
    r = await env.req(DESCRIBE_CONFIGS, version, body)
    full, some, missing, bad = r["results"]
    assert (full["error_code"], full["resource_type"], full["resource_name"]) == (NONE, TOPIC, "dc")
    cfgs = by_name(full["configs"])
    assert len(cfgs) > 20 and "segment.bytes" in cfgs and "min.insync.replicas" in cfgs
    ret = cfgs["retention.ms"]
    assert ret["value"] == "12345" and ret["config_source"] == 1 and not ret["read_only"]
    assert ret["synonyms"][0] == {"name": "retention.ms", "value": "12345", "source": 1}
    assert any(s["name"].startswith("log.retention") for s in ret["synonyms"])
    assert cfgs["cleanup.policy"]["value"] == "delete" and cfgs["cleanup.policy"]["config_source"] != 1
    if version >= 3:
        assert ret["config_type"] == 5  # LONG
        assert ret["documentation"]
    assert sorted(c["name"] for c in some["configs"]) == ["cleanup.policy", "retention.ms"]
    assert (missing["error_code"], missing["configs"]) == (UNKNOWN_TOPIC_OR_PARTITION, [])
    assert bad["error_code"] == INVALID_TOPIC
    # without synonyms or documentation
    body["include_synonyms"] = False
    body["include_documentation"] = False
    r = await env.req(DESCRIBE_CONFIGS, version, body)
    ret = by_name(r["results"][0]["configs"])["retention.ms"]
    assert ret["synonyms"] == [] and ret["documentation"] is None


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_configs_broker_and_loggers(env: Env, version: int) -> None:
    node = str(env.broker.node_id)
    logging.getLogger("zurau.broker")  # make sure it exists
    body = {
        "resources": [
            {"resource_type": BROKER, "resource_name": node, "configuration_keys": None},
            {
                "resource_type": BROKER,
                "resource_name": node,
                "configuration_keys": ["log.dirs", "num.partitions"],
            },
            {"resource_type": BROKER, "resource_name": "", "configuration_keys": None},
            {"resource_type": BROKER, "resource_name": "99", "configuration_keys": None},
            {"resource_type": BROKER_LOGGER, "resource_name": node, "configuration_keys": None},
            {"resource_type": BROKER_LOGGER, "resource_name": "99", "configuration_keys": None},
            {"resource_type": 32, "resource_name": "", "configuration_keys": None},
            {"resource_type": 77, "resource_name": "x", "configuration_keys": None},
        ],
        "include_synonyms": True,
    }
    r = await env.req(DESCRIBE_CONFIGS, version, body)
    full, some, default, other, loggers, other_loggers, group, unknown = r["results"]
    assert full["error_code"] == NONE
    cfgs = by_name(full["configs"])
    assert cfgs["log.dirs"]["value"] == str(env.data_dir) and cfgs["log.dirs"]["config_source"] == 4
    assert cfgs["log.dirs"]["read_only"]
    assert cfgs["num.partitions"]["config_source"] == 5
    sensitive = [c for c in full["configs"] if c["is_sensitive"]]
    assert sensitive and all(c["value"] is None for c in sensitive)
    assert sorted(c["name"] for c in some["configs"]) == ["log.dirs", "num.partitions"]
    assert (default["error_code"], default["configs"]) == (NONE, [])
    assert other["error_code"] == INVALID_REQUEST and "Unexpected broker id" in other["error_message"]
    assert loggers["error_code"] == NONE
    levels = {c["name"]: c["value"] for c in loggers["configs"]}
    assert "root" in levels and "zurau.broker" in levels
    assert set(levels.values()) <= {"FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"}
    assert other_loggers["error_code"] == INVALID_REQUEST
    assert group["error_code"] == INVALID_REQUEST and "Group name must not be empty" in group["error_message"]
    assert unknown["error_code"] == INVALID_REQUEST


# ============================================================================ AlterConfigs


def _describe_body(name: str) -> dict[str, Any]:
    return {
        "resources": [{"resource_type": TOPIC, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False,
    }


async def _topic_configs(env: Env, name: str) -> dict[str, tuple[str | None, int]]:
    r = await env.req(DESCRIBE_CONFIGS, 4, _describe_body(name))
    return {c["name"]: (c["value"], c["config_source"]) for c in r["results"][0]["configs"]}


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_alter_configs(env: Env, version: int) -> None:
    await env.create("ac", 2, configs={"retention.ms": "1000"})

    def res(rtype: int, name: str, **configs: str | None) -> dict[str, Any]:
        return {
            "resource_type": rtype,
            "resource_name": name,
            "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
        }

    r = await env.req(
        ALTER_CONFIGS,
        version,
        {
            "resources": [res(TOPIC, "ac", segment_bytes="1048576", max_message_bytes="2000")],
            "validate_only": False,
        },
    )
    assert r["responses"] == [
        {"error_code": NONE, "error_message": None, "resource_type": TOPIC, "resource_name": "ac"}
    ]
    # the whole set is replaced: retention.ms is back to its default
    assert env.broker.image.get("ac").configs == {"segment.bytes": "1048576", "max.message.bytes": "2000"}
    cfgs = await _topic_configs(env, "ac")
    assert cfgs["max.message.bytes"] == ("2000", 1) and cfgs["retention.ms"][1] != 1
    for i in range(2):  # applied to the live logs
        log_cfg = env.broker.replica_manager.partition("ac", i).log.config
        assert log_cfg.max_message_bytes == 2000 and log_cfg.segment_bytes == 1048576
        assert log_cfg.retention_ms == 7 * 24 * 3600 * 1000

    resources = [
        res(TOPIC, "ac", retention_ms="abc"),
        res(TOPIC, "missing", retention_ms="1"),
        res(TOPIC, "", retention_ms="1"),
        res(TOPIC, "bad name!", retention_ms="1"),
        res(BROKER, str(env.broker.node_id), num_partitions="3"),
        res(BROKER, "", num_partitions="3"),
        res(BROKER_LOGGER, str(env.broker.node_id), root="INFO"),
        res(99, "x"),
    ]
    r = await env.req(ALTER_CONFIGS, version, {"resources": resources, "validate_only": False})
    codes = [x["error_code"] for x in r["responses"]]
    assert codes == [
        INVALID_CONFIG,
        UNKNOWN_TOPIC_OR_PARTITION,
        INVALID_REQUEST,
        INVALID_TOPIC,
        INVALID_REQUEST,
        INVALID_REQUEST,
        INVALID_REQUEST,
        UNSUPPORTED_VERSION,
    ]
    assert (
        "abc" in r["responses"][0]["error_message"] and "retention.ms" in r["responses"][0]["error_message"]
    )
    assert r["responses"][4]["error_message"] == "Cannot update these configs dynamically: Set(num.partitions)"
    # duplicates and validate_only leave the topic alone
    r = await env.req(
        ALTER_CONFIGS,
        version,
        {
            "resources": [res(TOPIC, "ac", retention_ms="5"), res(TOPIC, "ac", retention_ms="6")],
            "validate_only": False,
        },
    )
    assert [(x["error_code"], x["error_message"]) for x in r["responses"]] == [
        (INVALID_REQUEST, "Duplicate resource.")
    ]
    r = await env.req(
        ALTER_CONFIGS, version, {"resources": [res(TOPIC, "ac", retention_ms="5")], "validate_only": True}
    )
    assert r["responses"][0]["error_code"] == NONE
    assert env.broker.image.get("ac").configs == {"segment.bytes": "1048576", "max.message.bytes": "2000"}


async def test_alter_configs_survive_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker, client = await _start(data_dir)
    try:
        env = Env(broker, client, data_dir)
        await env.create("persist")
        r = await env.req(
            INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": "persist",
                        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "4242"}],
                    }
                ],
                "validate_only": False,
            },
        )
        assert r["responses"][0]["error_code"] == NONE
    finally:
        await client.close()
        await broker.stop()
    broker, client = await _start(data_dir)
    try:
        env = Env(broker, client, data_dir)
        assert (await _topic_configs(env, "persist"))["retention.ms"] == ("4242", 1)
        assert broker.image.get("persist").configs == {"retention.ms": "4242"}
    finally:
        await client.close()
        await broker.stop()


async def test_topic_configs_apply_to_logs_after_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker, client = await _start(data_dir)
    try:
        await Env(broker, client, data_dir).create("persist", configs={"retention.ms": "4242"})
    finally:
        await client.close()
        await broker.stop()
    broker, client = await _start(data_dir)
    try:
        assert broker.replica_manager.partition("persist", 0).log.config.retention_ms == 4242
    finally:
        await client.close()
        await broker.stop()


# ============================================================================ IncrementalAlterConfigs

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _inc(rtype: int, name: str, *ops: tuple[str, int, str | None]) -> dict[str, Any]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
    }


@pytest.mark.parametrize("version", [0, 1])
async def test_incremental_alter_configs_topic(env: Env, version: int) -> None:
    await env.create("iac", configs={"retention.ms": "1000", "flush.ms": "50"})

    async def alter(*ops: tuple[str, int, str | None], validate_only: bool = False) -> dict[str, Any]:
        r = await env.req(
            INCREMENTAL_ALTER_CONFIGS,
            version,
            {"resources": [_inc(TOPIC, "iac", *ops)], "validate_only": validate_only},
        )
        return r["responses"][0]

    assert (await alter(("segment.ms", SET, "60000"), ("flush.ms", DELETE, None)))["error_code"] == NONE
    assert env.broker.image.get("iac").configs == {"retention.ms": "1000", "segment.ms": "60000"}
    assert env.broker.replica_manager.partition("iac", 0).log.config.segment_ms == 60000
    assert (await alter(("cleanup.policy", APPEND, "compact")))[
        "error_code"
    ] == NONE  # default "delete" + compact
    assert env.broker.image.get("iac").configs["cleanup.policy"] == "delete,compact"
    assert (await alter(("cleanup.policy", APPEND, "compact")))["error_code"] == NONE  # already there
    assert env.broker.image.get("iac").configs["cleanup.policy"] == "delete,compact"
    assert (await alter(("cleanup.policy", SUBTRACT, "delete")))["error_code"] == NONE
    assert env.broker.image.get("iac").configs["cleanup.policy"] == "compact"
    assert env.broker.replica_manager.partition("iac", 0).log.config.cleanup_policy == "compact"
    assert (await alter(("no.such", DELETE, None)))[
        "error_code"
    ] == NONE  # deleting an unset config is a no-op

    before = dict(env.broker.image.get("iac").configs)
    errors = [
        ((("retention.ms", APPEND, "5"),), INVALID_CONFIG, "not LIST"),
        ((("retention.ms", SET, "abc"),), INVALID_CONFIG, "retention.ms"),
        ((("nope.nope", SET, "1"),), INVALID_CONFIG, "nope.nope"),
        ((("retention.ms", SET, None),), INVALID_REQUEST, "Null value"),
        (
            (("retention.ms", SET, "1"), ("retention.ms", DELETE, None)),
            INVALID_REQUEST,
            "duplicate config keys",
        ),
        ((("retention.ms", 9, "1"),), INVALID_REQUEST, "operation"),
        (
            (("cleanup.policy", SUBTRACT, "compact"),),
            INVALID_CONFIG,
            "cleanup.policy",
        ),  # leaves an empty list
    ]
    for ops, code, text in errors:
        got = await alter(*ops)
        assert got["error_code"] == code, (ops, got)
        assert text in got["error_message"], (ops, got)
    assert (await alter(("retention.ms", SET, "77"), validate_only=True))["error_code"] == NONE
    assert env.broker.image.get("iac").configs == before

    r = await env.req(
        INCREMENTAL_ALTER_CONFIGS,
        version,
        {
            "resources": [
                _inc(TOPIC, "missing", ("retention.ms", SET, "1")),
                _inc(BROKER, str(env.broker.node_id), ("num.partitions", SET, "3")),
                _inc(BROKER, "42", ("num.partitions", SET, "3")),
                _inc(TOPIC, "iac", ("retention.ms", SET, "1")),
                _inc(TOPIC, "iac", ("retention.ms", SET, "2")),
                _inc(16, "metrics", ("interval.ms", SET, "1")),
                _inc(99, "x"),
            ],
            "validate_only": False,
        },
    )
    codes = [x["error_code"] for x in r["responses"]]
    assert codes == [
        UNKNOWN_TOPIC_OR_PARTITION,
        INVALID_REQUEST,
        INVALID_REQUEST,
        INVALID_REQUEST,
        INVALID_REQUEST,
        UNSUPPORTED_VERSION,
    ]
    assert env.broker.image.get("iac").configs == before


@pytest.mark.parametrize("version", [0, 1])
async def test_incremental_alter_configs_loggers(env: Env, version: int) -> None:
    node = str(env.broker.node_id)
    logger = logging.getLogger("zurau.broker")
    saved = logger.level
    try:

        async def alter(*ops: tuple[str, int, str | None], name: str = node) -> dict[str, Any]:
            r = await env.req(
                INCREMENTAL_ALTER_CONFIGS,
                version,
                {"resources": [_inc(BROKER_LOGGER, name, *ops)], "validate_only": False},
            )
            return r["responses"][0]

        assert (await alter(("zurau.broker", SET, "DEBUG")))["error_code"] == NONE
        assert logger.level == logging.DEBUG
        r = await env.req(
            DESCRIBE_CONFIGS,
            4,
            {
                "resources": [
                    {
                        "resource_type": BROKER_LOGGER,
                        "resource_name": node,
                        "configuration_keys": ["zurau.broker"],
                    }
                ]
            },
        )
        assert [(c["name"], c["value"]) for c in r["results"][0]["configs"]] == [("zurau.broker", "DEBUG")]
        assert (await alter(("zurau.broker", DELETE, None)))["error_code"] == NONE
        assert logger.level == logging.NOTSET
        assert (await alter(("zurau.broker", SET, "LOUD")))["error_code"] == INVALID_CONFIG
        assert (await alter(("no.such.logger", SET, "INFO")))["error_code"] == INVALID_CONFIG
        assert (await alter(("root", DELETE, None)))["error_code"] == INVALID_REQUEST
        assert (await alter(("zurau.broker", APPEND, "INFO")))["error_code"] == INVALID_REQUEST
        assert (await alter(("zurau.broker", SET, "INFO"), name="99"))["error_code"] == INVALID_REQUEST
        assert logger.level == logging.NOTSET
    finally:
        logger.setLevel(saved)


# ============================================================================ DescribeCluster


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_describe_cluster(env: Env, version: int) -> None:
    host, port = env.broker.advertised
    r = await env.req(DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": False})
    assert r["error_code"] == NONE
    assert r["cluster_id"] == env.broker.image.cluster_id and len(r["cluster_id"]) == 22
    assert r["controller_id"] == env.broker.node_id
    assert [(b["broker_id"], b["host"], b["port"]) for b in r["brokers"]] == [
        (env.broker.node_id, host, port)
    ]
    assert r["cluster_authorized_operations"] == -(2**31)
    if version >= 1:
        assert r["endpoint_type"] == 1
    r = await env.req(DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": True})
    ops = r["cluster_authorized_operations"]
    assert ops > 0 and ops & (1 << 8) and ops & (1 << 11)  # DESCRIBE, ALTER_CONFIGS
    if version >= 1:
        r = await env.req(DESCRIBE_CLUSTER, version, {"endpoint_type": 2})
        assert r["error_code"] == MISMATCHED_ENDPOINT_TYPE and r["brokers"] == []
        r = await env.req(DESCRIBE_CLUSTER, version, {"endpoint_type": 9})
        assert r["error_code"] == UNSUPPORTED_ENDPOINT_TYPE and "9" in r["error_message"]


# ============================================================================ DescribeLogDirs


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
async def test_describe_log_dirs(env: Env, version: int) -> None:
    await env.create("ld", 2)
    await env.create("other")
    await env.produce("ld", 1, [b"x" * 100] * 3)
    r = await env.req(DESCRIBE_LOG_DIRS, version, {"topics": None})
    assert r["error_code"] == NONE
    [d] = r["results"]
    assert d["error_code"] == NONE and Path(d["log_dir"]) == env.data_dir.absolute()
    parts = {(t["name"], p["partition_index"]): p for t in d["topics"] for p in t["partitions"]}
    assert set(parts) == {("ld", 0), ("ld", 1), ("other", 0)}
    assert parts[("ld", 1)]["partition_size"] > 300 and parts[("ld", 0)]["partition_size"] == 0
    assert (
        parts[("ld", 1)]["partition_size"] == env.broker.replica_manager.partition("ld", 1).log.size_in_bytes
    )
    assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in parts.values())
    if version >= 4:
        assert d["total_bytes"] > 0 and 0 <= d["usable_bytes"] <= d["total_bytes"]
    else:
        assert d["total_bytes"] == -1
    r = await env.req(
        DESCRIBE_LOG_DIRS,
        version,
        {"topics": [{"topic": "ld", "partitions": [1, 9]}, {"topic": "nope", "partitions": [0]}]},
    )
    [d] = r["results"]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in d["topics"]] == [
        ("ld", [1])
    ]
    r = await env.req(DESCRIBE_LOG_DIRS, version, {"topics": []})
    assert r["results"][0]["topics"] == []


# ============================================================================ produce -> fetch


@pytest.mark.parametrize(("produce_version", "fetch_version"), [(7, 11), (9, 12), (13, 17)])
async def test_produce_fetch_round_trip(env: Env, produce_version: int, fetch_version: int) -> None:
    t = await env.create("pf", 1, version=7)
    values = [b"a", b"bb", b"ccc"]
    batch = build_batch([NewRecord(b"k", v) for v in values])
    td: dict[str, Any] = {"partition_data": [{"index": 0, "records": batch}]}
    if produce_version >= 13:
        td["topic_id"] = t["topic_id"]
    else:
        td["name"] = "pf"
    r = await env.req(
        PRODUCE,
        produce_version,
        {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [td]},
    )
    p = r["responses"][0]["partition_responses"][0]
    assert (p["error_code"], p["base_offset"]) == (NONE, 0)
    ft: dict[str, Any] = {
        "partitions": [
            {
                "partition": 0,
                "fetch_offset": 0,
                "partition_max_bytes": 1 << 20,
                "current_leader_epoch": -1,
                "log_start_offset": -1,
            }
        ]
    }
    if fetch_version >= 13:
        ft["topic_id"] = t["topic_id"]
    else:
        ft["topic"] = "pf"
    body = {
        "replica_id": -1,
        "max_wait_ms": 100,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [ft],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    r = await env.req(FETCH, fetch_version, body)
    assert r["error_code"] == NONE
    fp = r["responses"][0]["partitions"][0]
    assert fp["error_code"] == NONE and fp["high_watermark"] == 3
    batches = list(iter_batches(bytes(fp["records"])))
    assert len(batches) == 1
    _pos, header = batches[0]
    assert header.base_offset == 0 and header.records_count == 3
    assert bytes(fp["records"])[17:] == batch[17:]  # stored as received: CRC and everything it covers


async def test_api_versions_advertise_admin_apis(env: Env) -> None:
    r = await env.req(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    keys = {k["api_key"] for k in r["api_keys"]}
    assert {19, 20, 21, 32, 33, 35, 37, 44, 60} <= keys
