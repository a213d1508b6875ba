"""Console logins for a SASL cluster: sessions, their cookie, and request forgery checks.

How a login works (``zurau console --login``, see :mod:`~zurau.console.console_config`):

* ``POST /api/login {"username", "password"}`` authenticates to the cluster with SASL (the
  configured ``sasl.mechanism``) as that user: the broker checks the password, the console stores
  none of its own. Success opens that user's :class:`~zurau.console.cluster_clients.ClusterClients`
  (shared by the user's sessions with the same password), so every later cluster request runs as
  that principal and the broker's ACLs apply. A refusal is :class:`LoginFailed`.
* The session lives in this process's memory; the browser holds its id in the cookie
  :data:`SESSION_COOKIE` = ``<id>.<HMAC-SHA256(secret, id), base64url>``, HttpOnly,
  SameSite=Strict, Path=/, Max-Age the session timeout (and Secure when the console is reached
  over https). The secret is random per process: a restart logs everybody out, which it must
  anyway since the sessions' connections are gone.
* A session ends at logout or ``session_timeout`` seconds after login, whichever is first; the
  user's clients are closed when their last session ends (expired sessions are swept on every
  lookup and login).
* Request forgery: every state-changing request (not GET/HEAD/OPTIONS) must carry the session's
  token in the :data:`CSRF_HEADER` header (the front end reads it from ``GET /api/session``), and
  a request whose ``Origin`` is not the console's own is refused in every mode (see
  :func:`same_origin`), on top of the SameSite=Strict cookie.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlparse

from starlette.requests import Request

from zurau.client.errors import AuthenticationError
from zurau.console.cluster_clients import ClusterClients
from zurau.console.console_config import ConsoleConfig
from zurau.schema_formats.record_decoding import RecordDecoder

log = logging.getLogger("zurau.console")

SESSION_COOKIE = "zurau_console_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class LoginFailed(Exception):
    """The cluster refused the user name and password (the message says what the broker said)."""


@dataclass
class _Pool:
    clients: ClusterClients
    sessions: set[str] = field(default_factory=set)


@dataclass
class Session:
    """One browser's login. ``expires_at`` is on :attr:`Sessions.clock`'s scale."""

    id: str
    user: str
    csrf_token: str
    expires_at: float
    pool_key: tuple[str, str]
    clients: ClusterClients


def same_origin(request: Request) -> bool:
    """False when the request carries an ``Origin`` other than the console's own address (the
    ``Host`` the browser used, or ``X-Forwarded-Host`` behind a proxy). Browsers send ``Origin``
    with every cross-site state-changing request; tools such as curl send none and pass."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    netloc = urlparse(origin).netloc.lower()
    hosts = {request.headers.get("host", "").lower(), request.headers.get("x-forwarded-host", "").lower()}
    return bool(netloc) and netloc in hosts


class Sessions:
    """The logged-in sessions of one console process and the clients of their users."""

    def __init__(
        self,
        config: ConsoleConfig,
        decoder: RecordDecoder,
        *,
        secret: bytes | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.decoder = decoder
        self.clock = clock
        self._secret = secret or secrets.token_bytes(32)
        self._sessions: dict[str, Session] = {}
        self._pools: dict[tuple[str, str], _Pool] = {}
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ the cookie
    def _mac(self, text: str) -> str:
        digest = hmac.new(self._secret, text.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def cookie_value(self, session: Session) -> str:
        return f"{session.id}.{self._mac(session.id)}"

    def _session_id(self, cookie: str | None) -> str | None:
        """The session id of a cookie whose signature checks, else None."""
        if not cookie or "." not in cookie:
            return None
        sid, _, mac = cookie.rpartition(".")
        return sid if hmac.compare_digest(mac, self._mac(sid)) else None

    # ------------------------------------------------------------------ sessions
    async def login(self, username: str, password: str) -> Session:
        """Authenticate to the cluster as ``username`` and open a session. LoginFailed when the
        cluster refuses the credentials; ClientError/KafkaError/OSError when it cannot be reached."""
        await self._sweep()
        key = (username, self._mac(f"{username}\0{password}"))
        fresh = ClusterClients(
            self.config.client_config(username, password), self.decoder, self.config.lag_sample_interval
        )
        try:
            await fresh.start(strict=True)  # the broker checks the password here
        except AuthenticationError as e:
            log.info("console login of %r refused: %s", username, e)
            raise LoginFailed(_refusal(str(e))) from None
        spare: ClusterClients | None = fresh
        async with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = _Pool(fresh)
                spare = None
            session = Session(
                id=secrets.token_urlsafe(32),
                user=username,
                csrf_token=secrets.token_urlsafe(32),
                expires_at=self.clock() + self.config.session_timeout,
                pool_key=key,
                clients=pool.clients,
            )
            pool.sessions.add(session.id)
            self._sessions[session.id] = session
        if spare is not None:  # the user already had clients with this password: these only checked it
            await spare.close()
        log.info("console login of %r", username)
        return session

    async def lookup(self, cookie: str | None) -> Session | None:
        """The live session of a request's cookie, or None (no cookie, a forged or stale one,
        logged out, expired)."""
        await self._sweep()
        sid = self._session_id(cookie)
        return self._sessions.get(sid) if sid is not None else None

    async def logout(self, session: Session) -> None:
        await self._end([session.id])
        log.info("console logout of %r", session.user)

    async def close(self) -> None:
        async with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
            self._sessions.clear()
        for pool in pools:
            await pool.clients.close()

    async def _sweep(self) -> None:
        now = self.clock()
        expired = [sid for sid, s in self._sessions.items() if s.expires_at <= now]
        if expired:
            await self._end(expired)

    async def _end(self, ids: list[str]) -> None:
        closing: list[ClusterClients] = []
        async with self._lock:
            for sid in ids:
                session = self._sessions.pop(sid, None)
                if session is None:
                    continue
                pool = self._pools.get(session.pool_key)
                if pool is None:
                    continue
                pool.sessions.discard(sid)
                if not pool.sessions:
                    del self._pools[session.pool_key]
                    closing.append(pool.clients)
        for clients in closing:
            await clients.close()


def _refusal(message: str) -> str:
    """The broker's reason without the ``host:port:`` prefix the client puts before it."""
    head, sep, rest = message.partition(": ")
    if sep and ":" in head and " " not in head:
        message = rest
    return f"login failed: {message}"


__all__ = ["CSRF_HEADER", "SAFE_METHODS", "SESSION_COOKIE", "LoginFailed", "Session", "Sessions", "same_origin"]
