"""Group APIs gated on the finalized feature levels, changed while the broker runs (in-process
broker, real sockets): with ``group.version`` downgraded to 0 a KIP-848 ConsumerGroupHeartbeat
and ConsumerGroupDescribe are answered UNSUPPORTED_VERSION with a message naming the feature, and a
confluent-kafka consumer with ``group.protocol=consumer`` gets that error (librdkafka makes it
fatal, as against Kafka), while a classic group
still works; with ``share.version`` at 0 ShareGroupHeartbeat and ShareFetch are refused the same
way. Upgrading the levels again serves them at once. With eligible leader replicas on (KIP-966),
no broker may have a ``min.insync.replicas`` of its own; turning ELR on removes such values and
writes a cluster-level one (KAFKA-16540)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import AdminClient as CkAdmin
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from tests.component.test_features_cluster import _request
from zurau.client import AdminClient, ClientConfig
from zurau.client.admin import AlterConfigOp, FeatureUpgradeType
from zurau.client.admin import ConfigResource as ZConfigResource
from zurau.client.admin import ResourceType as ZResourceType
from zurau.embedded import EmbeddedBroker
from zurau.protocol import errors as E
from zurau.protocol.api_keys import ApiKey

TOPIC = "gated"


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        b.create_topic(TOPIC, 1)
        yield b


async def _set(b: EmbeddedBroker, feature: str, level: int, kind: FeatureUpgradeType) -> None:
    async with AdminClient(ClientConfig.load(bootstrap_servers=b.bootstrap_servers)) as admin:
        await admin.update_features({feature: (level, kind)})
        for _ in range(100):
            if (await admin.describe_features()).finalized.get(feature, 0) == level:
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"{feature} did not reach {level}")


async def _call(b: EmbeddedBroker, api_key: int, body: dict[str, Any], version: int) -> dict[str, Any]:
    host, port = b.bootstrap_servers.split(":")
    return await _request((host, int(port)), api_key, body, version)


def _consumer_heartbeat(group: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": uuid.uuid4().hex,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30_000,
        "subscribed_topic_names": [TOPIC],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }


def _share_heartbeat(group: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": uuid.uuid4().hex,
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": [TOPIC],
    }


def _first_error(bootstrap: str, protocol: str) -> KafkaError | None:
    """The first error a confluent-kafka consumer of ``protocol`` reports within ~10 s, or None
    when it was assigned a partition instead."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.subscribe([TOPIC])
        for _ in range(20):
            m = c.poll(0.5)
            err = None if m is None else m.error()
            if err is not None:
                return err
            if c.assignment():
                return None
        raise AssertionError("neither an assignment nor an error")
    finally:
        c.close()


async def test_group_version_0_refuses_the_consumer_protocol_until_upgraded(broker: EmbeddedBroker) -> None:
    boot = broker.bootstrap_servers
    await _set(broker, "group.version", 0, FeatureUpgradeType.SAFE_DOWNGRADE)

    r = await _call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, _consumer_heartbeat("g848"), 1)
    assert r["error_code"] == E.UnsupportedVersionError.code
    assert "group.version" in r["error_message"]
    d = await _call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": ["g848"], "include_authorized_operations": False}, 0)
    assert [g["error_code"] for g in d["groups"]] == [E.UnsupportedVersionError.code]

    err = await asyncio.to_thread(_first_error, boot, "consumer")
    # librdkafka makes UNSUPPORTED_VERSION on ConsumerGroupHeartbeat a fatal consumer error
    assert err is not None and err.code() == KafkaError._FATAL, err
    assert "ConsumerGroupHeartbeat" in err.str() and "API version not supported" in err.str(), err
    assert await asyncio.to_thread(_first_error, boot, "classic") is None  # classic groups are not gated

    await _set(broker, "group.version", 1, FeatureUpgradeType.UPGRADE)
    r = await _call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, _consumer_heartbeat("g848"), 1)
    assert r["error_code"] == 0 and r["member_epoch"] > 0
    assert await asyncio.to_thread(_first_error, boot, "consumer") is None


async def test_share_version_0_refuses_share_groups_until_upgraded(broker: EmbeddedBroker) -> None:
    await _set(broker, "share.version", 0, FeatureUpgradeType.SAFE_DOWNGRADE)
    r = await _call(broker, ApiKey.SHARE_GROUP_HEARTBEAT, _share_heartbeat("sg"), 1)
    assert r["error_code"] == E.UnsupportedVersionError.code and "share.version" in r["error_message"]
    fetch = {
        "group_id": "sg",
        "member_id": uuid.uuid4().hex,
        "share_session_epoch": 0,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1024,
        "max_records": 10,
        "batch_size": 10,
        "topics": [],
        "forgotten_topics_data": [],
    }
    f = await _call(broker, ApiKey.SHARE_FETCH, fetch, 1)
    assert f["error_code"] == E.UnsupportedVersionError.code

    await _set(broker, "share.version", 1, FeatureUpgradeType.UPGRADE)
    r = await _call(broker, ApiKey.SHARE_GROUP_HEARTBEAT, _share_heartbeat("sg"), 1)
    assert r["error_code"] == 0 and r["member_epoch"] > 0


def _broker_min_isr(bootstrap: str) -> tuple[str, str]:
    """Broker 1's effective ``min.insync.replicas`` and where it comes from."""
    admin = CkAdmin({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.BROKER, "1")
    entry = admin.describe_configs([res])[res].result(10)["min.insync.replicas"]
    return entry.value, ConfigSource(entry.source).name


async def _alter_min_isr(b: EmbeddedBroker, broker: str, value: str) -> E.KafkaError | None:
    """Set ``min.insync.replicas`` on BROKER resource ``broker`` ("": cluster level); the error."""
    res = ZConfigResource(ZResourceType.BROKER, broker)
    async with AdminClient(ClientConfig.load(bootstrap_servers=b.bootstrap_servers)) as admin:
        errors = await admin.incremental_alter_configs({res: [AlterConfigOp("min.insync.replicas", value=value)]})
    return errors[res]


async def test_turning_elr_on_replaces_broker_level_min_isr_with_a_cluster_level_one(broker: EmbeddedBroker) -> None:
    boot = broker.bootstrap_servers
    assert await asyncio.to_thread(_broker_min_isr, boot) == ("1", "DEFAULT_CONFIG")
    refused = await _alter_min_isr(broker, "1", "2")
    assert isinstance(refused, E.InvalidConfigError), refused
    assert str(refused) == "Broker-level min.insync.replicas cannot be altered while ELR is enabled."

    await _set(broker, "eligible.leader.replicas.version", 0, FeatureUpgradeType.SAFE_DOWNGRADE)
    assert await _alter_min_isr(broker, "1", "2") is None  # allowed with ELR off
    assert await asyncio.to_thread(_broker_min_isr, boot) == ("2", "DYNAMIC_BROKER_CONFIG")

    # on again: the broker's own value goes, a cluster-level one (the controller's static value) comes
    await _set(broker, "eligible.leader.replicas.version", 1, FeatureUpgradeType.UPGRADE)
    assert await asyncio.to_thread(_broker_min_isr, boot) == ("1", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert await _alter_min_isr(broker, "", "2") is None  # the cluster-level value may change
    assert await asyncio.to_thread(_broker_min_isr, boot) == ("2", "DYNAMIC_DEFAULT_BROKER_CONFIG")
