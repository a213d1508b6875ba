"""When the console asks visitors to log in, what its command config may say, and which listen
addresses count as local (a console without login elsewhere logs a warning)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from tests.support.tls import TestCA
from zurau.console.console_config import ConsoleConfig, ConsoleConfigError
from zurau.console.server import is_loopback

SCRAM = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"}


def test_login_is_the_default_for_sasl_without_a_user() -> None:
    cfg = ConsoleConfig.create(client_properties=SCRAM)
    assert cfg.login and cfg.security.sasl_username is None and cfg.security.sasl_password is None
    user = cfg.client_config("alice", "pw").security
    assert (user.protocol, user.sasl_mechanism, user.sasl_username, user.sasl_password) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", "pw")


def test_a_configured_user_means_no_login_unless_asked() -> None:
    props = {**SCRAM, "sasl.username": "svc", "sasl.password": "s"}
    cfg = ConsoleConfig.create(client_properties=props)
    assert not cfg.login and cfg.client_config().security.sasl_username == "svc"
    forced = ConsoleConfig.create(client_properties=props, login=True)
    assert forced.login and forced.security.sasl_username is None  # users bring their own
    jaas = {**SCRAM, "sasl.jaas.config": 'x required username="svc" password="s";'}
    assert not ConsoleConfig.create(client_properties=jaas).login


def test_no_security_means_no_login() -> None:
    cfg = ConsoleConfig.create()
    assert not cfg.login and cfg.client_config().security.protocol == "PLAINTEXT" and cfg.service_tls() is None


@pytest.mark.parametrize(
    ("props", "login", "message"),
    [
        ({}, True, "--login checks users' passwords with SASL"),
        ({"security.protocol": "SSL"}, True, "--login checks users' passwords with SASL"),
        ({"security.protocol": "SASL_SSL"}, None, "sasl.mechanism"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, True, "sasl.mechanism"),
        ({**SCRAM, "sasl.username": "u"}, False, "needs sasl.username and sasl.password"),
        ({"security.protocol": "SSL", "ssl.cipher.suites": "x"}, None, "ssl.cipher.suites"),
    ],
)
def test_bad_security_settings_name_the_problem(props: dict[str, str], login: bool | None, message: str) -> None:
    with pytest.raises(ConsoleConfigError, match=message.replace(".", r"\.")):
        ConsoleConfig.create(client_properties=props, login=login)


def test_the_command_configs_tls_settings_serve_https_service_urls(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    cfg = ConsoleConfig.create(client_properties={**SCRAM, "ssl.ca.location": str(ca.cert_path)})
    ctx = cfg.service_tls()
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    bad = ConsoleConfig.create(client_properties={"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "no.pem")})
    with pytest.raises(ConsoleConfigError, match="cannot load the TLS material"):
        bad.service_tls()


def test_session_timeout_must_be_positive() -> None:
    with pytest.raises(ConsoleConfigError, match="--session-timeout"):
        ConsoleConfig.create(session_timeout=0)


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("", False), ("::", False), ("10.1.2.3", False), ("console.example.com", False)],
)
def test_loopback_addresses(host: str, local: bool) -> None:
    assert is_loopback(host) is local
