"""The ACL matrix: for each API, a principal without the needed ACL gets Kafka's authorisation
error, and gets through once the ACL Kafka's authorizer asks for is added.

One broker with Kafka's StandardAuthorizer and a SASL_PLAINTEXT listener (PLAIN users ``admin``, a
super user, and ``alice``). Each case sends its request as alice over zurau.client's connection
(the raw API, so every field of the answer can be read), adds the ACLs through
:class:`zurau.client.acl_admin.AclAdmin` as admin, sends it again, and removes alice's ACLs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from zurau.client.acl_admin import AclAdmin
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.security import ClientSecurity
from zurau.embedded import EmbeddedBroker
from zurau.protocol.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.protocol.api_keys import ApiKey

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-secret" user_alice="alice-secret";'
)
CONFIGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
}
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53
T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = AclOperation


@dataclass(frozen=True)
class Case:
    """One API: request (built from a fresh topic and group name), where its error code is, the
    error without ACLs, and the (resource type, name or None for the topic, operation) to allow."""

    name: str
    api_key: int
    version: int
    body: Callable[[str, str], dict[str, Any]]
    code: Callable[[dict[str, Any]], int]
    denied: int
    grants: tuple[tuple[ResourceType, str | None, AclOperation], ...]
    allowed: int = 0  # the code once the ACLs are there


def _topic_cfg(topic: str, _g: str) -> dict[str, Any]:
    return {"resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": None}]}


CASES = [
    Case(
        "CreateTopics",
        ApiKey.CREATE_TOPICS,
        5,
        lambda t, g: {
            "topics": [{"name": t + "-new", "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 5000,
        },
        lambda r: r["topics"][0]["error_code"],
        TOPIC_DENIED,
        ((T, "*", Op.CREATE),),
    ),
    Case(
        "DeleteTopics",
        ApiKey.DELETE_TOPICS,
        4,
        lambda t, g: {"topic_names": [t], "timeout_ms": 5000},
        lambda r: r["responses"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.DELETE),),
    ),
    Case(
        "CreatePartitions",
        ApiKey.CREATE_PARTITIONS,
        1,
        lambda t, g: {"topics": [{"name": t, "count": 2, "assignments": None}], "timeout_ms": 5000},
        lambda r: r["results"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.ALTER),),
    ),
    Case(
        "DescribeConfigs topic",
        ApiKey.DESCRIBE_CONFIGS,
        4,
        _topic_cfg,
        lambda r: r["results"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.ALTER_CONFIGS),),
    ),
    Case(
        "DescribeConfigs broker",
        ApiKey.DESCRIBE_CONFIGS,
        4,
        lambda t, g: {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}]},
        lambda r: r["results"][0]["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.DESCRIBE_CONFIGS),),
    ),
    Case(
        "DescribeConfigs client metrics",
        ApiKey.DESCRIBE_CONFIGS,
        4,
        lambda t, g: {"resources": [{"resource_type": 16, "resource_name": g, "configuration_keys": None}]},
        lambda r: r["results"][0]["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.DESCRIBE_CONFIGS),),
    ),
    Case(
        "IncrementalAlterConfigs client metrics",
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        lambda t, g: {
            "resources": [
                {
                    "resource_type": 16,
                    "resource_name": g,
                    "configs": [{"name": "interval.ms", "config_operation": 0, "value": "60000"}],
                }
            ],
            "validate_only": True,
        },
        lambda r: r["responses"][0]["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.ALTER_CONFIGS),),
    ),
    Case(
        "ListConfigResources",
        ApiKey.LIST_CONFIG_RESOURCES,
        1,
        lambda t, g: {"resource_types": [16]},
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.DESCRIBE_CONFIGS),),
    ),
    Case(
        "IncrementalAlterConfigs",
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        lambda t, g: {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": t,
                    "configs": [{"name": "retention.ms", "config_operation": 0, "value": "60000"}],
                }
            ],
            "validate_only": False,
        },
        lambda r: r["responses"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.ALTER_CONFIGS),),
    ),
    Case(
        "AlterConfigs",
        ApiKey.ALTER_CONFIGS,
        1,
        lambda t, g: {
            "resources": [{"resource_type": 2, "resource_name": t, "configs": []}],
            "validate_only": True,
        },
        lambda r: r["responses"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.ALTER_CONFIGS),),
    ),
    Case(
        "DescribeConfigs group",
        ApiKey.DESCRIBE_CONFIGS,
        4,
        lambda t, g: {"resources": [{"resource_type": 32, "resource_name": g, "configuration_keys": None}]},
        lambda r: r["results"][0]["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.DESCRIBE_CONFIGS),),
    ),
    Case(
        "IncrementalAlterConfigs group",
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        lambda t, g: {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": g,
                    "configs": [
                        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}
                    ],
                }
            ],
            "validate_only": False,
        },
        lambda r: r["responses"][0]["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.ALTER_CONFIGS),),
    ),
    Case(
        "AlterConfigs group",
        ApiKey.ALTER_CONFIGS,
        1,
        lambda t, g: {
            "resources": [{"resource_type": 32, "resource_name": g, "configs": []}],
            "validate_only": True,
        },
        lambda r: r["responses"][0]["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.ALTER_CONFIGS),),
    ),
    Case(
        "ListOffsets",
        ApiKey.LIST_OFFSETS,
        7,
        lambda t, g: {
            "replica_id": -1,
            "topics": [{"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
        lambda r: r["topics"][0]["partitions"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.DESCRIBE),),
    ),
    Case(
        "DescribeTopicPartitions",
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        lambda t, g: {"topics": [{"name": t}]},
        lambda r: r["topics"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.DESCRIBE),),
    ),
    Case(
        "OffsetForLeaderEpoch",
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        lambda t, g: {"topics": [{"topic": t, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
        lambda r: r["topics"][0]["partitions"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.READ),),
    ),
    Case(
        "DeleteRecords",
        ApiKey.DELETE_RECORDS,
        2,
        lambda t, g: {
            "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout_ms": 5000,
        },
        lambda r: r["topics"][0]["partitions"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.DELETE),),
    ),
    Case(
        "DescribeProducers",
        ApiKey.DESCRIBE_PRODUCERS,
        0,
        lambda t, g: {"topics": [{"name": t, "partition_indexes": [0]}]},
        lambda r: r["topics"][0]["partitions"][0]["error_code"],
        TOPIC_DENIED,
        ((T, None, Op.READ),),
    ),
    Case(
        "Fetch as a follower",
        ApiKey.FETCH,
        11,
        lambda t, g: {
            "replica_id": 7,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "topics": [
                {"topic": t, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}]}
            ],
        },
        lambda r: r["responses"][0]["partitions"][0]["error_code"],
        TOPIC_DENIED,
        ((C, CLUSTER_NAME, Op.CLUSTER_ACTION),),
        allowed=-1,
    ),
    Case(
        "OffsetCommit",
        ApiKey.OFFSET_COMMIT,
        8,
        lambda t, g: {
            "group_id": g,
            "topics": [{"name": t, "partitions": [{"partition_index": 0, "committed_offset": 0}]}],
        },
        lambda r: r["topics"][0]["partitions"][0]["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.READ), (T, None, Op.READ)),
    ),
    Case(
        "OffsetFetch",
        ApiKey.OFFSET_FETCH,
        7,
        lambda t, g: {"group_id": g, "topics": None},
        lambda r: r["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.DESCRIBE),),
    ),
    Case(
        "DescribeGroups",
        ApiKey.DESCRIBE_GROUPS,
        5,
        lambda t, g: {"groups": [g]},
        lambda r: r["groups"][0]["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.DESCRIBE),),
    ),
    Case(
        "DeleteGroups",
        ApiKey.DELETE_GROUPS,
        2,
        lambda t, g: {"groups_names": [g]},
        lambda r: r["results"][0]["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.DELETE),),
        allowed=69,
    ),
    Case(
        "FindCoordinator group",
        ApiKey.FIND_COORDINATOR,
        3,
        lambda t, g: {"key": g, "key_type": 0},
        lambda r: r["error_code"],
        GROUP_DENIED,
        ((G, "g", Op.DESCRIBE),),
    ),
    Case(
        "FindCoordinator transaction",
        ApiKey.FIND_COORDINATOR,
        3,
        lambda t, g: {"key": "tx-" + g, "key_type": 1},
        lambda r: r["error_code"],
        TXN_DENIED,
        ((X, "tx", Op.DESCRIBE),),
    ),
    Case(
        "InitProducerId transactional",
        ApiKey.INIT_PRODUCER_ID,
        4,
        lambda t, g: {
            "transactional_id": "tx-" + g,
            "transaction_timeout_ms": 10000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        lambda r: r["error_code"],
        TXN_DENIED,
        ((X, "tx", Op.WRITE),),
    ),
    Case(
        "InitProducerId idempotent",
        ApiKey.INIT_PRODUCER_ID,
        4,
        lambda t, g: {
            "transactional_id": None,
            "transaction_timeout_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((T, "other", Op.WRITE),),
    ),
    Case(
        "DescribeTransactions",
        ApiKey.DESCRIBE_TRANSACTIONS,
        0,
        lambda t, g: {"transactional_ids": ["tx-" + g]},
        lambda r: r["transaction_states"][0]["error_code"],
        TXN_DENIED,
        ((X, "tx", Op.DESCRIBE),),
        allowed=105,
    ),
    Case(
        "ElectLeaders",
        ApiKey.ELECT_LEADERS,
        2,
        lambda t, g: {
            "election_type": 0,
            "topic_partitions": [{"topic": t, "partitions": [0]}],
            "timeout_ms": 5000,
        },
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.ALTER),),
    ),
    Case(
        "DescribeLogDirs",
        ApiKey.DESCRIBE_LOG_DIRS,
        3,
        lambda t, g: {"topics": None},
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.DESCRIBE),),
    ),
    Case(
        "ListPartitionReassignments",
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        0,
        lambda t, g: {"timeout_ms": 5000, "topics": None},
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.DESCRIBE),),
    ),
    Case(
        "DescribeAcls",
        ApiKey.DESCRIBE_ACLS,
        2,
        lambda t, g: {
            "resource_type_filter": 1,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        },
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.ALTER),),
    ),
    Case(
        "DescribeUserScramCredentials",
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        0,
        lambda t, g: {"users": None},
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.DESCRIBE),),
    ),
    Case(
        "UpdateFeatures",
        ApiKey.UPDATE_FEATURES,
        1,
        lambda t, g: {
            "timeout_ms": 5000,
            "feature_updates": [{"feature": "group.version", "max_version_level": 1, "upgrade_type": 1}],
            "validate_only": True,
        },
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.ALTER),),
    ),
    Case(
        "Vote",
        ApiKey.VOTE,
        0,
        lambda t, g: {"cluster_id": None, "topics": []},
        lambda r: r["error_code"],
        CLUSTER_DENIED,
        ((C, CLUSTER_NAME, Op.CLUSTER_ACTION),),
        allowed=-1,
    ),
]


def _security(user: str) -> ClientSecurity:
    return ClientSecurity(
        protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username=user, sasl_password=f"{user}-secret"
    )


@pytest.fixture(scope="module")
def broker() -> Any:
    with EmbeddedBroker(**CONFIGS) as b:
        yield b


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_acl_matrix(broker: EmbeddedBroker, case: Case) -> None:
    host, port = broker.listener_address("SASL_PLAINTEXT").rsplit(":", 1)
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"m-{suffix}", f"g-{suffix}"
    admin_cfg = ClientConfig.from_props(
        {
            "bootstrap.servers": f"{host}:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )
    admin_conn = await BrokerConnection(host, int(port), security=_security("admin")).connect()
    alice = await BrokerConnection(host, int(port), security=_security("alice")).connect()
    try:
        created = await admin_conn.request(
            ApiKey.CREATE_TOPICS,
            {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000},
            version=5,
        )
        assert created["topics"][0]["error_code"] == 0
        body = case.body(topic, group)
        denied = await alice.request(case.api_key, body, version=case.version)
        assert case.code(denied) == case.denied, denied

        def grant(rtype: ResourceType, name: str | None, op: AclOperation) -> AclBinding:
            pattern = PatternType.PREFIXED if name in ("g", "tx") else PatternType.LITERAL
            return AclBinding(
                rtype,
                topic if name is None else name,
                pattern,
                "User:alice",
                "*",
                op,
                AclPermissionType.ALLOW,
            )

        async with AclAdmin(admin_cfg) as acls:
            assert await acls.create([grant(*g) for g in case.grants]) == [None] * len(case.grants)
            try:
                allowed = await alice.request(case.api_key, body, version=case.version)
                code = case.code(allowed)
                if case.allowed == -1:  # any answer but the authorisation error
                    assert code != case.denied, allowed
                else:
                    assert code == case.allowed, allowed
            finally:
                await acls.delete([AclBindingFilter(principal="User:alice")])
    finally:
        await alice.close()
        await admin_conn.close()
