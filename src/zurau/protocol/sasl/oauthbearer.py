"""SASL OAUTHBEARER (RFC 7628, Kafka's KIP-255): a bearer token in one client message.

Client initial response (Kafka's ``OAuthBearerClientInitialResponse``)::

    n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[<key>=<value>\\x01]*\\x01

``<token>`` is a compact JWS (``[-_.a-zA-Z0-9]+``); the other key/value pairs are SASL extensions
(KIP-342; keys ``[A-Za-z]+``, values printable ASCII), which the server accepts and ignores.

Server answers (Kafka's ``OAuthBearerSaslServer``): an empty token when the bearer token is valid
(the exchange is complete); otherwise a JSON error challenge ``{"status":"invalid_token"}`` (with
``"scope"`` for ``insufficient_scope``), to which the client replies with the single byte
``\\x01``; the server then fails the exchange (SASL_AUTHENTICATION_FAILED, with the reason).

Unsecured JWS (for tests; Kafka's ``OAuthBearerUnsecuredJws``, librdkafka's
``enable.sasl.oauthbearer.unsecure.jwt``): ``base64url(header) "." base64url(claims) "."`` with
header ``{"alg":"none"}`` and an empty signature; :func:`unsecured_jws` builds one and
:func:`parse_jws` reads the header and claims of any compact JWS (no signature check).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zurau.protocol.sasl.errors import SaslError

MECHANISM = "OAUTHBEARER"
SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # not "," or "=" unescaped
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_INITIAL = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>(?:{_KEY}={_VALUE}\x01)*)\x01\Z"
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)\Z")


class TokenValidationError(SaslError):
    """A bearer token the server refuses: ``status`` is RFC 6750's ``invalid_token`` or
    ``insufficient_scope`` (then ``scope`` names the scope that was missing)."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.scope = scope


@dataclass(frozen=True)
class OAuthBearerToken:
    """A validated token: its principal (without ``User:``), scope and lifetime (epoch ms)."""

    value: str = field(repr=False)
    principal: str
    scope: frozenset[str]
    lifetime_ms: int
    start_ms: int | None = None


#: A validator: the compact token string -> the validated token, or TokenValidationError.
Validator = Callable[[str], OAuthBearerToken]


@dataclass(frozen=True)
class ClientInitialResponse:
    token: str = field(repr=False)
    authzid: str
    extensions: dict[str, str]


def parse_client_initial_response(data: bytes) -> ClientInitialResponse:
    """Split a client initial response; :class:`SaslError` when malformed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslError("Invalid OAUTHBEARER client first message: not UTF-8") from None
    m = _INITIAL.match(text)
    if m is None:
        raise SaslError("Invalid OAUTHBEARER client first message")
    authzid = (m.group("authzid") or "").replace("=2C", ",").replace("=3D", "=")
    pairs: dict[str, str] = {}
    for kv in m.group("kvpairs").split(SEPARATOR):
        if kv:
            key, _, value = kv.partition("=")
            pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise SaslError("Invalid OAUTHBEARER client first message: no auth key")
    am = _AUTH.match(auth)
    if am is None:
        raise SaslError("Invalid OAUTHBEARER client first message: invalid auth value")
    if am.group("scheme").lower() != "bearer":
        raise SaslError(f"Invalid OAUTHBEARER client first message: scheme {am.group('scheme')} is not Bearer")
    return ClientInitialResponse(am.group("token"), authzid, pairs)


def client_initial_response(token: str, authzid: str = "", extensions: Mapping[str, str] | None = None) -> bytes:
    """The client's first (and only) message."""
    gs2 = f"n,a={authzid.replace('=', '=3D').replace(',', '=2C')}," if authzid else "n,,"
    ext = "".join(f"{k}={v}{SEPARATOR}" for k, v in (extensions or {}).items())
    return f"{gs2}{SEPARATOR}auth=Bearer {token}{SEPARATOR}{ext}{SEPARATOR}".encode()


def error_challenge(status: str, scope: str | None = None, openid_configuration: str | None = None) -> bytes:
    """Kafka's JSON error challenge (RFC 7628 section 3.2.2)."""
    body: dict[str, str] = {"status": status}
    if scope is not None:
        body["scope"] = scope
    if openid_configuration is not None:
        body["openid-configuration"] = openid_configuration
    return json.dumps(body, separators=(",", ":")).encode()


class OAuthBearerServer:
    """The server side of one exchange (see the module docstring).

    ``evaluate`` returns the next server token. After it returns ``b""`` the exchange is complete
    and :attr:`token` is the validated token; after an error challenge, the client's ``\\x01``
    raises :class:`SaslError` with the reason.
    """

    mechanism = MECHANISM

    def __init__(self, validate: Validator) -> None:
        self._validate = validate
        self._error: TokenValidationError | None = None
        self.token: OAuthBearerToken | None = None

    @property
    def complete(self) -> bool:
        return self.token is not None

    def evaluate(self, data: bytes) -> bytes:
        if data == SEPARATOR.encode() and self._error is not None:
            e = self._error
            raise SaslError(f"Authentication failed: {e} ({error_challenge(e.status, e.scope).decode()})")
        if self.token is not None:
            raise SaslError("Unexpected OAUTHBEARER message after authentication")
        self._error = None
        response = parse_client_initial_response(data)
        try:
            token = self._validate(response.token)
        except TokenValidationError as e:
            self._error = e
            return error_challenge(e.status, e.scope)
        if response.authzid and response.authzid != token.principal:
            raise SaslError(
                f"Authentication failed: Client requested an authorization id ({response.authzid}) that is "
                f"different from the token's principal name ({token.principal})"
            )
        self.token = token
        return b""


class OAuthBearerClient:
    """The client side: :meth:`first` sends the token from ``token_provider`` (called once per
    exchange); an error challenge is answered ``\\x01`` (the server then fails the exchange)."""

    mechanism = MECHANISM

    def __init__(self, token_provider: Callable[[], str], extensions: Mapping[str, str] | None = None) -> None:
        self._provider = token_provider
        self._extensions = dict(extensions or {})
        self.complete = False
        self.error: str | None = None

    def first(self) -> bytes:
        return client_initial_response(self._provider(), extensions=self._extensions)

    def step(self, server_token: bytes) -> bytes | None:
        if server_token:
            self.error = server_token.decode("utf-8", "replace")
            return SEPARATOR.encode()
        self.complete = True
        return None


# ------------------------------------------------------------------------------- JWS helpers


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise TokenValidationError("the token is not base64url encoded") from None


def parse_jws(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``(header, claims, signature)`` of a compact JWS, unchecked; TokenValidationError if malformed."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenValidationError(f"the token has {len(parts)} parts, a compact JWS has 3")
    decoded: list[dict[str, Any]] = []
    for what, part in (("header", parts[0]), ("claims", parts[1])):
        try:
            value = json.loads(b64url_decode(part))
        except (UnicodeDecodeError, ValueError):
            raise TokenValidationError(f"the token's {what} is not JSON") from None
        if not isinstance(value, dict):
            raise TokenValidationError(f"the token's {what} is not a JSON object")
        decoded.append(value)
    return decoded[0], decoded[1], parts[2]


def unsecured_jws(claims: Mapping[str, Any]) -> str:
    """An unsecured JWS (``alg: none``, empty signature) carrying ``claims``."""
    header = b64url_encode(b'{"alg":"none"}')
    payload = b64url_encode(json.dumps(dict(claims), separators=(",", ":")).encode())
    return f"{header}.{payload}."


def unsecured_claims(
    principal: str,
    now_s: float,
    *,
    lifetime_s: float = 3600,
    scope: Iterable[str] = (),
    principal_claim: str = "sub",
    scope_claim: str = "scope",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Claims as librdkafka's unsecured JWT builder writes them (``iat``/``exp`` in seconds)."""
    claims: dict[str, Any] = {principal_claim: principal, "iat": now_s, "exp": now_s + lifetime_s}
    scopes = list(scope)
    if scopes:
        claims[scope_claim] = scopes
    claims.update(extra or {})
    return claims


def scope_of(value: Any) -> frozenset[str]:
    """A ``scope`` claim: a space-delimited string or a list of strings (Kafka accepts both)."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset(s for s in value.split(" ") if s)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return frozenset(value)
    raise TokenValidationError("the scope claim is neither a string nor a list of strings")
