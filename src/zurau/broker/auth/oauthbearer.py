"""OAUTHBEARER token validation on a listener: Kafka's two server callback handlers.

Chosen with ``listener.name.<l>.oauthbearer.sasl.server.callback.handler.class``:

* unset, or ``org.apache.kafka.common.security.oauthbearer.internals.unsecured.
  OAuthBearerUnsecuredValidatorCallbackHandler`` - :class:`UnsecuredValidator`, for tests: an
  unsecured JWS (``alg: none``, empty signature). Options come from the OAUTHBEARER JAAS config
  (``listener.name.<l>.oauthbearer.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.
  OAuthBearerLoginModule required unsecuredValidatorRequiredScope="..." ...;``):
  ``unsecuredValidatorPrincipalClaimName`` (default ``sub``), ``unsecuredValidatorScopeClaimName``
  (``scope``), ``unsecuredValidatorRequiredScope`` (space-separated), and
  ``unsecuredValidatorAllowableClockSkewMs`` (0). Checks, as Kafka's: the principal claim is a
  non-empty string; ``exp`` (seconds) is present and ``now - skew < exp``; ``iat``, when present,
  is ``<= now + skew`` and before ``exp``; every required scope is in the token's scope.
  The ``unsecuredLogin*`` options (the broker's own login in Kafka) are accepted and unused.
* ``org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler`` (or its
  older ``...oauthbearer.secured.`` name) - :class:`JwksValidator`, for real use: the token's
  signature (RS256/384/512, PS256/384/512, ES256/384/512; never ``none`` or HMAC) is checked with
  the key of the JSON Web Key Set at ``sasl.oauthbearer.jwks.endpoint.url`` (``file://``, re-read
  when the file changes, or ``https://``, fetched at start-up, every
  ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` and when a token names an unknown ``kid``) whose
  ``kid`` the token's header names; ``exp`` and ``iat`` are required (with
  ``sasl.oauthbearer.clock.skew.seconds``), ``aud`` must name one of
  ``sasl.oauthbearer.expected.audience`` and ``iss`` must equal
  ``sasl.oauthbearer.expected.issuer`` when those are set; the principal is the
  ``sasl.oauthbearer.sub.claim.name`` claim.

Setting a JWKS URL without the JWKS handler is refused: tokens would be accepted unsigned.
Every config may be given per listener and per mechanism (``listener.name.<l>.oauthbearer.<config>``).
"""

from __future__ import annotations

import json
import logging
import os
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from zurau.broker.auth.jaas import JaasEntry
from zurau.config import ConfigError
from zurau.protocol.sasl.oauthbearer import (
    OAuthBearerToken,
    TokenValidationError,
    Validator,
    parse_jws,
    scope_of,
)

log = logging.getLogger("zurau.security")

UNSECURED_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
)
JWKS_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
)
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_ASYMMETRIC = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
_KTY = {"R": "RSA", "P": "RSA", "E": "EC"}

Clock = Callable[[], float]  # seconds since the epoch


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenValidationError(f"the {name} claim is not a number")
    return float(value)


def _principal(claims: dict[str, Any], claim: str) -> str:
    value = claims.get(claim)
    if not isinstance(value, str) or not value.strip():
        raise TokenValidationError(f"the token has no principal: its {claim} claim is missing or not a non-empty string")
    return value


class UnsecuredValidator:
    """Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler`` (see the module docstring)."""

    def __init__(
        self,
        *,
        principal_claim: str = "sub",
        scope_claim: str = "scope",
        required_scope: Sequence[str] = (),
        clock_skew_ms: int = 0,
        clock: Clock = time.time,
    ) -> None:
        self.principal_claim = principal_claim
        self.scope_claim = scope_claim
        self.required_scope = tuple(required_scope)
        self.clock_skew_ms = clock_skew_ms
        self._clock = clock

    @classmethod
    def from_jaas(cls, entry: JaasEntry | None, config_name: str) -> UnsecuredValidator:
        options = entry.options if entry is not None else {}
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "0")
        if not skew.isdigit():
            raise ConfigError.invalid(config_name, "[hidden]", "unsecuredValidatorAllowableClockSkewMs must be a number of ms >= 0")
        return cls(
            principal_claim=options.get("unsecuredValidatorPrincipalClaimName", "sub").strip() or "sub",
            scope_claim=options.get("unsecuredValidatorScopeClaimName", "scope").strip() or "scope",
            required_scope=options.get("unsecuredValidatorRequiredScope", "").split(),
            clock_skew_ms=int(skew),
        )

    def __call__(self, value: str) -> OAuthBearerToken:
        header, claims, signature = parse_jws(value)
        if header.get("alg") != "none" or signature:
            raise TokenValidationError("an unsecured token must have alg none and no signature")
        principal = _principal(claims, self.principal_claim)
        now_ms = self._clock() * 1000
        skew = self.clock_skew_ms
        iat, exp = _number(claims, "iat"), _number(claims, "exp")
        if exp is None:
            raise TokenValidationError("the token has no exp (expiration time) claim")
        if iat is not None and iat * 1000 > now_ms + skew:
            raise TokenValidationError(
                f"the token's Issued At time ({iat} s) is after now ({now_ms:.0f} ms) plus the allowable clock skew ({skew} ms)"
            )
        if now_ms - skew >= exp * 1000:
            raise TokenValidationError(
                f"the token expired: now ({now_ms:.0f} ms) minus the allowable clock skew ({skew} ms) is on or "
                f"after its Expiration Time ({exp} s)"
            )
        if iat is not None and exp <= iat:
            raise TokenValidationError(f"the token's Expiration Time ({exp} s) is not after its Issued At time ({iat} s)")
        scope = scope_of(claims.get(self.scope_claim))
        for required in self.required_scope:
            if required not in scope:
                raise TokenValidationError(
                    f"the token's scope ({' '.join(sorted(scope))}) lacks the required scope {required}",
                    status="insufficient_scope",
                    scope=" ".join(self.required_scope),
                )
        return OAuthBearerToken(value, principal, scope, int(exp * 1000), int(iat * 1000) if iat is not None else None)


class JwksKeySource:
    """The keys of a JSON Web Key Set at a ``file://`` or ``https://`` URL.

    ``file://``: read at start-up and again whenever the file's modification time or size
    changes. ``https://``: fetched at start-up (blocking, as Kafka's broker does), then in a
    background thread every ``refresh_ms`` and when :meth:`keys` is asked for a key id it lacks
    (at most once per ``backoff_ms``, doubling after each failed fetch up to ``backoff_max_ms``);
    the answer in hand is served meanwhile.
    """

    FETCH_TIMEOUT_S = 10.0

    def __init__(self, url: str, *, refresh_ms: int = 3_600_000, backoff_ms: int = 100, backoff_max_ms: int = 10_000,
                 cafile: str | None = None) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("file", "https"):
            raise ConfigError.invalid("sasl.oauthbearer.jwks.endpoint.url", url, "the JWKS URL must be https:// or file://")
        self.url = url
        self._path = urllib.request.url2pathname(parsed.path) if parsed.scheme == "file" else None
        self._refresh = refresh_ms / 1000
        self._backoff_min = self._backoff = backoff_ms / 1000
        self._backoff_max = max(backoff_max_ms, backoff_ms) / 1000
        self._cafile = cafile
        self._lock = threading.Lock()
        self._keys: dict[str | None, list[dict[str, Any]]] = {}
        self._stamp: tuple[float, int] | None = None
        self._fetched = 0.0  # monotonic time of the last fetch attempt
        self._fetching = False
        self._load()

    def _load(self) -> None:
        if self._path is not None:
            try:
                st = os.stat(self._path)
                with open(self._path, "rb") as f:
                    text = f.read()
            except OSError as e:
                raise ConfigError.invalid("sasl.oauthbearer.jwks.endpoint.url", self.url, f"cannot read the JWKS: {e}") from None
            self._install(text)
            self._stamp = (st.st_mtime, st.st_size)
            return
        self._fetch_and_install()
        self._fetched = time.monotonic()

    def _fetch_and_install(self) -> None:
        try:
            self._install(self._fetch())
        except (OSError, ValueError) as e:
            log.warning("cannot fetch the JWKS at %s (will retry when a token needs it): %s", self.url, e)
            self._backoff = min(self._backoff * 2, self._backoff_max)
        else:
            self._backoff = self._backoff_min

    def _fetch(self) -> bytes:
        ctx = ssl.create_default_context(cafile=self._cafile)
        req = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=self.FETCH_TIMEOUT_S, context=ctx) as resp:  # noqa: S310 (https only)
            body: bytes = resp.read(1 << 20)
        return body

    def _install(self, text: bytes) -> None:
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise ValueError(f"the JWKS is not JSON: {e}") from None
        keys = doc.get("keys") if isinstance(doc, dict) else None
        if not isinstance(keys, list):
            raise ValueError('the JWKS has no "keys" list')
        by_kid: dict[str | None, list[dict[str, Any]]] = {}
        for k in keys:
            if isinstance(k, dict) and k.get("use", "sig") == "sig":
                by_kid.setdefault(k.get("kid"), []).append(k)
        with self._lock:
            self._keys = by_kid

    def _refresh_in_background(self) -> None:
        with self._lock:
            if self._fetching:
                return
            self._fetching = True
            self._fetched = time.monotonic()

        def run() -> None:
            try:
                self._fetch_and_install()
            finally:
                with self._lock:
                    self._fetching = False

        threading.Thread(target=run, name="zurau-jwks-refresh", daemon=True).start()

    def keys(self, kid: str | None) -> list[dict[str, Any]]:
        """The JWKs with key id ``kid`` (every key when the token names none)."""
        if self._path is not None:
            try:
                st = os.stat(self._path)
                if (st.st_mtime, st.st_size) != self._stamp:
                    self._load()
            except (OSError, ConfigError, ValueError) as e:
                log.warning("cannot re-read the JWKS at %s (keeping the keys in hand): %s", self.url, e)
        else:
            age = time.monotonic() - self._fetched
            with self._lock:
                known = kid in self._keys if kid is not None else bool(self._keys)
            if age > self._refresh or (not known and age > self._backoff):
                self._refresh_in_background()
        with self._lock:
            if kid is None:
                return [k for ks in self._keys.values() for k in ks]
            return list(self._keys.get(kid, ()))


class JwksValidator:
    """Kafka's ``OAuthBearerValidatorCallbackHandler`` (see the module docstring)."""

    def __init__(
        self,
        keys: JwksKeySource,
        *,
        expected_audience: Sequence[str] = (),
        expected_issuer: str | None = None,
        sub_claim: str = "sub",
        scope_claim: str = "scope",
        clock_skew_s: int = 30,
    ) -> None:
        import jwt  # PyJWT: imported when a listener validates with a JWKS

        self._jwt = jwt
        self.keys = keys
        self.expected_audience = list(expected_audience)
        self.expected_issuer = expected_issuer
        self.sub_claim = sub_claim
        self.scope_claim = scope_claim
        self.clock_skew_s = clock_skew_s

    def __call__(self, value: str) -> OAuthBearerToken:
        jwt = self._jwt
        header, _claims, _sig = parse_jws(value)
        alg = header.get("alg")
        if alg not in _ASYMMETRIC:
            raise TokenValidationError(f"the token's algorithm {alg!r} is not one of {', '.join(sorted(_ASYMMETRIC))}")
        kid = header.get("kid")
        candidates = [k for k in self.keys.keys(kid if isinstance(kid, str) else None)
                      if k.get("kty") == _KTY[alg[0]] and k.get("alg", alg) == alg]
        if not candidates:
            raise TokenValidationError(f"no key in the JWKS matches the token (kid {kid!r}, alg {alg})")
        last: Exception | None = None
        for jwk in candidates:
            try:
                key = jwt.PyJWK.from_dict(jwk, algorithm=alg).key
                claims = jwt.decode(
                    value,
                    key=key,
                    algorithms=[alg],
                    audience=self.expected_audience or None,
                    issuer=self.expected_issuer,
                    leeway=self.clock_skew_s,
                    options={"require": ["exp", "iat"], "verify_aud": bool(self.expected_audience)},
                )
                break
            except jwt.InvalidSignatureError as e:
                last = e  # try the next key with this kid
            except jwt.ExpiredSignatureError:
                raise TokenValidationError("the token has expired (exp is in the past)") from None
            except jwt.InvalidAudienceError:
                raise TokenValidationError(
                    f"the token's audience is not one of the expected audiences {self.expected_audience}") from None
            except jwt.InvalidIssuerError:
                raise TokenValidationError(f"the token's issuer is not the expected issuer {self.expected_issuer}") from None
            except jwt.PyJWTError as e:
                raise TokenValidationError(f"the token is not valid: {e}") from None
        else:
            raise TokenValidationError(f"the token's signature does not verify: {last}")
        principal = _principal(claims, self.sub_claim)
        exp, iat = _number(claims, "exp"), _number(claims, "iat")
        assert exp is not None
        return OAuthBearerToken(
            value, principal, scope_of(claims.get(self.scope_claim)), int(exp * 1000),
            int(iat * 1000) if iat is not None else None,
        )


def oauthbearer_validator(listener: str, get: Callable[[str], Any], jaas: JaasEntry | None, cafile: str | None) -> Validator:
    """The validator of ``listener``'s OAUTHBEARER, from its configs (``get`` reads one, with the
    listener's and mechanism's overrides) and its OAUTHBEARER JAAS entry."""
    prefix = f"listener.name.{listener.lower()}.oauthbearer."
    handler = get("sasl.server.callback.handler.class")
    handler = handler if isinstance(handler, str) or handler is None else getattr(handler, "__name__", str(handler))
    url = get("sasl.oauthbearer.jwks.endpoint.url")
    if jaas is not None and not jaas.login_module.endswith("OAuthBearerLoginModule"):
        raise ConfigError(f"{prefix}sasl.jaas.config must configure {LOGIN_MODULE}, not {jaas.login_module}",
                          name=f"{prefix}sasl.jaas.config")
    if handler is None or handler in UNSECURED_HANDLERS:
        if url:
            raise ConfigError(
                f"listener {listener} sets sasl.oauthbearer.jwks.endpoint.url but validates OAUTHBEARER tokens "
                f"unsecured: set {prefix}sasl.server.callback.handler.class={JWKS_HANDLERS[0]}",
                name=f"{prefix}sasl.server.callback.handler.class",
            )
        return UnsecuredValidator.from_jaas(jaas, f"{prefix}sasl.jaas.config")
    if handler not in JWKS_HANDLERS:
        raise ConfigError.invalid(
            f"{prefix}sasl.server.callback.handler.class", handler,
            f"Zurau's OAUTHBEARER validators are {UNSECURED_HANDLERS[0]} and {JWKS_HANDLERS[0]}",
        )
    if not url:
        raise ConfigError(f"listener {listener}: {JWKS_HANDLERS[0]} needs sasl.oauthbearer.jwks.endpoint.url",
                          name="sasl.oauthbearer.jwks.endpoint.url")
    try:
        import jwt  # noqa: F401
    except ImportError:
        raise ConfigError(
            "OAUTHBEARER with a JWKS needs PyJWT and cryptography: pip install 'zurau[security]'",
            name=f"{prefix}sasl.server.callback.handler.class",
        ) from None
    source = JwksKeySource(
        str(url),
        refresh_ms=int(get("sasl.oauthbearer.jwks.endpoint.refresh.ms")),
        backoff_ms=int(get("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")),
        backoff_max_ms=int(get("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")),
        cafile=cafile,
    )
    return JwksValidator(
        source,
        expected_audience=list(get("sasl.oauthbearer.expected.audience") or ()),
        expected_issuer=get("sasl.oauthbearer.expected.issuer") or None,
        sub_claim=str(get("sasl.oauthbearer.sub.claim.name")),
        scope_claim=str(get("sasl.oauthbearer.scope.claim.name")),
        clock_skew_s=int(get("sasl.oauthbearer.clock.skew.seconds")),
    )
