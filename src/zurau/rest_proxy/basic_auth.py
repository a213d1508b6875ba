"""HTTP basic authentication of the REST proxy (``authentication.method=BASIC``) and principal
propagation to the brokers.

Users: Jetty's property-file format, as Confluent reads it through a JAAS
``PropertyFileLoginModule``: one ``user: password[,role...]`` per line (Java ``.properties``
syntax: ``#``/``!`` comments, ``=``/``:``/blank separators, escapes). The password is plain text,
``MD5:<hex digest of the password>``, ``CRYPT:<crypt(3) DES hash>`` (where Python's ``crypt`` is
available) or ``OBF:<Jetty obfuscation>``. The file is ``authentication.users.file`` or the one
the ``file="..."`` option of the JAAS entry named after ``authentication.realm`` (``KafkaRest``)
names in ``java.security.auth.login.config``. A missing or malformed file is an error at
start-up; afterwards it is read again whenever its size, modification time or inode change, and
a change that cannot be read or parsed keeps the users in hand (logged).

:class:`BasicAuthMiddleware` (pure ASGI) answers every HTTP request without valid credentials
401 with ``WWW-Authenticate: Basic realm="<realm>"`` and Confluent's error body, and a user who
holds none of ``authentication.roles`` 403 (``*`` admits every authenticated user). Passwords
are compared in constant time (also for unknown users, so that timing does not tell which users
exist). An authenticated request carries the user name in ``scope[USER_STATE]``.

Principal propagation: when ``client.security.protocol`` is SASL_PLAINTEXT or SASL_SSL with a
password mechanism (PLAIN, SCRAM-SHA-256/512), each HTTP user talks to the brokers as themselves,
with their HTTP password (:class:`UserClients`, installed as ``ProxyApi.clients_for_user``), so
the brokers' ACLs apply per HTTP user. A user's clients are opened on their first request that
needs the cluster (a broker that refuses the login answers 401 ``40101``), replaced when the
user's password changes, closed when the user leaves the users file, and all closed when the
proxy stops.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.middleware import Middleware

from zurau.client.errors import AuthenticationError
from zurau.config import ConfigError
from zurau.config.properties import load_properties
from zurau.rest_proxy.errors import KAFKA_AUTHENTICATION_ERROR, RestProxyError
from zurau.rest_proxy.proxy_api import USER_STATE, ProxyApi
from zurau.rest_proxy.proxy_clients import ProxyClients
from zurau.rest_proxy.proxy_config import RestProxyConfig, RestProxyConfigError

log = logging.getLogger("zurau.rest_proxy")

PROPAGATED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_AUTHENTICATION_FAILED = KAFKA_AUTHENTICATION_ERROR
_ANY_USER = frozenset({"*", "**"})

try:  # crypt(3) for Jetty's CRYPT: passwords; the module is gone from Python 3.13
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt as _crypt_module
    _crypt: Callable[[str, str], str | None] | None = _crypt_module.crypt
except ImportError:  # pragma: no cover - depends on the Python version
    _crypt = None


# ---------------------------------------------------------------------------- credentials
def deobfuscate(text: str) -> str:
    """Jetty's ``OBF:`` obfuscation undone (``Password.deobfuscate``): groups of four base-36
    digits per byte, or ``U`` and four digits for a byte of a multi-byte character."""
    s = text[4:] if text.startswith("OBF:") else text
    out = bytearray()
    i = 0
    while i < len(s):
        if s[i] == "U":
            group = s[i + 1 : i + 5]
            if len(group) != 4:
                raise ValueError("truncated OBF: password")
            out.append((int(group, 36) >> 8) & 0xFF)
            i += 5
        else:
            group = s[i : i + 4]
            if len(group) != 4:
                raise ValueError("truncated OBF: password")
            n = int(group, 36)
            out.append(((n // 256 + n % 256 - 254) // 2) & 0xFF)
            i += 4
    return out.decode("utf-8")


def _password_bytes(password: str) -> bytes:
    """The bytes Jetty digests (ISO-8859-1 where it can, else UTF-8)."""
    try:
        return password.encode("iso-8859-1")
    except UnicodeEncodeError:
        return password.encode("utf-8")


@dataclass(frozen=True)
class Credential:
    """One user's stored password: ``kind`` is ``plain``, ``md5`` or ``crypt``; ``secret`` the
    SHA-256 of the plain password, the MD5 digest, or the crypt(3) hash."""

    kind: str
    secret: bytes

    @classmethod
    def parse(cls, stored: str) -> Credential:
        if stored.startswith("MD5:"):
            digest = bytes.fromhex(stored[4:].strip())  # ValueError when not hex
            if len(digest) != 16:
                raise ValueError("an MD5: password needs 32 hex digits")
            return cls("md5", digest)
        if stored.startswith("CRYPT:"):
            if _crypt is None:
                raise ValueError("CRYPT: passwords need Python's crypt module (Python < 3.13)")
            cooked = stored[6:].strip()
            if len(cooked) < 2:
                raise ValueError("a CRYPT: password needs its salt and hash")
            return cls("crypt", cooked.encode())
        if stored.startswith("OBF:"):
            stored = deobfuscate(stored)
        return cls("plain", hashlib.sha256(stored.encode("utf-8")).digest())

    def check(self, password: str) -> bool:
        """Whether ``password`` matches, in time that does not depend on how much of it does."""
        if self.kind == "md5":
            given = hashlib.md5(_password_bytes(password)).digest()  # noqa: S324 - Jetty's format
        elif self.kind == "crypt":
            assert _crypt is not None
            cooked = self.secret.decode()
            given = (_crypt(password, cooked) or "").encode()
        else:
            given = hashlib.sha256(password.encode("utf-8")).digest()
        return hmac.compare_digest(given, self.secret)


_NOBODY = Credential("plain", hashlib.sha256(os.urandom(16)).digest())
"""Compared against when the user is unknown, so both cases take the same time."""


@dataclass(frozen=True)
class User:
    name: str
    credential: Credential
    roles: frozenset[str]


def parse_users(props: dict[str, str], source: str) -> dict[str, User]:
    """Users from Jetty's property format (``name -> password[,role...]``); ValueError naming
    the line's user for a password that cannot be read."""
    users: dict[str, User] = {}
    for name, value in props.items():
        name = name.strip()
        if not name:
            continue
        password, _, roles = value.strip().partition(",")
        try:
            credential = Credential.parse(password.strip())
        except ValueError as e:
            raise ValueError(f"{source}: the password of user {name!r}: {e}") from None
        users[name] = User(name, credential, frozenset(r.strip() for r in roles.split(",") if r.strip()))
    return users


# ---------------------------------------------------------------------------- JAAS
_JAAS_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|("(?:[^"\\]|\\.)*")', re.S)
_JAAS_ENTRY = re.compile(r'([\w.$-]+)\s*\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}\s*;', re.S)
_JAAS_TOKEN = re.compile(r'\s*([\w.$-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;"]+)|\s*([^\s=;"]+)')


def _jaas_modules(body: str) -> list[tuple[str, dict[str, str]]]:
    """The ``(login module class, options)`` of one JAAS entry's body."""
    modules: list[tuple[str, dict[str, str]]] = []
    for statement in re.findall(r'(?:[^;"]|"(?:[^"\\]|\\.)*")+', body):
        if not statement.strip():
            continue
        words: list[str] = []
        options: dict[str, str] = {}
        for key, value, word in _JAAS_TOKEN.findall(statement):
            if key:
                if value.startswith('"'):
                    value = re.sub(r"\\(.)", r"\1", value[1:-1])
                options[key] = value
            elif word:
                words.append(word)
        if words:
            modules.append((words[0], options))
    return modules


def users_file_from_jaas(jaas_path: str, realm: str) -> str:
    """The ``file`` option of the first login module of the JAAS entry named ``realm``."""
    try:
        text = Path(jaas_path).read_text(encoding="utf-8")
    except OSError as e:
        raise RestProxyConfigError(f"java.security.auth.login.config: cannot read {jaas_path}: {e.strerror or e}") from None
    text = _JAAS_COMMENT.sub(lambda m: m.group(1) or " ", text)
    entries = {name: body for name, body in _JAAS_ENTRY.findall(text)}
    if realm not in entries:
        found = ", ".join(sorted(entries)) or "none"
        raise RestProxyConfigError(
            f"java.security.auth.login.config: {jaas_path} has no entry named {realm} "
            f"(authentication.realm); entries: {found}"
        )
    for module, options in _jaas_modules(entries[realm]):
        if "file" in options:
            if not module.endswith("PropertyFileLoginModule"):
                log.warning("JAAS entry %s: reading the users of %s from file=%s", realm, module, options["file"])
            return options["file"]
    raise RestProxyConfigError(
        f'java.security.auth.login.config: the {realm} entry of {jaas_path} names no users file (file="...")'
    )


# ---------------------------------------------------------------------------- the users file
_MISSING = (-1, -1, -1)


class UserStore:
    """The users of one file, read again when the file changes (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._signature: tuple[int, int, int] | None = None
        self._failed: tuple[int, int, int] | None = None
        self.users: dict[str, User] = {}
        self.listeners: list[Callable[[dict[str, User]], None]] = []
        try:
            self._load(self._stat())
        except (OSError, ValueError, ConfigError) as e:
            raise RestProxyConfigError(f"authentication users file: {e}") from None

    def _stat(self) -> tuple[int, int, int]:
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise OSError(f"cannot read {self.path}: {e.strerror or e}") from None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _load(self, signature: tuple[int, int, int]) -> None:
        try:
            props = load_properties(self.path)
        except OSError as e:
            raise OSError(f"cannot read {self.path}: {e.strerror or e}") from None
        self.users = parse_users(props, self.path)
        self._signature = signature

    def current(self) -> dict[str, User]:
        """The users, read again first if the file changed since."""
        try:
            signature = self._stat()
        except OSError as e:
            if self._failed != _MISSING:
                log.warning("cannot read the users file %s (keeping %d users): %s", self.path, len(self.users), e)
                self._failed = _MISSING
            return self.users
        if signature == self._signature:
            self._failed = None
            return self.users
        if signature == self._failed:
            return self.users
        try:
            self._load(signature)
        except (OSError, ValueError, ConfigError) as e:
            log.warning("the users file %s changed but cannot be used (keeping %d users): %s",
                        self.path, len(self.users), e)
            self._failed = signature
            return self.users
        self._failed = None
        log.info("read %d users from %s", len(self.users), self.path)
        for listener in self.listeners:
            listener(self.users)
        return self.users


def users_file(config: RestProxyConfig) -> str:
    if config.users_file:
        return config.users_file
    if config.jaas_config:
        return users_file_from_jaas(config.jaas_config, config.auth_realm)
    raise RestProxyConfigError(
        "authentication.method=BASIC needs its users: authentication.users.file, or "
        "java.security.auth.login.config naming a users file"
    )


# ---------------------------------------------------------------------------- per-user clients
@dataclass
class _Entry:
    password: str
    clients: ProxyClients | None = None


class UserClients:
    """Each HTTP user's own :class:`ProxyClients`, logged in to the brokers with the user's
    HTTP password (see the module docstring). :meth:`clients` is ``ProxyApi.clients_for_user``."""

    def __init__(self, config: RestProxyConfig) -> None:
        self.config = config
        self._entries: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    def remember(self, user: str, password: str) -> None:
        """The password ``user`` just authenticated with (the middleware calls this); clients
        opened with another password are replaced on next use."""
        entry = self._entries.get(user)
        if entry is None:
            self._entries[user] = _Entry(password)
        elif not hmac.compare_digest(entry.password.encode(), password.encode()):
            stale, entry.clients = entry.clients, None
            entry.password = password
            self._close_later(stale)

    def forget_missing(self, users: dict[str, User]) -> None:
        """Close the clients of users no longer in the users file."""
        for name in [n for n in self._entries if n not in users]:
            self._close_later(self._entries.pop(name).clients)

    def _close_later(self, clients: ProxyClients | None) -> None:
        if clients is None:
            return
        task = asyncio.get_running_loop().create_task(clients.close(), name="zurau-rest-proxy-close-user-clients")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _overrides(self, user: str, password: str) -> dict[str, str]:
        return {"sasl.username": user, "sasl.password": password}

    async def clients(self, user: str) -> ProxyClients:
        if self._closed:
            raise RestProxyError(503, 503, "the REST proxy is stopping")
        lock = self._locks.setdefault(user, asyncio.Lock())
        async with lock:
            entry = self._entries.get(user)
            if entry is None:  # forgotten meanwhile (the user left the users file)
                raise RestProxyError(401, 401, "Unauthorized")
            if entry.clients is not None:
                return entry.clients
            password = entry.password
            creds = self._overrides(user, password)
            cfg = self.config
            fresh = ProxyClients(
                cfg.client_config(overrides=creds),
                cfg.client_config("producer", creds),
                consumer_config=cfg.client_config("consumer", creds),
            )
            try:
                await fresh.start(strict=True)  # the broker checks the password here
            except AuthenticationError as e:
                log.info("the Kafka cluster refused the login of REST proxy user %r: %s", user, e)
                raise RestProxyError(
                    401, SASL_AUTHENTICATION_FAILED, f"the Kafka cluster refused the login of user {user}: {e}"
                ) from None
            if self._closed or self._entries.get(user) is not entry or entry.password != password:
                await fresh.close()  # the proxy stops, or the password changed while logging in
                raise RestProxyError(503, 503, "the user's credentials changed; try again")
            entry.clients = fresh
            log.info("REST proxy user %r connected to the Kafka cluster as themselves", user)
            return fresh

    @property
    def users(self) -> list[str]:
        """Users with open clients."""
        return sorted(n for n, e in self._entries.items() if e.clients is not None)

    async def close(self) -> None:
        self._closed = True
        entries, self._entries = list(self._entries.values()), {}
        for entry in entries:
            if entry.clients is not None:
                try:
                    await entry.clients.close()
                except Exception as e:  # noqa: BLE001 - stopping must go on
                    log.debug("closing a user's clients: %s", e)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def propagates_principal(config: RestProxyConfig) -> bool:
    """Whether HTTP users reach the brokers as themselves (SASL with a password mechanism)."""
    cc = config.client_config()
    return cc.security.uses_sasl and cc.security.sasl_mechanism.upper() in PROPAGATED_MECHANISMS


# ---------------------------------------------------------------------------- the middleware
def _error(status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> tuple[dict[str, Any], bytes]:
    body = json.dumps({"error_code": status, "message": message}).encode()
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ],
    }
    return start, body


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """``(user, password)`` of an ``Authorization: Basic`` header (RFC 7617), else None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        return None
    try:
        raw = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("iso-8859-1")
    user, sep, password = text.partition(":")
    if not sep or not user:
        return None
    return user, password


class BasicAuth:
    """The users, roles and realm of one proxy (see the module docstring)."""

    def __init__(self, config: RestProxyConfig, user_clients: UserClients | None = None) -> None:
        self.realm = config.auth_realm
        self.roles = frozenset(config.auth_roles)
        self.store = UserStore(users_file(config))
        self.user_clients = user_clients
        if user_clients is not None:
            self.store.listeners.append(user_clients.forget_missing)
        quoted = self.realm.replace("\\", "\\\\").replace('"', '\\"')
        self.challenge = (b"www-authenticate", f'Basic realm="{quoted}"'.encode())

    def authenticate(self, header: str | None) -> tuple[int, str | None, str]:
        """``(status, user, message)``: 200 with the user, 401 or 403 with the reason."""
        creds = parse_basic(header)
        if creds is None:
            return 401, None, "Unauthorized"
        name, password = creds
        user = self.store.current().get(name)
        ok = (user.credential if user is not None else _NOBODY).check(password)
        if user is None or not ok:
            return 401, None, "Unauthorized"
        if not (self.roles & _ANY_USER or self.roles & user.roles):
            return 403, name, f"Forbidden: user {name} has none of the roles {', '.join(sorted(self.roles))}"
        if self.user_clients is not None:
            self.user_clients.remember(name, password)
        return 200, name, ""

    async def close(self) -> None:
        if self.user_clients is not None:
            await self.user_clients.close()


class BasicAuthMiddleware:
    """Pure ASGI middleware: basic authentication of every HTTP request (module docstring)."""

    def __init__(self, app: Any, auth: BasicAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = None
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                header = value.decode("latin-1")
                break
        status, user, message = self.auth.authenticate(header)
        if status != 200:
            start, body = _error(status, message, [self.auth.challenge] if status == 401 else [])
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        scope[USER_STATE] = user
        challenge = self.auth.challenge

        async def send_with_challenge(message: dict[str, Any]) -> None:
            # a 401 from a handler (the broker refused the user's login) also names the scheme
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = list(message.get("headers", ()))
                if not any(k.lower() == b"www-authenticate" for k, _ in headers):
                    message = {**message, "headers": [*headers, challenge]}
            await send(message)

        await self.app(scope, receive, send_with_challenge)


def install(api: ProxyApi) -> Middleware | None:
    """With ``authentication.method=BASIC``: load the users (RestProxyConfigError when they
    cannot be), set ``api.clients_for_user`` when the principal propagates, register the
    authentication in ``api.services`` (closed with the proxy) and return the middleware."""
    config = api.config
    if config.auth_method != "BASIC":
        return None
    user_clients = UserClients(config) if propagates_principal(config) else None
    auth = BasicAuth(config, user_clients)
    if user_clients is not None:
        api.clients_for_user = user_clients.clients
    api.services["basic_auth"] = auth
    log.info(
        "basic authentication in realm %s with %d users from %s%s",
        auth.realm, len(auth.store.users), auth.store.path,
        "; each user reaches the cluster as themselves" if user_clients is not None else "",
    )
    return Middleware(BasicAuthMiddleware, auth=auth)


__all__ = [
    "BasicAuth",
    "BasicAuthMiddleware",
    "Credential",
    "UserClients",
    "UserStore",
    "deobfuscate",
    "install",
    "parse_basic",
    "users_file_from_jaas",
]
