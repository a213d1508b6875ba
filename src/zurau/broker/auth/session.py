"""One connection's authentication: its principal and, on a SASL listener, the SASL exchange.

States of a SASL connection (Kafka's ``SaslServerAuthenticator``):

* **handshake** - only ApiVersions and SaslHandshake are served; any other request closes the
  connection (Kafka: IllegalSaslStateException, "Unexpected Kafka request of type ... during SASL
  handshake"). SaslHandshake names a mechanism: one not in ``sasl.enabled.mechanisms`` is answered
  UNSUPPORTED_SASL_MECHANISM with the enabled list, and the connection is closed.
* **authenticate** - after SaslHandshake v1, tokens travel in SaslAuthenticate requests; after
  SaslHandshake v0 (the legacy flow) the next frames are raw size-prefixed tokens, answered the
  same way (:attr:`SecuritySession.raw_tokens`).
* **authenticated** - every request is served with principal ``User:<name>``. A failed exchange is
  answered SASL_AUTHENTICATION_FAILED (raw tokens: no answer) and the connection is closed after
  ``connection.failed.authentication.delay.ms``.

Re-authentication (KIP-368): a session ends ``connections.max.reauth.ms`` (> 0; the mechanism's
own override first) after authentication, or when the credential expires if sooner (an
OAUTHBEARER token's ``exp``; Kafka's ``calcCompletionTimesAndReturnSessionLifetimeMs``), and
SaslAuthenticate v1+ tells the client its ``session_lifetime_ms``; the client re-authenticates over the same connection (a new
SaslHandshake and SaslAuthenticate, same mechanism and principal) before it ends. A connection
whose session ended sends nothing but a re-authentication: any other request closes it.

Delegation tokens (KIP-48): a SCRAM login whose client-first message carries the extension
``tokenauth=true`` names a delegation token id as its user and proves the token's HMAC (base64)
as password; the connection's principal is then the token's owner and :attr:`SecuritySession.token_authenticated`
is set (such a connection may not create, renew or expire tokens), and the session lasts at most
until the token's expiration as of the login (Kafka's ``CREDENTIAL_LIFETIME_MS``), so a client that
re-authenticates (KIP-368) must then log in again with the renewed token. librdkafka
(confluent-kafka 2.16), kafka-python 3.0 and aiokafka 0.14 cannot send SCRAM extensions (their
client-first message is always ``n,,n=<user>,r=<nonce>``), so, as a compatible fallback, a SCRAM
login without the extension whose user name is **not** a SCRAM user but **is** the id of a live
token is authenticated as that token in the same way (a SCRAM user of that name always wins). A
token that is unknown, expired, removed, or whose key is not configured fails the login like a
wrong password.

On a TLS listener the client certificate (if any) gives the principal before any SASL:
``User:<ssl.principal.mapping.rules applied to its distinguished name>``; without a certificate
(or without TLS and SASL) the principal is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable
from typing import Any

from zurau.broker.auth.delegation_token_cache import TokenCredential
from zurau.broker.auth.listener_security import ListenerSecurity
from zurau.broker.auth.principal_mapping import NoMatchingRule, distinguished_name
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from zurau.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from zurau.protocol.sasl import SCRAM_MECHANISMS, SaslError, ScramCredential, ScramMechanism, ScramServer
from zurau.protocol.sasl.oauthbearer import MECHANISM as OAUTHBEARER
from zurau.protocol.sasl.oauthbearer import OAuthBearerServer
from zurau.protocol.sasl.plain import parse_plain_token
from zurau.protocol.sasl.scram import parse_client_first

log = logging.getLogger("zurau.security")

ANONYMOUS = "User:ANONYMOUS"
ScramLookup = Callable[[str, ScramMechanism], ScramCredential | None]
TokenLookup = Callable[[str, ScramMechanism], TokenCredential | None]
_BEFORE_AUTH = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE})
_REAUTH = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

_HANDSHAKE, _AUTHENTICATE, _AUTHENTICATED, _FAILED = range(4)


class SecuritySession:
    """Authentication state of one connection (see the module docstring).

    ``checks_requests`` is False exactly when every request may be served without asking
    :meth:`refuse` (the connection's fast path).
    """

    def __init__(
        self,
        security: ListenerSecurity | None,
        scram_lookup: ScramLookup,
        close: Callable[[str], None],
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.security = security
        self.principal = ANONYMOUS
        self.token_authenticated = False  # the principal came from a delegation token login
        self._scram_lookup = scram_lookup
        self._token_lookup = token_lookup
        self._token: TokenCredential | None = None  # the token of the SCRAM exchange under way
        self._close = close
        sasl = security is not None and security.uses_sasl
        self._state = _HANDSHAKE if sasl else _AUTHENTICATED
        self.raw_tokens = False
        self.mechanism: str | None = None
        self._scram: ScramServer | None = None
        self._oauth: OAuthBearerServer | None = None
        self._lifetime_ms = 0  # the session_lifetime_ms of the last completed exchange
        self._expires_at: float | None = None  # monotonic seconds; None: never
        self._reauth = False
        self.checks_requests = sasl

    @property
    def authenticated(self) -> bool:
        return self._state == _AUTHENTICATED

    # ------------------------------------------------------------------ TLS
    def on_tls(self, peercert: dict[str, Any] | None) -> str | None:
        """Take the verified client certificate's principal; the reason to close, if any."""
        if not peercert or "subject" not in peercert or self.security is None:
            return None
        dn = distinguished_name(peercert["subject"])
        try:
            self.principal = f"User:{self.security.principal_mapper.name(dn)}"
        except NoMatchingRule as e:
            return f"SSL authentication failed: {e}"
        return None

    # ------------------------------------------------------------------ request gate
    def refuse(self, api_key: int) -> str | None:
        """Why a request with ``api_key`` may not be served now (None: serve it)."""
        if self._state == _AUTHENTICATED:
            if self._expires_at is not None and time.monotonic() > self._expires_at and api_key not in _REAUTH:
                return "SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate"
            return None
        if self._state == _HANDSHAKE and api_key in _BEFORE_AUTH:
            return None
        if self._state == _AUTHENTICATE and api_key == ApiKey.SASL_AUTHENTICATE and not self.raw_tokens:
            return None
        if self._state == _FAILED:
            return "authentication failed"
        return f"Unexpected Kafka request of type {_api_name(api_key)} during SASL handshake (ILLEGAL_SASL_STATE)"

    # ------------------------------------------------------------------ SaslHandshake
    def handshake(self, mechanism: str, version: int) -> SaslHandshakeResponse:
        security = self.security
        if security is None or not security.uses_sasl:
            return {"error_code": IllegalSaslStateError.code, "mechanisms": []}
        enabled = list(security.sasl_mechanisms)
        if self._state == _AUTHENTICATED:  # KIP-368 re-authentication
            if version == 0 or mechanism != self.mechanism:
                self._fail(f"re-authentication must use SaslHandshake v1 and mechanism {self.mechanism}")
                return {"error_code": IllegalSaslStateError.code, "mechanisms": enabled}
            self._reauth = True
        elif self._state != _HANDSHAKE:
            self._fail("unexpected SaslHandshake")
            return {"error_code": IllegalSaslStateError.code, "mechanisms": enabled}
        if mechanism not in enabled:
            self._fail(f"unsupported SASL mechanism {mechanism}")
            return {"error_code": UnsupportedSaslMechanismError.code, "mechanisms": enabled}
        self.mechanism = mechanism
        self._scram = ScramServer(SCRAM_MECHANISMS[mechanism]) if mechanism in SCRAM_MECHANISMS else None
        validator = security.oauthbearer
        self._oauth = OAuthBearerServer(validator) if mechanism == OAUTHBEARER and validator is not None else None
        self._state = _AUTHENTICATE
        self.checks_requests = True
        self.raw_tokens = version == 0
        return {"error_code": 0, "mechanisms": enabled}

    # ------------------------------------------------------------------ tokens
    def authenticate(self, token: bytes, version: int) -> SaslAuthenticateResponse:
        """SaslAuthenticate: the next server token, or SASL_AUTHENTICATION_FAILED (then close)."""
        if self._state != _AUTHENTICATE or self.raw_tokens:
            self._fail("SaslAuthenticate before SaslHandshake v1")
            return _auth_error(IllegalSaslStateError.code, "Unexpected SaslAuthenticate request")
        try:
            reply = self._evaluate(token)
        except SaslError as e:
            self._fail(str(e))
            return _auth_error(SaslAuthenticationFailedError.code, str(e))
        lifetime = self._lifetime_ms if self._state == _AUTHENTICATED and version >= 1 else 0
        return {"error_code": 0, "error_message": None, "auth_bytes": reply, "session_lifetime_ms": lifetime}

    def raw_token(self, token: bytes) -> bytes | None:
        """A legacy (SaslHandshake v0) token: the reply to send size-prefixed, or None when
        authentication failed (nothing is sent; the connection closes after the delay)."""
        try:
            return self._evaluate(token)
        except SaslError as e:
            self._fail(str(e))
            return None

    def _evaluate(self, token: bytes) -> bytes:
        """Run one step of the mechanism; on completion, set the principal and end the exchange."""
        if self._oauth is not None:
            reply = self._oauth.evaluate(token)
            if self._oauth.token is not None:
                self._complete(self._oauth.token.principal, self._oauth.token.lifetime_ms)
            return reply
        if self._scram is None:
            username, password = parse_plain_token(token)
            assert self.security is not None
            expected = self.security.plain_users.get(username)
            if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
                raise SaslError("Authentication failed: Invalid username or password")
            self._complete(username)
            return b""
        scram = self._scram
        if scram.requested_user is None:
            first = parse_client_first(token)
            user = first.username
            self._token = None
            credential = None if first.token_auth else self._scram_lookup(user, scram.mechanism)
            if credential is None and self._token_lookup is not None:
                # tokenauth=true, or the fallback for clients that cannot send it (module docstring)
                self._token = self._token_lookup(user, scram.mechanism)
                credential = self._token.credential if self._token is not None else None
            if credential is None:
                if first.token_auth:
                    raise SaslError(f"Token Authentication failed: Invalid tokenId : {user}")
                raise SaslError("Authentication failed: Invalid user credentials")
            return scram.first(token, credential)
        reply = scram.final(token)
        assert scram.username is not None
        if self._token is not None:
            self._complete(scram.username, self._token.expiration_ms, principal=self._token.owner, by_token=True)
        else:
            self._complete(scram.username)
        return reply

    def _complete(
        self,
        username: str,
        credential_expires_ms: int | None = None,
        *,
        principal: str | None = None,
        by_token: bool = False,
    ) -> None:
        """End the exchange as ``username`` (``principal``: the principal instead of
        ``User:<username>``; ``by_token``: a delegation token login); the session lasts
        ``connections.max.reauth.ms`` or until ``credential_expires_ms`` (epoch ms), whichever is
        sooner (neither: forever)."""
        principal = principal or f"User:{username}"
        if self._reauth and principal != self.principal:
            raise SaslError(f"Cannot change principals during re-authentication from {self.principal}: {principal}")
        self.principal = principal
        self.token_authenticated = by_token
        self._token = None
        self._state = _AUTHENTICATED
        self.raw_tokens = False
        self._reauth = False
        reauth_ms = self.security.reauth_ms_for(self.mechanism) if self.security is not None else 0
        lifetimes = [reauth_ms] if reauth_ms > 0 else []
        if credential_expires_ms is not None:
            lifetimes.append(max(0, credential_expires_ms - int(time.time() * 1000)))
        self._lifetime_ms = min(lifetimes) if lifetimes else 0
        self._expires_at = time.monotonic() + self._lifetime_ms / 1000 if lifetimes else None
        self.checks_requests = self._expires_at is not None

    def _fail(self, reason: str) -> None:
        """Refuse everything from now on and close after ``connection.failed.authentication.delay.ms``."""
        self._state = _FAILED
        self.raw_tokens = False
        self.checks_requests = True
        delay = self.security.failed_auth_delay_ms / 1000 if self.security is not None else 0.0
        log.info("SASL authentication failed (%s): %s", self.mechanism, reason)
        message = f"authentication failed: {reason}"
        asyncio.get_running_loop().call_later(max(delay, 0.0), self._close, message)


def _auth_error(code: int, message: str) -> SaslAuthenticateResponse:
    return {"error_code": code, "error_message": message, "auth_bytes": b"", "session_lifetime_ms": 0}


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)
