"""What one listener requires of its clients, resolved once from the broker config.

Every setting is read for the listener with :meth:`BrokerConfig.listener_config`, so
``listener.name.<listener>.<config>`` overrides the broker-wide value (Kafka's rule).

* TLS (SSL, SASL_SSL): ``ssl.keystore.type`` must be ``PEM``; the certificate chain and key come
  from ``ssl.keystore.location`` (one file holding both) or inline ``ssl.keystore.certificate.chain``
  and ``ssl.keystore.key`` (``ssl.key.password`` decrypts an encrypted key). Trusted CAs (needed
  for ``ssl.client.auth`` requested/required) come from ``ssl.truststore.location`` or inline
  ``ssl.truststore.certificates`` (``ssl.truststore.type=PEM``), else the system's CAs.
  ``ssl.enabled.protocols`` may hold TLSv1.2 and TLSv1.3.
* SASL (SASL_PLAINTEXT, SASL_SSL): ``sasl.enabled.mechanisms`` among PLAIN, SCRAM-SHA-256,
  SCRAM-SHA-512 and OAUTHBEARER (validators: :mod:`.oauthbearer`). PLAIN's users come from
  ``listener.name.<l>.plain.sasl.jaas.config`` (or the listener's ``sasl.jaas.config``):
  ``PlainLoginModule required user_<name>="<password>" ...;``.
  SCRAM credentials live in the metadata log (AlterUserScramCredentials).
* ``connections.max.reauth.ms`` (KIP-368; per mechanism too:
  ``listener.name.<l>.<mechanism>.connections.max.reauth.ms``) and
  ``connection.failed.authentication.delay.ms``.

A mechanism's configs resolve ``listener.name.<l>.<mechanism>.<config>``, then
``listener.name.<l>.<config>``, then the broker-wide value (Kafka's prefix rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zurau.broker.auth.jaas import JaasEntry, parse_jaas_config, plain_users
from zurau.broker.auth.oauthbearer import oauthbearer_validator
from zurau.broker.auth.principal_mapping import PrincipalMapper
from zurau.config import BROKER_CONFIGS, BrokerConfig, ConfigError, Password
from zurau.protocol.sasl.oauthbearer import Validator

TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    return value.value if isinstance(value, Password) else str(value)


@dataclass(frozen=True)
class SslSettings:
    """A listener's TLS material and policy (PEM only)."""

    listener: str
    keystore_location: str | None
    keystore_chain: str | None
    keystore_key: str | None
    key_password: str | None = field(repr=False)
    truststore_location: str | None
    truststore_certificates: str | None
    client_auth: str  # none | requested | required
    enabled_protocols: tuple[str, ...]


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener: its security protocol, TLS settings, SASL mechanisms and PLAIN users."""

    name: str
    protocol: str
    ssl: SslSettings | None
    sasl_mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(repr=False)
    principal_mapper: PrincipalMapper
    reauth_ms: int
    failed_auth_delay_ms: int
    oauthbearer: Validator | None = field(default=None, repr=False)
    reauth_ms_by_mechanism: dict[str, int] = field(default_factory=dict)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def reauth_ms_for(self, mechanism: str | None) -> int:
        """``connections.max.reauth.ms`` for a SASL mechanism (its own override, else the listener's)."""
        return self.reauth_ms_by_mechanism.get(mechanism or "", self.reauth_ms)


def mechanism_config(cfg: BrokerConfig, listener: str, mechanism: str, name: str) -> Any:
    """The typed value of ``name`` for one mechanism of one listener (see the module docstring)."""
    raw = cfg.listener_config_raw(listener, f"{mechanism.lower()}.{name}")
    return BROKER_CONFIGS[name].parse(raw) if raw is not None else cfg.listener_config(listener, name)


def _oauthbearer_jaas(cfg: BrokerConfig, name: str) -> JaasEntry | None:
    """The OAUTHBEARER JAAS entry: the mechanism's own, else the listener's if it names the
    OAuthBearerLoginModule (a listener-wide entry may be PLAIN's)."""
    raw = cfg.listener_config_raw(name, "oauthbearer.sasl.jaas.config")
    if raw is not None:
        return parse_jaas_config(raw, f"listener.name.{name.lower()}.oauthbearer.sasl.jaas.config")
    raw = cfg.listener_config_raw(name, "sasl.jaas.config")
    if raw is not None:
        entry = parse_jaas_config(raw, f"listener.name.{name.lower()}.sasl.jaas.config")
        if entry.login_module.endswith("OAuthBearerLoginModule"):
            return entry
    return None


def ssl_settings(cfg: BrokerConfig, name: str, *, need_keystore: bool = True) -> SslSettings:
    """Listener ``name``'s TLS material; ``need_keystore=False`` for a node that only dials the
    listener (it presents a certificate only if it has one)."""

    def get(key: str) -> Any:
        return cfg.listener_config(name, key)

    def bad(key: str, value: Any, reason: str) -> ConfigError:
        return ConfigError.invalid(key, value, f"listener {name}: {reason}")

    location, chain, key = get("ssl.keystore.location"), _secret(get("ssl.keystore.certificate.chain")), _secret(
        get("ssl.keystore.key")
    )
    if (need_keystore or location or chain or key) and str(get("ssl.keystore.type")).upper() != "PEM":
        raise bad("ssl.keystore.type", get("ssl.keystore.type"), "Zurau reads PEM key stores only: set ssl.keystore.type=PEM")
    if location and (chain or key):
        raise bad("ssl.keystore.location", location, "give ssl.keystore.location or the inline certificate chain and key, not both")
    if (need_keystore or chain or key) and not location and not (chain and key):
        raise bad(
            "ssl.keystore.location",
            location,
            "a TLS listener needs ssl.keystore.location (PEM with key and certificate chain) "
            "or both ssl.keystore.certificate.chain and ssl.keystore.key",
        )
    trust_location, trust_certs = get("ssl.truststore.location"), _secret(get("ssl.truststore.certificates"))
    if (trust_location or trust_certs) and str(get("ssl.truststore.type")).upper() != "PEM":
        raise bad("ssl.truststore.type", get("ssl.truststore.type"), "Zurau reads PEM trust stores only: set ssl.truststore.type=PEM")
    if trust_location and trust_certs:
        raise bad("ssl.truststore.location", trust_location, "give ssl.truststore.location or ssl.truststore.certificates, not both")
    protocols = tuple(get("ssl.enabled.protocols"))
    unknown = [p for p in protocols if p not in TLS_VERSIONS]
    if unknown or not protocols:
        raise bad("ssl.enabled.protocols", protocols, f"the TLS versions Zurau accepts are {', '.join(TLS_VERSIONS)}")
    return SslSettings(
        listener=name,
        keystore_location=location,
        keystore_chain=chain,
        keystore_key=key,
        key_password=_secret(get("ssl.key.password")),
        truststore_location=trust_location,
        truststore_certificates=trust_certs,
        client_auth=str(get("ssl.client.auth")).lower(),
        enabled_protocols=protocols,
    )


def _plain_users(cfg: BrokerConfig, name: str) -> dict[str, str]:
    for key in ("plain.sasl.jaas.config", "sasl.jaas.config"):
        raw = cfg.listener_config_raw(name, key)
        if raw is not None:
            config_name = f"listener.name.{name.lower()}.{key}"
            entry = parse_jaas_config(raw, config_name)
            if not entry.login_module.endswith("PlainLoginModule"):
                raise ConfigError(
                    f"{config_name} must configure org.apache.kafka.common.security.plain.PlainLoginModule "
                    f"for PLAIN, not {entry.login_module}",
                    name=config_name,
                )
            return plain_users(entry)
    return {}


def listener_security(cfg: BrokerConfig, name: str) -> ListenerSecurity:
    """Resolve listener ``name``'s security; :class:`ConfigError` for incomplete or bad settings."""
    protocol = cfg.security_protocol(name)
    ssl = ssl_settings(cfg, name) if protocol.endswith("SSL") else None
    mechanisms: tuple[str, ...] = ()
    users: dict[str, str] = {}
    oauthbearer: Validator | None = None
    reauth_by_mechanism: dict[str, int] = {}
    if protocol.startswith("SASL_"):
        mechanisms = tuple(m.upper() for m in cfg.listener_config(name, "sasl.enabled.mechanisms"))
        if "PLAIN" in mechanisms:
            users = _plain_users(cfg, name)
            if not users:
                raise ConfigError(
                    f"listener {name} enables PLAIN but defines no users: set listener.name.{name.lower()}"
                    '.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule '
                    'required user_<name>="<password>";',
                    name=f"listener.name.{name.lower()}.plain.sasl.jaas.config",
                )
        if "OAUTHBEARER" in mechanisms:
            oauthbearer = oauthbearer_validator(
                name,
                lambda key: mechanism_config(cfg, name, "OAUTHBEARER", key),
                _oauthbearer_jaas(cfg, name),
                cafile=str(cfg.listener_config(name, "ssl.truststore.location") or "") or None,
            )
        for mech in mechanisms:
            if mech != "OAUTHBEARER" and mechanism_config(cfg, name, mech, "sasl.server.callback.handler.class"):
                raise ConfigError(
                    f"listener {name}: Zurau has no server callback handlers for {mech}; "
                    f"listener.name.{name.lower()}.{mech.lower()}.sasl.server.callback.handler.class must be unset",
                    name="sasl.server.callback.handler.class",
                )
            raw = cfg.listener_config_raw(name, f"{mech.lower()}.connections.max.reauth.ms")
            if raw is not None:
                reauth_by_mechanism[mech] = int(BROKER_CONFIGS["connections.max.reauth.ms"].parse(raw))
    return ListenerSecurity(
        name=name,
        protocol=protocol,
        ssl=ssl,
        sasl_mechanisms=mechanisms,
        plain_users=users,
        principal_mapper=PrincipalMapper(str(cfg.listener_config(name, "ssl.principal.mapping.rules"))),
        reauth_ms=int(cfg.listener_config(name, "connections.max.reauth.ms")),
        failed_auth_delay_ms=int(cfg.get("connection.failed.authentication.delay.ms")),
        oauthbearer=oauthbearer,
        reauth_ms_by_mechanism=reauth_by_mechanism,
    )
