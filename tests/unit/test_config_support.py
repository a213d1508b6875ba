"""What Zurau does with each config it accepts: honoured, inert (warned about) or refused.

* Kafka's defaults: ``kafka_default`` is recorded where Zurau's default differs, and README.md
  lists every such config (so a new difference fails here until it is documented).
* Inert configs (JVM tuning knobs with no meaning here) log one warning each when set.
* Unsupported configs (features Zurau lacks) are refused at parse time unless left at their
  default, with a :class:`ConfigError` naming the config.
* Completeness: every definition is inert, unsupported, or read by the code -- computed by
  scanning ``src/zurau``, so a new config nobody reads fails until it is classified.
* The configs this work made effective: consumer-group bounds, registration timeout, controlled
  shutdown switch, quorum election backoff cap.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from pathlib import Path
from typing import Any

import pytest

from zurau.app import Broker
from zurau.config import (
    BROKER_CONFIGS,
    KAFKA_REQUIRED,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigKey,
    ConfigType,
    Password,
    ValidString,
    describe_broker_config,
    format_value,
    inert_configs_set,
    validate_topic_configs,
    warn_inert_configs,
)
from zurau.metadata.broker_lifecycle_manager import BrokerLifecycleManager
from zurau.raft import InMemoryQuorumStateStore, InMemoryRaftLog, RaftConfig, RaftNode, Received, Role, Tick
from zurau.raft.messages import BeginQuorumEpochRequest, EndQuorumEpochRequest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "zurau"
ALL_DEFS = [*TOPIC_CONFIGS.values(), *BROKER_CONFIGS.values()]

# ---------------------------------------------------------------------------------------------
# Kafka's defaults and the README
# ---------------------------------------------------------------------------------------------


def _kafka_value(d: ConfigKey) -> str:
    k = d.kafka_default_value
    return "required, no default" if k is KAFKA_REQUIRED else str(format_value(d, k))


def test_kafka_defaults_recorded_where_zurau_differs() -> None:
    # Kafka 4.x: node.id and process.roles have no default (KRaftConfigs NO_DEFAULT_VALUE).
    assert BROKER_CONFIGS["node.id"].kafka_default is KAFKA_REQUIRED
    assert BROKER_CONFIGS["process.roles"].kafka_default is KAFKA_REQUIRED
    assert BROKER_CONFIGS["transaction.state.log.min.isr"].kafka_default_value == 2
    assert BROKER_CONFIGS["group.consumer.migration.policy"].kafka_default_value == "bidirectional"
    # The internal topics keep Kafka's replication factor 3 (capped at the live brokers instead).
    for name in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor"):
        assert BROKER_CONFIGS[name].default == 3 and not BROKER_CONFIGS[name].differs_from_kafka
    for d in ALL_DEFS:
        assert not d.differs_from_kafka or d.kafka_default != d.default, (
            f"{d.name}: kafka_default equals default"
        )


def _readme_default_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("Defaults that differ from Kafka")
    section = text[start:].split("\n\n", 2)[1]  # the bullet list after the heading sentence
    return [line for line in section.splitlines() if line.startswith("- ")]


def test_readme_lists_every_default_that_differs_from_kafka() -> None:
    lines = _readme_default_lines()
    differing = [d for d in ALL_DEFS if d.differs_from_kafka]
    assert differing
    for d in differing:
        shown = f"`{d.name}={format_value(d, d.default)}`"
        matching = [line for line in lines if shown in line]
        assert matching, f"README.md does not list {shown} among the defaults that differ from Kafka's"
        assert _kafka_value(d) in matching[0], f"README.md does not give Kafka's default of {d.name}"
    listed = {m for line in lines for m in re.findall(r"`([a-z0-9.]+)=", line)}
    assert listed == {d.name for d in differing}, "README.md lists a default that does not differ"


# ---------------------------------------------------------------------------------------------
# Inert configs: one warning each, when set
# ---------------------------------------------------------------------------------------------


def test_inert_config_set_explicitly_logs_its_warning_once(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("zurau.test.inert")
    cfg = BrokerConfig({"num.io.threads": "16", "socket.send.buffer.bytes": "102400", "num.partitions": "3"})
    with caplog.at_level(logging.WARNING, logger="zurau.test.inert"):
        assert warn_inert_configs(cfg, log) == ["num.io.threads", "socket.send.buffer.bytes"]
    messages = [r.getMessage() for r in caplog.records if r.name == "zurau.test.inert"]
    assert len(messages) == 2
    io = [m for m in messages if "num.io.threads" in m]
    assert len(io) == 1 and "has no effect" in io[0] and "event loop" in io[0]
    assert not any("num.partitions" in m for m in messages)


def test_inert_configs_left_unset_are_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert warn_inert_configs(BrokerConfig()) == []
    assert inert_configs_set(BrokerConfig()) == []
    assert not [r for r in caplog.records if "has no effect" in r.getMessage()]


def test_describe_configs_documentation_says_inert_or_unsupported() -> None:
    entries = {e.name: e for e in describe_broker_config(BrokerConfig())}
    assert "Has no effect in Zurau" in entries["num.network.threads"].doc
    assert "Zurau accepts only the default" in entries["create.topic.policy.class.name"].doc
    assert "Has no effect" not in entries["num.partitions"].doc
    assert (
        TOPIC_CONFIGS["preallocate"].inert and "Has no effect" in TOPIC_CONFIGS["preallocate"].documentation
    )


# ---------------------------------------------------------------------------------------------
# Unsupported configs: refused unless left at their default
# ---------------------------------------------------------------------------------------------


def _non_default(d: ConfigKey) -> str:
    if isinstance(d.validator, ValidString):
        return next(o for o in d.validator.options if o.lower() != str(d.default).lower())
    return {
        ConfigType.BOOLEAN: "false" if d.default else "true",
        ConfigType.INT: "5",
        ConfigType.LONG: "5",
        ConfigType.LIST: "X",
        ConfigType.PASSWORD: "s3cret",
    }.get(d.type, "com.example.Custom")


UNSUPPORTED_BROKER = sorted(n for n, d in BROKER_CONFIGS.items() if d.unsupported)


@pytest.mark.parametrize("name", UNSUPPORTED_BROKER)
def test_unsupported_broker_config_with_a_non_default_value_is_refused(name: str) -> None:
    d = BROKER_CONFIGS[name]
    with pytest.raises(ConfigError, match=re.escape(name)) as e:
        BrokerConfig({name: _non_default(d)})
    assert "not supported by Zurau" in str(e.value) and e.value.name == name
    assert "s3cret" not in str(e.value)
    if d.default is not None:  # its default, given explicitly, is accepted
        BrokerConfig({name: format_value(d, d.default)})


def test_security_settings_are_checked() -> None:
    assert {"ssl.keystore.password", "ssl.truststore.password"} <= set(UNSUPPORTED_BROKER)
    assert (
        "authorizer.class.name" not in UNSUPPORTED_BROKER
    )  # StandardAuthorizer (tests/unit/test_authorizer.py)
    # A broker-wide JAAS config is not Kafka's (it is per listener and mechanism).
    with pytest.raises(ConfigError, match="sasl.jaas.config is not supported"):
        BrokerConfig(
            {"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"}
        )
    # Listener overrides: a known listener, a listener config, a valid value.
    with pytest.raises(ConfigError, match="names listener other, which is not in listeners"):
        BrokerConfig({"listener.name.other.ssl.keystore.location": "/k.pem"})
    with pytest.raises(ConfigError, match="listener.name.plaintext.num.partitions is not supported"):
        BrokerConfig({"listener.name.plaintext.num.partitions": "3"})
    with pytest.raises(ConfigError, match="listener.name.plaintext.ssl.client.auth"):
        BrokerConfig({"listener.name.plaintext.ssl.client.auth": "sometimes"})
    with pytest.raises(ConfigError, match="ssl.keystore.password"):
        BrokerConfig({"listener.name.plaintext.ssl.keystore.password": "s3cret"})
    with pytest.raises(ConfigError, match="sasl.enabled.mechanisms"):
        BrokerConfig(
            {
                "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,GSSAPI",
            }
        )
    cfg = BrokerConfig(
        {
            "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.SASL_PLAINTEXT.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": "x required;",
        }
    )
    assert cfg.listener_config("sasl_plaintext", "sasl.enabled.mechanisms") == ("SCRAM-SHA-512",)
    assert cfg.listener_config("PLAINTEXT", "sasl.enabled.mechanisms") == ("PLAIN",)


def test_group_protocols_and_assignors_zurau_lacks_are_refused() -> None:
    with pytest.raises(ConfigError, match="group.coordinator.rebalance.protocols"):
        BrokerConfig({"group.coordinator.rebalance.protocols": "classic,consumer,share"})
    with pytest.raises(ConfigError, match="group.consumer.assignors"):
        BrokerConfig({"group.consumer.assignors": "com.example.MyAssignor"})
    BrokerConfig(
        {"group.coordinator.rebalance.protocols": "classic", "group.consumer.assignors": "range,uniform"}
    )


def test_unsupported_topic_configs_are_refused() -> None:
    refused = sorted(n for n, d in TOPIC_CONFIGS.items() if d.unsupported)
    for name in refused:
        with pytest.raises(ConfigError, match=re.escape(name)):
            validate_topic_configs({name: _non_default(TOPIC_CONFIGS[name])})
    # tiered storage is supported (its rules: tests/unit/test_tiered_configs.py)
    assert validate_topic_configs({"remote.storage.enable": "true"}) == {"remote.storage.enable": True}


def test_password_refusal_never_shows_the_secret() -> None:
    with pytest.raises(ConfigError) as e:
        BrokerConfig({"ssl.truststore.password": "hunter2"})
    assert "hunter2" not in str(e.value) and isinstance(e.value.value, Password)


# ---------------------------------------------------------------------------------------------
# Completeness: every definition is classified or read by the code
# ---------------------------------------------------------------------------------------------

# Owned by work in progress elsewhere (the log cleaner, flush safety, producer-id expiration):
# classified there, not here.
OWNED_ELSEWHERE_PREFIXES = ("log.cleaner.", "log.flush.")
OWNED_ELSEWHERE = {
    "cleanup.policy",
    "log.cleanup.policy",
    "delete.retention.ms",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "min.cleanable.dirty.ratio",
    "flush.messages",
    "flush.ms",
    "producer.id.expiration.ms",
    "producer.id.expiration.check.interval.ms",
}
# Read through a resolved BrokerConfig attribute (zurau/config/broker_config.py), which the code then uses.
RESOLVED_THROUGH = {
    "process.roles": "is_controller",
    "listener.security.protocol.map": "security_protocol",
    "security.inter.broker.protocol": "inter_broker_listener_name",
    "offsets.retention.minutes": "offsets_retention_ms",
    "log.dir": "log_dirs",
}
# Honoured by BrokerConfig's own start-up checks (see test_consumer_group_bounds_are_checked).
CHECKED_IN_CONFIG = {
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.share.min.session.timeout.ms",
    "group.share.max.session.timeout.ms",
    "group.share.min.heartbeat.interval.ms",
    "group.share.max.heartbeat.interval.ms",
}
# Edge apps and test helpers reuse Kafka's client config names; only the broker side counts.
NOT_BROKER_CODE = ("spark", "schema_registry", "pipelines", "client", "cli", "testing")
# The config package names every config; of it, only the coordinators' typed views and the group
# configs' resolution are reads.
# group_configs.py reads the broker configs that give the group configs' defaults and bounds;
# replication_throttle.py names the throttle configs the replication quotas read (through it);
# remote_log_views.py is the tiered storage settings' typed view (the remote log manager's).
CONFIG_PACKAGE_READS = ("coordinator_views.py", "group_configs.py", "replication_throttle.py", "remote_log_views.py")


def _broker_source() -> str:
    texts = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] in NOT_BROKER_CODE or rel.name in ("config.py", "embedded.py", "pytest_plugin.py"):
            continue
        if rel.parts[0] == "config" and rel.name not in CONFIG_PACKAGE_READS:
            continue
        text = path.read_text()
        if rel.as_posix() == "storage/log_config.py":  # a field declaration is not a use of it
            text = re.sub(r"(?m)^    [a-z_]+: [a-z]+ = .*$", "", text)
        texts.append(text)
    return "\n".join(texts)


def _read_by(source: str, name: str, attr: str) -> bool:
    return f'"{name}"' in source or f"'{name}'" in source or re.search(rf"\b{attr}\b", source) is not None


def test_every_config_is_honoured_inert_or_refused() -> None:
    source = _broker_source()
    synonyms_of_honoured: set[str] = set()
    unread = []
    for d in TOPIC_CONFIGS.values():
        if d.inert or d.unsupported or d.name in OWNED_ELSEWHERE:
            continue
        if _read_by(source, d.name, d.snake_name):
            synonyms_of_honoured.update(s.name for s in d.synonyms)
        else:
            unread.append(d.name)
    for d in BROKER_CONFIGS.values():
        if (
            d.inert
            or d.unsupported
            or d.name in OWNED_ELSEWHERE
            or d.name.startswith(OWNED_ELSEWHERE_PREFIXES)
        ):
            continue
        if d.name in synonyms_of_honoured or d.name in CHECKED_IN_CONFIG:
            continue
        attr = RESOLVED_THROUGH.get(d.name, d.snake_name)
        if not _read_by(source, d.name, attr):
            unread.append(d.name)
    assert not unread, (
        f"configs accepted but read nowhere in src/zurau: {unread}; make them work, or mark them "
        "inert or unsupported in zurau/config/support.py (INERT / UNSUPPORTED)"
    )


def test_marked_configs_have_reasons_and_inert_ones_are_not_read_as_if_honoured() -> None:
    for d in ALL_DEFS:
        assert not (d.inert and d.unsupported), d.name
        for reason in (d.inert, d.unsupported):
            assert reason == reason.strip() and not reason.endswith("."), d.name
    # A topic config that is inert has inert broker synonyms too (and the other way round).
    for d in TOPIC_CONFIGS.values():
        for s in d.synonyms:
            if s.name in BROKER_CONFIGS and s.name == d.name:
                continue
            if d.inert:
                assert BROKER_CONFIGS[s.name].inert, s.name


# ---------------------------------------------------------------------------------------------
# Made effective here
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["group.consumer.", "group.share."])
def test_consumer_group_bounds_are_checked(prefix: str) -> None:
    with pytest.raises(ConfigError, match="heartbeat.interval.ms must be greater than or equal to"):
        BrokerConfig({prefix + "heartbeat.interval.ms": "500"})
    BrokerConfig({prefix + "heartbeat.interval.ms": "500", prefix + "min.heartbeat.interval.ms": "500"})
    with pytest.raises(ConfigError, match="heartbeat.interval.ms must be less than or equal to"):
        BrokerConfig({prefix + "heartbeat.interval.ms": "20000"})
    with pytest.raises(ConfigError, match="max.heartbeat.interval.ms must be greater than or equal to"):
        BrokerConfig({prefix + "max.heartbeat.interval.ms": "4000"})
    with pytest.raises(ConfigError, match="session.timeout.ms must be greater than or equal to"):
        BrokerConfig({prefix + "session.timeout.ms": "10000"})
    with pytest.raises(ConfigError, match="session.timeout.ms must be less than or equal to"):
        BrokerConfig({prefix + "session.timeout.ms": "70000"})
    with pytest.raises(ConfigError, match="max.session.timeout.ms must be greater than or equal to"):
        BrokerConfig({prefix + "max.session.timeout.ms": "40000"})
    with pytest.raises(ConfigError, match=f"heartbeat.interval.ms must be less than {prefix}session"):
        BrokerConfig(
            {
                prefix + "heartbeat.interval.ms": "6000",
                prefix + "session.timeout.ms": "6000",
                prefix + "min.session.timeout.ms": "6000",
                prefix + "max.heartbeat.interval.ms": "6000",
            }
        )


def test_max_connections_per_ip_overrides_must_be_well_formed() -> None:
    BrokerConfig({"max.connections.per.ip.overrides": "127.0.0.1:5, host.example:10,[::1]:2"})
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides"):
        BrokerConfig({"max.connections.per.ip.overrides": "127.0.0.1"})
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides"):
        BrokerConfig({"max.connections.per.ip.overrides": "h:-1"})


class _FakeLifecycle:
    def __init__(self) -> None:
        self.asked: list[float] = []

    async def controlled_shutdown(self, timeout: float) -> bool:
        self.asked.append(timeout)
        return False


@pytest.mark.parametrize(("enabled", "asked"), [("true", True), ("false", False)])
def test_controlled_shutdown_enable(enabled: str, asked: bool) -> None:
    broker = Broker(BrokerConfig({"controlled.shutdown.enable": enabled}))
    fake = _FakeLifecycle()
    broker.lifecycle = fake  # type: ignore[assignment]
    agreed = asyncio.run(broker.controlled_shutdown())
    assert bool(fake.asked) is asked
    assert agreed is (not asked)


def _lifecycle(register: Any) -> BrokerLifecycleManager:
    async def heartbeat(body: dict[str, Any]) -> dict[str, Any]:
        return {"error_code": 0, "is_fenced": False, "should_shut_down": False}

    return BrokerLifecycleManager(
        node_id=7,
        cluster_id="c",
        endpoints=lambda: [("PLAINTEXT", "h", 1, "PLAINTEXT")],
        rack=None,
        heartbeat_interval_ms=10,
        metadata_offset=lambda: 0,
        register=register,
        heartbeat=heartbeat,
    )


def test_initial_broker_registration_timeout() -> None:
    async def unreachable(body: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionRefusedError("no controller")

    async def registers(body: dict[str, Any]) -> dict[str, Any]:
        return {"error_code": 0, "broker_epoch": 3}

    async def run(register: Any) -> BrokerLifecycleManager:
        lm = _lifecycle(register)
        lm.start()
        try:
            await lm.wait_unfenced(100)
        finally:
            await lm.close()
        return lm

    with pytest.raises(TimeoutError, match=r"initial\.broker\.registration\.timeout\.ms"):
        asyncio.run(run(unreachable))
    assert asyncio.run(run(registers)).broker_epoch == 3


def test_election_backoff_max_caps_a_successors_wait() -> None:
    """controller.quorum.election.backoff.max.ms bounds how long the second successor named in
    EndQuorumEpoch waits before it stands (Kafka caps the exponential backoff with it)."""
    cfg = RaftConfig(election_timeout_ms=5000, retry_backoff_ms=100, election_backoff_max_ms=150)
    node = RaftNode(2, (1, 2, 3), InMemoryRaftLog(), InMemoryQuorumStateStore(), random.Random(0), 0, cfg)
    node.step(0, Received(1, BeginQuorumEpochRequest(1, 1)))
    node.step(10, Received(1, EndQuorumEpochRequest(1, 1, (3, 2))))  # node 2 is second: 200 ms
    node.step(159, Tick())
    assert node.role is Role.UNATTACHED
    node.step(160, Tick())
    assert node.role is Role.PROSPECTIVE
