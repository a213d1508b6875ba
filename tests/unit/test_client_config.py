"""Client properties (``--command-config``) with Kafka's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.errors import ClientConfigError


def test_defaults_point_at_the_local_zurau_broker() -> None:
    cfg = ClientConfig.load()
    assert cfg.bootstrap_servers == (("127.0.0.1", 9092),)
    assert cfg.security_protocol == "PLAINTEXT"


def test_properties_file_and_bootstrap_override(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text(
        "# a comment\nbootstrap.servers=a:1,b:2\nclient.id=tool\nrequest.timeout.ms=1500\n"
        "security.protocol=plaintext\nacks=all\n"
    )
    cfg = ClientConfig.load(f)
    assert cfg.bootstrap_servers == (("a", 1), ("b", 2))
    assert cfg.client_id == "tool"
    assert cfg.request_timeout == 1.5
    assert cfg.extra == {"acks": "all"}
    assert ClientConfig.load(f, "c:3").bootstrap_servers == (("c", 3),)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol=TLS is not one of"),
        ({"security.protocol": "SASL_SSL"}, "sasl.mechanism=GSSAPI is not supported"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.username"),
        ({"ssl.truststore.type": "JKS"}, "PEM files only"),
        ({"ssl.keystore.password": "x"}, "ssl.keystore.password is not a security setting"),
        ({"sasl.jaas.config": "X required;"}, 'needs username="..."'),
        ({"request.timeout.ms": "soon"}, "request.timeout.ms must be an integer"),
        ({"request.timeout.ms": "0"}, "must be positive"),
        ({"bootstrap.servers": "nohost"}, "is not host:port"),
        ({"bootstrap.servers": "h:99999"}, "invalid port"),
        ({"bootstrap.servers": " , "}, "bootstrap.servers is empty"),
    ],
)
def test_refused_properties_name_the_problem(props: dict[str, str], message: str) -> None:
    with pytest.raises(ClientConfigError, match=message):
        ClientConfig.from_props({"bootstrap.servers": "h:1", **props})


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ClientConfigError, match="cannot read"):
        ClientConfig.load(tmp_path / "absent.properties")


def test_bootstrap_forms() -> None:
    assert parse_bootstrap("PLAINTEXT://h:1, [::1]:2") == (("h", 1), ("::1", 2))
