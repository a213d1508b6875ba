"""The client's security settings, with the Kafka client property names librdkafka and the Java
client use, and what they turn into: a TLS context and a SASL mechanism's client side.

Properties:

* ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
* TLS: ``ssl.ca.location`` (PEM CAs; else the system's), ``ssl.certificate.location`` and
  ``ssl.key.location`` (client certificate and key, PEM), ``ssl.key.password``,
  ``ssl.endpoint.identification.algorithm`` (``https``, the default, checks the broker's host name
  against its certificate; ``none`` does not). The Java client's PEM names are accepted too:
  ``ssl.truststore.location`` (with ``ssl.truststore.type=PEM``) and ``ssl.keystore.location``
  (``ssl.keystore.type=PEM``, a file holding the key and its certificate chain).
* SASL: ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; default GSSAPI is
  refused), ``sasl.username`` / ``sasl.password``, or the Java client's ``sasl.jaas.config``
  (``... required username="u" password="p";``). With SCRAM, the ScramLoginModule option
  ``tokenauth="true"`` logs in with a delegation token (KIP-48: username = token id, password =
  its base64 HMAC), sending the SCRAM extension ``tokenauth=true`` as Kafka's Java client does.
* OAUTHBEARER's token, one of: ``sasl.oauthbearer.token`` (a compact JWS, Zurau's own property);
  a callable ``oauthbearer_token_provider`` (``dataclasses.replace`` it into a
  :class:`ClientSecurity`; called at every (re-)authentication); or an unsecured JWT made fresh
  each time, as librdkafka's ``enable.sasl.oauthbearer.unsecure.jwt=true`` with
  ``sasl.oauthbearer.config=principal=<name> [scope=<a,b>] [lifeSeconds=3600]
  [principalClaimName=sub] [scopeClaimName=scope] [extension_<key>=<value>]`` or the Java client's
  ``sasl.jaas.config=...OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="<name>"
  [unsecuredLoginListClaim_scope=",a,b"] [unsecuredLoginLifetimeSeconds="3600"];``.

Anything else under ``ssl.``/``sasl.`` is refused with :class:`ClientConfigError` naming it: a
silently ignored security setting would connect with less security than asked for.
"""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zurau.client.errors import ClientConfigError
from zurau.protocol.sasl import PlainClient, ScramClient, ScramMechanism
from zurau.protocol.sasl.oauthbearer import OAuthBearerClient, unsecured_claims, unsecured_jws

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
UNSECURE_JWT = "enable.sasl.oauthbearer.unsecure.jwt"
_KEYS = {
    "ssl.ca.location": "ca_location",
    "ssl.truststore.location": "ca_location",
    "ssl.certificate.location": "certificate_location",
    "ssl.keystore.location": "keystore_location",
    "ssl.key.location": "key_location",
    "ssl.key.password": "key_password",
    "ssl.endpoint.identification.algorithm": "endpoint_identification",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "sasl.oauthbearer.token": "oauthbearer_token",
    "sasl.oauthbearer.config": "oauthbearer_config",
}
_PEM_TYPES = ("ssl.truststore.type", "ssl.keystore.type")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ClientSecurity:
    """Invariant: ``protocol`` is one of :data:`SECURITY_PROTOCOLS`; a SASL protocol has a
    supported mechanism with a user name and password."""

    protocol: str = "PLAINTEXT"
    ca_location: str | None = None
    certificate_location: str | None = None
    keystore_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    endpoint_identification: str = "https"
    sasl_mechanism: str = "GSSAPI"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    #: Log in with a delegation token (SCRAM extension ``tokenauth=true``; user name = token id,
    #: password = its base64 HMAC): the Java client's ``tokenauth="true"`` ScramLoginModule option.
    sasl_token_auth: bool = False
    oauthbearer_token: str | None = field(default=None, repr=False)
    oauthbearer_config: str | None = None  # librdkafka's sasl.oauthbearer.config (unsecured JWT)
    oauthbearer_unsecure_jwt: bool = False
    oauthbearer_token_provider: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    #: A ready TLS context, used instead of the ``ssl.*`` files (a broker's own outgoing
    #: connections: its listener's PEM material, possibly inline, reloaded when it changes).
    ssl_context_provider: Callable[[], ssl.SSLContext] | None = field(default=None, repr=False, compare=False)

    @property
    def uses_tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ClientSecurity:
        """The security part of client properties (the rest is ignored here)."""
        kwargs: dict[str, str] = {}
        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ClientConfigError(f"security.protocol={protocol} is not one of {', '.join(SECURITY_PROTOCOLS)}")
        for key, raw in props.items():
            value = raw.strip()
            if key in _KEYS:
                kwargs[_KEYS[key]] = value
            elif key in _PEM_TYPES:
                if value.upper() != "PEM":
                    raise ClientConfigError(f"{key}={value}: this client reads PEM files only")
            elif key == UNSECURE_JWT:
                if value.lower() not in ("true", "false"):
                    raise ClientConfigError(f"{UNSECURE_JWT} must be true or false")
                kwargs[key] = value.lower()
            elif key == "sasl.jaas.config" and "OAuthBearerLoginModule" in value:
                kwargs["oauthbearer_config"] = _jaas_unsecured_login(value)
                kwargs[UNSECURE_JWT] = "true"
            elif key == "sasl.jaas.config":
                options = dict(_JAAS_OPTION.findall(value))
                if "username" not in options or "password" not in options:
                    raise ClientConfigError('sasl.jaas.config needs username="..." and password="..."')
                kwargs.setdefault("sasl_username", options["username"])
                kwargs.setdefault("sasl_password", options["password"])
                if options.get("tokenauth", "").lower() == "true":
                    kwargs["sasl_token_auth"] = "true"
            elif key.startswith(("ssl.", "sasl.")):
                raise ClientConfigError(f"{key} is not a security setting this client understands")
        unsecure = kwargs.pop(UNSECURE_JWT, "false") == "true"
        token_auth = kwargs.pop("sasl_token_auth", "false") == "true"
        security = cls(
            protocol=protocol, oauthbearer_unsecure_jwt=unsecure, sasl_token_auth=token_auth, **kwargs  # type: ignore[arg-type]
        )
        security._check()
        return security

    def _check(self) -> None:
        if self.uses_sasl:
            if self.sasl_mechanism.upper() not in SASL_MECHANISMS:
                raise ClientConfigError(
                    f"sasl.mechanism={self.sasl_mechanism} is not supported (use one of {', '.join(SASL_MECHANISMS)})"
                )
            if self.sasl_mechanism.upper() == "OAUTHBEARER":
                if self.oauthbearer_unsecure_jwt:
                    _unsecured_options(self.oauthbearer_config or "")
                elif not self.oauthbearer_token and self.oauthbearer_token_provider is None:
                    raise ClientConfigError(
                        "sasl.mechanism=OAUTHBEARER needs a token: sasl.oauthbearer.token, a token provider, or "
                        f"{UNSECURE_JWT}=true with sasl.oauthbearer.config=principal=<name>"
                    )
            elif not self.sasl_username or self.sasl_password is None:
                raise ClientConfigError(f"security.protocol={self.protocol} needs sasl.username and sasl.password")
        if self.endpoint_identification.lower() not in ("https", "none", ""):
            raise ClientConfigError("ssl.endpoint.identification.algorithm must be https or none")
        if self.certificate_location and not self.key_location:
            raise ClientConfigError("ssl.certificate.location needs ssl.key.location")

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client TLS context (None for PLAINTEXT and SASL_PLAINTEXT)."""
        if not self.uses_tls:
            return None
        if self.ssl_context_provider is not None:
            return self.ssl_context_provider()
        try:
            ctx = ssl.create_default_context(cafile=self.ca_location)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.check_hostname = self.endpoint_identification.lower() == "https"
            if self.certificate_location:
                ctx.load_cert_chain(self.certificate_location, self.key_location, password=self.key_password)
            elif self.keystore_location:
                ctx.load_cert_chain(self.keystore_location, password=self.key_password)
        except (OSError, ssl.SSLError) as e:
            raise ClientConfigError(f"cannot load the TLS material: {e}") from None
        return ctx

    def sasl_client(self) -> PlainClient | ScramClient | OAuthBearerClient | None:
        """A fresh client side of the configured mechanism (None without SASL)."""
        if not self.uses_sasl:
            return None
        if self.sasl_mechanism.upper() == "OAUTHBEARER":
            return self._oauthbearer_client()
        assert self.sasl_username is not None and self.sasl_password is not None
        mechanism = self.sasl_mechanism.upper()
        if mechanism == "PLAIN":
            return PlainClient(self.sasl_username, self.sasl_password)
        extensions = {"tokenauth": "true"} if self.sasl_token_auth else None
        return ScramClient(
            ScramMechanism.from_name(mechanism), self.sasl_username, self.sasl_password, extensions=extensions
        )

    def _oauthbearer_client(self) -> OAuthBearerClient:
        if self.oauthbearer_token_provider is not None:
            return OAuthBearerClient(self.oauthbearer_token_provider)
        if not self.oauthbearer_unsecure_jwt:
            token = self.oauthbearer_token or ""
            return OAuthBearerClient(lambda: token)
        options = _unsecured_options(self.oauthbearer_config or "")

        def unsecured_token() -> str:
            return unsecured_jws(unsecured_claims(
                options["principal"], time.time(), lifetime_s=float(options.get("lifeSeconds", 3600)),
                scope=[s for s in options.get("scope", "").split(",") if s],
                principal_claim=options.get("principalClaimName", "sub"),
                scope_claim=options.get("scopeClaimName", "scope"),
            ))

        extensions = {k[len("extension_"):]: v for k, v in options.items() if k.startswith("extension_")}
        return OAuthBearerClient(unsecured_token, extensions)


def _unsecured_options(config: str) -> dict[str, Any]:
    """librdkafka's ``sasl.oauthbearer.config`` for unsecured JWTs (``key=value`` separated by spaces)."""
    options: dict[str, Any] = {}
    for part in config.split():
        key, sep, value = part.partition("=")
        if not sep or not (key in ("principal", "principalClaimName", "scope", "scopeClaimName", "lifeSeconds")
                           or key.startswith("extension_")):
            raise ClientConfigError(f"sasl.oauthbearer.config: unknown or malformed entry {part!r}")
        options[key] = value
    if not options.get("principal"):
        raise ClientConfigError("sasl.oauthbearer.config needs principal=<name> for an unsecured JWT")
    if "lifeSeconds" in options and not options["lifeSeconds"].isdigit():
        raise ClientConfigError("sasl.oauthbearer.config: lifeSeconds must be a whole number of seconds")
    return options


def _jaas_unsecured_login(jaas: str) -> str:
    """The Java client's ``OAuthBearerLoginModule`` unsecured login options as a
    ``sasl.oauthbearer.config`` string (only the principal, scope and lifetime are carried)."""
    options = {k: v.replace('\\"', '"') for k, v in _JAAS_OPTION.findall(jaas)}
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    principal = options.get(f"unsecuredLoginStringClaim_{principal_claim}")
    if not principal:
        raise ClientConfigError(f'sasl.jaas.config needs unsecuredLoginStringClaim_{principal_claim}="<name>"')
    parts = [f"principal={principal}", f"principalClaimName={principal_claim}"]
    scope_claim = options.get("unsecuredLoginScopeClaimName", "scope")
    scope = options.get(f"unsecuredLoginListClaim_{scope_claim}")
    if scope:
        parts += [f"scope={','.join(s for s in scope[1:].split(scope[0]) if s)}", f"scopeClaimName={scope_claim}"]
    if "unsecuredLoginLifetimeSeconds" in options:
        parts.append(f"lifeSeconds={options['unsecuredLoginLifetimeSeconds']}")
    return " ".join(parts)
