"""Authentication on the broker's listeners: TLS (PEM key material, client certificates and their
principals) and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER), per listener as Kafka configures them.

* :mod:`.listener_security` - what one listener requires, resolved from the broker config;
* :mod:`.ssl_context` - the listener's ``ssl.SSLContext``, reloaded when its PEM files change;
* :mod:`.principal_mapping` - a certificate's distinguished name and ``ssl.principal.mapping.rules``;
* :mod:`.jaas` - the users of a PLAIN listener, from its JAAS config;
* :mod:`.oauthbearer` - OAUTHBEARER token validators (unsecured JWS, JWKS-verified JWT);
* :mod:`.session` - one connection's authentication state (SaslHandshake, SaslAuthenticate, the
  legacy raw-token exchange, re-authentication) and its principal.
"""
