"""How a node secures the connections it opens itself: to other brokers and to the controllers.

Two kinds of outgoing traffic, each bound to one listener of the node it dials:

* **inter-broker** (follower fetchers, transaction markers, AddPartitionsToTxn verification): the
  listener ``inter.broker.listener.name`` (else the one named after
  ``security.inter.broker.protocol``), SASL mechanism ``sasl.mechanism.inter.broker.protocol``;
* **controller** (Raft between controllers, broker registration and heartbeats, forwarded
  requests): the first of ``controller.listener.names``, mechanism
  ``sasl.mechanism.controller.protocol``.

For that listener, as Kafka resolves it (``listener.name.<l>.<config>`` before the broker-wide
value):

* the security protocol is the listener's entry in ``listener.security.protocol.map``;
* TLS uses the listener's PEM material from the other side: the trust store verifies the server
  (the system's CAs when none is set), the key store, when there is one, is the client
  certificate (needed where the listener sets ``ssl.client.auth=required``), the versions are
  ``ssl.enabled.protocols``, and ``ssl.endpoint.identification.algorithm=https`` (the default)
  checks the dialled host against the server certificate (empty: not checked). The context is
  reloaded when the files change, like the listener's own;
* SASL takes the node's credentials from the mechanism's login module, the JAAS config
  ``listener.name.<l>.<mechanism>.sasl.jaas.config``, else ``listener.name.<l>.sasl.jaas.config``,
  else ``sasl.jaas.config``:

  - PLAIN and SCRAM-SHA-256/512: the options ``username`` and ``password`` (PLAIN's entry may
    also hold the listener's ``user_<name>`` accounts: the usual single entry of a Kafka broker);
  - OAUTHBEARER: ``sasl.oauthbearer.token.endpoint.url=file:<path>`` (KIP-768: the file holds a
    JWT, read again at every authentication, so a rotated token is picked up), else the
    unsecured login options (``unsecuredLoginStringClaim_sub`` ..., a fresh unsecured JWS each
    time: tests only, like Kafka's). An ``https`` token endpoint is refused: Zurau does not run
    the client-credentials flow;
  - GSSAPI (Kafka's default mechanism) is refused with the setting to change: Zurau has no
    Kerberos. SCRAM towards the controllers is refused as Kafka refuses it: SCRAM credentials
    live in the metadata log, which the controllers serve, so they could not authenticate each
    other before having it.

Invariant: a configuration this module accepts yields a :class:`ClientSecurity` that passes the
client's own checks; anything incomplete is a :class:`ConfigError` at start-up naming the setting,
never a silent fallback to less security.
"""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

from zurau.broker.auth.listener_security import mechanism_config, ssl_settings
from zurau.broker.auth.ssl_context import ListenerSslContext
from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity
from zurau.config import BrokerConfig, ConfigError

INTER_BROKER_MECHANISM = "sasl.mechanism.inter.broker.protocol"
CONTROLLER_MECHANISM = "sasl.mechanism.controller.protocol"
_TOKEN_URL = "sasl.oauthbearer.token.endpoint.url"
_JAAS = "sasl.jaas.config"


def inter_broker_client_security(cfg: BrokerConfig) -> ClientSecurity | None:
    """Security of this broker's connections to other brokers (None: PLAINTEXT)."""
    return _client_security(cfg, cfg.inter_broker_listener_name, INTER_BROKER_MECHANISM, to_controller=False)


def controller_client_security(cfg: BrokerConfig) -> ClientSecurity | None:
    """Security of this node's connections to the controllers (None: PLAINTEXT)."""
    names = cfg.controller_listener_names
    if not names:
        return None
    return _client_security(cfg, names[0], CONTROLLER_MECHANISM, to_controller=True)


def _client_security(cfg: BrokerConfig, listener: str, mechanism_key: str, *, to_controller: bool) -> ClientSecurity | None:
    protocol = cfg.security_protocol(listener)
    if protocol == "PLAINTEXT":
        return None
    props = {"security.protocol": protocol}
    provider = None
    if protocol.endswith("SSL"):
        settings = ssl_settings(cfg, listener, need_keystore=False)
        algorithm = str(cfg.listener_config(listener, "ssl.endpoint.identification.algorithm") or "").lower()
        if algorithm not in ("https", ""):
            raise ConfigError.invalid(
                "ssl.endpoint.identification.algorithm", algorithm, "it must be https (check host names) or empty"
            )
        context = ListenerSslContext(settings, client=True, check_hostname=algorithm == "https")
        provider = _reloading(context)
    token_provider = None
    jaas_key: str | None = None  # the config a login error names
    if protocol.startswith("SASL_"):
        mechanism = str(cfg.get(mechanism_key)).upper()
        props["sasl.mechanism"] = mechanism
        if mechanism == "GSSAPI":
            raise ConfigError.invalid(
                mechanism_key, mechanism,
                f"listener {listener} uses SASL and Zurau has no Kerberos: set {mechanism_key} to PLAIN, "
                "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
            )
        if to_controller and mechanism.startswith("SCRAM-"):
            raise ConfigError.invalid(
                mechanism_key, mechanism,
                "SCRAM credentials are stored in the metadata log, which the controllers serve, so SCRAM "
                "cannot authenticate connections to them: use PLAIN or OAUTHBEARER",
            )
        jaas_key, jaas = _login_jaas(cfg, listener, mechanism)
        token_url = None
        if mechanism == "OAUTHBEARER":
            _check_login_handler(cfg, listener)
            token_url = mechanism_config(cfg, listener, mechanism, _TOKEN_URL)
        if token_url:
            token_provider = _token_file(str(token_url))
        elif jaas is None:
            raise ConfigError(
                f"listener {listener} uses SASL {mechanism} for this node's own connections, and no login is "
                f"configured: set listener.name.{listener.lower()}.{mechanism.lower()}.{_JAAS} with "
                + ('unsecuredLoginStringClaim_sub="<name>" or ' + _TOKEN_URL + "=file:<path>"
                   if mechanism == "OAUTHBEARER" else 'username="<name>" password="<password>"'),
                name=f"listener.name.{listener.lower()}.{mechanism.lower()}.{_JAAS}",
            )
        else:
            props[_JAAS] = jaas
    try:
        security = ClientSecurity.from_props(props) if token_provider is None else _with_token(props, token_provider)
    except ClientConfigError as e:
        raise ConfigError(f"listener {listener}, this node's own login: {e}", name=jaas_key) from None
    return dataclasses.replace(security, ssl_context_provider=provider) if provider is not None else security


def _login_jaas(cfg: BrokerConfig, listener: str, mechanism: str) -> tuple[str, str | None]:
    """(config name, JAAS text) of the node's login for ``mechanism`` on ``listener``."""
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.{_JAAS}"
    for name in (f"{mechanism.lower()}.{_JAAS}", _JAAS):
        raw = cfg.listener_config_raw(listener, name)
        if raw is not None:
            return f"listener.name.{listener.lower()}.{name}", raw
    return key, None


def _with_token(props: dict[str, str], provider: Callable[[], str]) -> ClientSecurity:
    security = ClientSecurity(
        protocol=props["security.protocol"], sasl_mechanism="OAUTHBEARER", oauthbearer_token_provider=provider
    )
    security._check()
    return security


#: Kafka's login callback handlers for OAUTHBEARER: the default (unsecured login, or a token file
#: with sasl.oauthbearer.token.endpoint.url) and the one that reads the token endpoint.
_LOGIN_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler",
)


def _check_login_handler(cfg: BrokerConfig, listener: str) -> None:
    handler = mechanism_config(cfg, listener, "OAUTHBEARER", "sasl.login.callback.handler.class")
    if handler and str(handler) not in _LOGIN_HANDLERS:
        raise ConfigError.invalid(
            "sasl.login.callback.handler.class", handler,
            "Java classes cannot be loaded; Kafka's OAuthBearerLoginCallbackHandler (with "
            f"{_TOKEN_URL}=file:...) and the unsecured login handler are built in",
        )


def _token_file(url: str) -> Callable[[], str]:
    """A token provider reading the JWT in a ``file:`` URL at every call."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        raise ConfigError.invalid(
            _TOKEN_URL, url, "Zurau's brokers read their own token from a file: URL; an OAuth token endpoint "
            "(client-credentials flow) is not supported for broker logins",
        )
    path = Path(unquote(parsed.path))
    if not path.is_file():
        raise ConfigError.invalid(_TOKEN_URL, url, f"{path} is not a readable file")

    def read() -> str:
        return path.read_text("utf-8").strip()

    return read


def _reloading(context: ListenerSslContext) -> Callable[[], ssl.SSLContext]:
    def provide() -> ssl.SSLContext:
        context.reload_if_changed()
        return context.context

    return provide
