"""The schema registry's store clients over SASL_SSL: Confluent's ``kafkastore.security.protocol``,
``kafkastore.ssl.truststore.*`` (PEM) and ``kafkastore.sasl.*`` reach the store producer, reader
and group membership; a registry so configured registers and serves schemas (also through
confluent-kafka's registry client), a wrong password fails start-up naming the failed
authentication, and a security setting the client cannot honour is refused at configuration."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from zurau.client.errors import AuthenticationError, ConnectionLostError
from zurau.embedded import EmbeddedBroker
from zurau.schema_registry.embedded_registry import EmbeddedRegistry
from zurau.schema_registry.registry_config import RegistryConfig, RegistryConfigError

USERS = {"alice": "alice-secret"}
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def store_props(broker: EmbeddedBroker, password: str, mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
    """What a Confluent registry's properties file says for a SASL_SSL cluster (PEM truststore)."""
    assert broker.ca_location is not None
    return {
        "kafkastore.security.protocol": "SASL_SSL",
        "kafkastore.ssl.truststore.location": broker.ca_location,
        "kafkastore.ssl.truststore.type": "PEM",
        "kafkastore.ssl.truststore.password": "",  # Confluent's empty default: unset
        "kafkastore.sasl.mechanism": mechanism,
        "kafkastore.sasl.jaas.config": f'{SCRAM} required username="alice" password="{password}";',
    }


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(security="SASL_SSL", users=USERS, group_initial_rebalance_delay_ms=0) as b:
        yield b


def test_registry_on_sasl_ssl_registers_and_serves(broker: EmbeddedBroker) -> None:
    props = store_props(broker, USERS["alice"])
    with EmbeddedRegistry(broker.bootstrap_servers, **props) as registry:
        with httpx.Client(base_url=registry.url, timeout=20) as http:
            r = http.post("/subjects/users-value/versions", json={"schema": '"string"'})
            assert r.status_code == 200, r.text
            first = r.json()["id"]
            assert http.get(f"/schemas/ids/{first}").json()["schema"] == '"string"'
        client = SchemaRegistryClient({"url": registry.url})
        second = client.register_schema("orders-value", Schema('{"type":"record","name":"O","fields":[]}', "AVRO"))
        assert client.get_latest_version("orders-value").schema_id == second
        assert registry.is_primary
    # A restarted registry replays the store over the secured connection.
    with EmbeddedRegistry(broker.bootstrap_servers, **store_props(broker, USERS["alice"], "PLAIN")) as again:
        client = SchemaRegistryClient({"url": again.url})
        assert client.get_schema(first).schema_str == '"string"'
        assert client.get_subjects() == ["orders-value", "users-value"]


def test_wrong_password_fails_start_up(broker: EmbeddedBroker) -> None:
    registry = EmbeddedRegistry(broker.bootstrap_servers, **store_props(broker, "wrong"))
    with pytest.raises(AuthenticationError, match="invalid credentials"):
        registry.start()
    assert not registry.running


def test_plaintext_store_client_cannot_start(broker: EmbeddedBroker) -> None:
    """Without the kafkastore security settings the registry does not come up (no silent hang)."""
    registry = EmbeddedRegistry(broker.bootstrap_servers, kafkastore_init_timeout_ms=3000)
    with pytest.raises(ConnectionLostError, match="closed by the broker"):
        registry.start()
    assert not registry.running


def test_store_security_settings_are_checked_at_configuration() -> None:
    ok = RegistryConfig.from_props({
        "kafkastore.security.protocol": "sasl_ssl", "kafkastore.sasl.mechanism": "PLAIN",
        "kafkastore.sasl.username": "u", "kafkastore.sasl.password": "p", "kafkastore.ssl.ca.location": "/ca.pem",
    })
    assert ok.kafkastore_security.protocol == "SASL_SSL"
    assert ok.kafkastore_security.ca_location == "/ca.pem"
    assert "kafkastore.sasl.username" not in ok.extra
    assert RegistryConfig.from_props({}).kafkastore_security.protocol == "PLAINTEXT"
    with pytest.raises(RegistryConfigError, match="JKS"):
        RegistryConfig.from_props({"kafkastore.security.protocol": "SSL", "kafkastore.ssl.truststore.type": "JKS"})
    with pytest.raises(RegistryConfigError, match="kafkastore.*sasl.kerberos.service.name"):
        RegistryConfig.from_props({"kafkastore.sasl.kerberos.service.name": "kafka"})
    with pytest.raises(RegistryConfigError, match="needs sasl.username"):
        RegistryConfig.from_props({"kafkastore.security.protocol": "SASL_PLAINTEXT", "kafkastore.sasl.mechanism": "PLAIN"})
