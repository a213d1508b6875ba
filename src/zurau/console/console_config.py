"""The console's settings: where it listens and which services it shows.

``bootstrap_servers`` is any Kafka-compatible cluster (Kafka's ``host:port[,host:port]``);
``registry_url``, ``connect_url``, ``rest_proxy_url`` and ``metrics_url`` are optional: a page
for a service that is not configured says so instead of failing. ``lag_sample_interval`` is the seconds between two lag
samples of a watched group (see :mod:`~zurau.console.groups_view`).

``client_properties`` are the Kafka client security settings of ``--command-config``
(``security.protocol``, ``ssl.*``, ``sasl.*``; see :mod:`zurau.client.security`); their TLS
settings also serve the https registry, Connect, REST proxy and metrics URLs. ``login`` makes every visitor
log in (:mod:`~zurau.console.auth`): it is on when asked for, and on by default when the
properties name a SASL protocol but no ``sasl.username`` (the users' own credentials are then
the only ones the console has). Invariant: with ``login`` the protocol is SASL_PLAINTEXT or
SASL_SSL with a supported ``sasl.mechanism``, and ``security`` carries no user name or password.
``session_timeout`` is the seconds a login lasts.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlparse

from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity

_PLACEHOLDER_USER = "console-login-placeholder"
LOGIN_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # the SASL mechanisms with a password


class ConsoleConfigError(ValueError):
    pass


def _url(name: str, value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    parsed = urlparse(value.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConsoleConfigError(f"{name} must be an http(s) URL like http://127.0.0.1:8081, not {value!r}")
    return value.strip().rstrip("/")


@dataclass(frozen=True)
class ConsoleConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    bootstrap_servers: str = "127.0.0.1:9092"
    registry_url: str | None = None
    connect_url: str | None = None
    metrics_url: str | None = None
    lag_sample_interval: float = 5.0
    request_timeout_ms: int = 15_000
    rest_proxy_url: str | None = None
    security: ClientSecurity = field(default_factory=ClientSecurity)
    login: bool = False
    session_timeout: float = 8 * 3600.0

    @classmethod
    def create(
        cls,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        bootstrap_servers: str = "127.0.0.1:9092",
        registry_url: str | None = None,
        connect_url: str | None = None,
        metrics_url: str | None = None,
        lag_sample_interval: float = 5.0,
        request_timeout_ms: int = 15_000,
        rest_proxy_url: str | None = None,
        client_properties: Mapping[str, str] | None = None,
        login: bool | None = None,
        session_timeout: float = 8 * 3600.0,
    ) -> ConsoleConfig:
        """Checked construction: raises :class:`ConsoleConfigError` naming the bad setting.
        ``login=None`` decides from ``client_properties`` (see the module's docstring)."""
        if not 0 <= port <= 65535:
            raise ConsoleConfigError(f"--port must be 0-65535, not {port}")
        try:
            parse_bootstrap(bootstrap_servers)
        except ClientConfigError as e:
            raise ConsoleConfigError(f"--bootstrap-server: {e}") from None
        if not lag_sample_interval > 0:
            raise ConsoleConfigError("the lag sample interval must be positive")
        if not session_timeout > 0:
            raise ConsoleConfigError("--session-timeout must be positive")
        security, login = _security(dict(client_properties or {}), login)
        return cls(
            host=host,
            port=port,
            bootstrap_servers=bootstrap_servers,
            registry_url=_url("--registry-url", registry_url),
            connect_url=_url("--connect-url", connect_url),
            metrics_url=_url("--metrics-url", metrics_url),
            rest_proxy_url=_url("--rest-proxy-url", rest_proxy_url),
            lag_sample_interval=lag_sample_interval,
            request_timeout_ms=request_timeout_ms,
            security=security,
            login=login,
            session_timeout=session_timeout,
        )

    def client_config(self, username: str | None = None, password: str | None = None) -> ClientConfig:
        """The cluster's client settings; with ``username`` the SASL credentials are that user's
        (how the console runs a logged-in user's requests as that principal)."""
        security = self.security
        if username is not None:
            security = replace(security, sasl_username=username, sasl_password=password or "")
        return ClientConfig(
            bootstrap_servers=parse_bootstrap(self.bootstrap_servers),
            client_id="zurau-console",
            request_timeout_ms=self.request_timeout_ms,
            connection_setup_timeout_ms=min(5_000, self.request_timeout_ms),
            security_protocol=security.protocol,
            security=security,
        )

    def service_tls(self) -> ssl.SSLContext | None:
        """The TLS context for https service URLs: the ``ssl.*`` settings of the command config
        (CA, client certificate), or None for the system's defaults when there are none."""
        s = self.security
        if not (s.ca_location or s.certificate_location or s.keystore_location):
            return None
        try:
            return replace(s, protocol="SSL").ssl_context()
        except ClientConfigError as e:
            raise ConsoleConfigError(str(e)) from None


def _security(props: dict[str, str], login: bool | None) -> tuple[ClientSecurity, bool]:
    """The checked security settings and whether the console asks visitors to log in."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    has_user = bool(props.get("sasl.username", "").strip()) or "sasl.jaas.config" in props
    sasl = protocol.startswith("SASL_")
    if login is None:
        login = sasl and not has_user
    if login:
        if not sasl:
            raise ConsoleConfigError(
                "--login checks users' passwords with SASL: the --command-config needs "
                "security.protocol=SASL_PLAINTEXT or SASL_SSL and a sasl.mechanism"
            )
        mechanism = props.get("sasl.mechanism", "").strip().upper()
        if mechanism not in LOGIN_MECHANISMS:
            raise ConsoleConfigError(
                f"--login needs sasl.mechanism set to one of {', '.join(LOGIN_MECHANISMS)} in the --command-config"
            )
        # each user brings their own credentials: drop the configured ones, if any
        props = {k: v for k, v in props.items() if k not in ("sasl.username", "sasl.password", "sasl.jaas.config")}
        props.update({"sasl.username": _PLACEHOLDER_USER, "sasl.password": ""})
    try:
        security = ClientSecurity.from_props(props)
    except ClientConfigError as e:
        raise ConsoleConfigError(f"--command-config: {e}") from None
    if login:
        security = replace(security, sasl_username=None, sasl_password=None)
    return security, login


__all__ = ["LOGIN_MECHANISMS", "ConsoleConfig", "ConsoleConfigError"]
