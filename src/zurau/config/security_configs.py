"""Security configuration definitions (Kafka's ``BrokerSecurityConfigs``, ``SslConfigs``,
``SaslConfigs``): the authorizer, TLS (PEM key material) and SASL (PLAIN, SCRAM, OAUTHBEARER).

A listener may override ``ssl.*``/``sasl.*`` configs (``listener.name.<listener>.<config>``;
see :mod:`zurau.config.broker_checks`).
"""

from __future__ import annotations

from zurau.config.config_def import ConfigKey
from zurau.config.shorthand import LI, LO, B, C, D, H, I, L, M, P, S, at_least
from zurau.config.validators import ValidString

#: The security protocols a listener may use.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The SASL mechanisms a broker listener can offer.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# authorizer.class.name values: none, or Kafka's StandardAuthorizer (AclAuthorizer, its ZooKeeper-era
# predecessor, is accepted as the same authorizer).
_AUTHORIZERS = (
    "",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)


# fmt: off
SECURITY_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("authorizer.class.name", S, "", ValidString(_AUTHORIZERS), LO,
              "Authorizer to use (Kafka's StandardAuthorizer, with ACLs in the metadata log); empty "
              "disables authorization."),
    ConfigKey("super.users", S, None, None, LO,
              "Semicolon-separated principals that bypass ACL checks (read by the authorizer)."),
    ConfigKey("allow.everyone.if.no.acl.found", B, False, None, LO,
              "Allow access to resources that have no ACLs (read by the authorizer)."),
    ConfigKey("sasl.enabled.mechanisms", LI, ("GSSAPI",), None, M,
              "SASL mechanisms offered to clients.", dynamic=True),
    ConfigKey("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", None, M,
              "SASL mechanism brokers use with each other (read at start-up)."),
    ConfigKey("sasl.mechanism.controller.protocol", S, "GSSAPI", None, H,
              "SASL mechanism used towards controllers."),
    # Kerberos (GSSAPI): Kafka can change these per broker at runtime; Zurau has no GSSAPI.
    ConfigKey("sasl.kerberos.service.name", S, None, None, M,
              "Kerberos principal name Kafka runs as.", dynamic=True),
    ConfigKey("sasl.kerberos.kinit.cmd", S, "/usr/bin/kinit", None, LO,
              "Kerberos kinit command path.", dynamic=True),
    ConfigKey("sasl.kerberos.ticket.renew.window.factor", D, 0.8, None, LO,
              "Share of a ticket's lifetime after which the login thread renews it.", dynamic=True),
    ConfigKey("sasl.kerberos.ticket.renew.jitter", D, 0.05, None, LO,
              "Random jitter added to the renewal time.", dynamic=True),
    ConfigKey("sasl.kerberos.min.time.before.relogin", L, 60_000, None, LO,
              "Login thread sleep time between refresh attempts.", dynamic=True),
    ConfigKey("ssl.keystore.type", S, "JKS", None, M,
              "Format of the key store.", dynamic=True),
    ConfigKey("ssl.keystore.location", S, None, None, H,
              "Path of the key store.", dynamic=True),
    ConfigKey("ssl.keystore.password", P, None, None, H,
              "Password of the key store.", dynamic=True),
    ConfigKey("ssl.key.password", P, None, None, H,
              "Password of the private key in the key store.", dynamic=True),
    ConfigKey("ssl.truststore.type", S, "JKS", None, M,
              "Format of the trust store.", dynamic=True),
    ConfigKey("ssl.truststore.location", S, None, None, H,
              "Path of the trust store.", dynamic=True),
    ConfigKey("ssl.truststore.password", P, None, None, H,
              "Password of the trust store.", dynamic=True),
    ConfigKey("ssl.client.auth", S, "none", ValidString(("required", "requested", "none")), M,
              "Whether TLS clients must, may or need not present a certificate.", dynamic=True),
    ConfigKey("ssl.protocol", S, "TLSv1.3", None, M,
              "TLS protocol used to build the SSL context.", dynamic=True),
    ConfigKey("ssl.enabled.protocols", LI, ("TLSv1.2", "TLSv1.3"), None, M,
              "TLS protocol versions accepted.", dynamic=True),
    ConfigKey("ssl.endpoint.identification.algorithm", S, "https", None, LO,
              "Host name verification algorithm for outgoing TLS.", dynamic=True),
    ConfigKey("ssl.keystore.certificate.chain", P, None, None, H,
              "Certificate chain in PEM, inline (with ssl.keystore.type=PEM).", dynamic=True),
    ConfigKey("ssl.keystore.key", P, None, None, H,
              "Private key in PEM, inline (with ssl.keystore.type=PEM).", dynamic=True),
    ConfigKey("ssl.truststore.certificates", P, None, None, H,
              "Trusted certificates in PEM, inline (with ssl.truststore.type=PEM).", dynamic=True),
    ConfigKey("ssl.principal.mapping.rules", S, "DEFAULT", None, LO,
              "Rules mapping a client certificate's distinguished name to a short principal name."),
    ConfigKey("connections.max.reauth.ms", L, 0, None, M,
              "Longest SASL session before the client must re-authenticate (0: never; KIP-368)."),
    ConfigKey("sasl.server.callback.handler.class", C, None, None, M,
              "Server callback handler of a SASL mechanism (for OAUTHBEARER: Kafka's unsecured or "
              "JWKS validator class name)."),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.url", S, None, None, M,
              "https:// or file:// URL of the JSON Web Key Set that verifies OAUTHBEARER tokens."),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.refresh.ms", L, 3_600_000, at_least(0), LO,
              "Interval between fetches of an https JWKS (an unknown key id fetches sooner)."),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", L, 100, at_least(0), LO,
              "Least time between two JWKS fetches asked for by unknown key ids (doubled after a failure)."),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", L, 10_000, at_least(0), LO,
              "Most time between two JWKS fetches asked for by unknown key ids, after failures."),
    ConfigKey("sasl.oauthbearer.expected.audience", LI, None, None, LO,
              "Audiences of which an OAUTHBEARER token's aud claim must name one (unset: not checked)."),
    ConfigKey("sasl.oauthbearer.expected.issuer", S, None, None, LO,
              "Issuer an OAUTHBEARER token's iss claim must name (unset: not checked)."),
    ConfigKey("sasl.oauthbearer.sub.claim.name", S, "sub", None, LO,
              "Claim of an OAUTHBEARER token holding the principal's name."),
    ConfigKey("sasl.oauthbearer.scope.claim.name", S, "scope", None, LO,
              "Claim of an OAUTHBEARER token holding its scope."),
    ConfigKey("sasl.oauthbearer.token.endpoint.url", S, None, None, M,
              "For the broker's own OAUTHBEARER login: file: URL of a file holding its JWT (read "
              "at every authentication)."),
    ConfigKey("sasl.login.callback.handler.class", C, None, None, M,
              "Login callback handler of the broker's own SASL login (for OAUTHBEARER: Kafka's "
              "OAuthBearerLoginCallbackHandler or the unsecured one)."),
    ConfigKey("sasl.oauthbearer.clock.skew.seconds", I, 30, at_least(0), LO,
              "Clock difference with the token issuer tolerated when checking exp and iat."),
    # Delegation tokens (KIP-48; Kafka's DelegationTokenManagerConfigs), read by the controller
    # (create, renew, expire, the periodic expiry check) and by every broker (HMACs, SCRAM logins).
    ConfigKey("delegation.token.secret.key", P, None, None, M,
              "Secret key that signs delegation tokens (their HMAC); the same on every node. Unset: "
              "delegation tokens are disabled."),
    ConfigKey("delegation.token.master.key", P, None, None, M,
              "Deprecated name of delegation.token.secret.key (used when that is unset)."),
    ConfigKey("delegation.token.max.lifetime.ms", L, 7 * 24 * 3_600_000, at_least(1), M,
              "Longest life of a delegation token; renewals never extend it."),
    ConfigKey("delegation.token.expiry.time.ms", L, 24 * 3_600_000, at_least(1), M,
              "How long a delegation token stays valid after creation or renewal unless renewed."),
    ConfigKey("delegation.token.expiry.check.interval.ms", L, 3_600_000, at_least(1), LO,
              "Interval of the controller's check that removes expired delegation tokens."),
)
# fmt: on
