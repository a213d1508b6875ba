"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them, without channel binding.

Messages (attribute=value pairs joined by commas):

* client-first: ``n,[a=authzid],n=<user>,r=<client nonce>[,<key>=<value>...]`` (the ``n,,`` gs2
  header: no binding). The ``key=value`` pairs after the nonce are Kafka's SCRAM extensions
  (``ScramExtensions``; keys are alphanumeric): ``tokenauth=true`` says the user name is a
  delegation token id (KIP-48); the broker decides what they mean (:attr:`ClientFirst.extensions`);
* server-first: ``r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>``;
* client-final: ``c=<base64 gs2 header>,r=<nonce>,p=<base64 proof>``;
* server-final: ``v=<base64 server signature>`` or ``e=<error>``.

Keys: ``SaltedPassword = PBKDF2-HMAC(password, salt, iterations)``, ``ClientKey = HMAC(SaltedPassword,
"Client Key")``, ``StoredKey = H(ClientKey)``, ``ServerKey = HMAC(SaltedPassword, "Server Key")``. The
server keeps only ``(salt, StoredKey, ServerKey, iterations)`` (:class:`ScramCredential`), as Kafka's
``UserScramCredentialRecord`` does; it checks a proof by recovering ``ClientKey = proof XOR
HMAC(StoredKey, AuthMessage)`` and comparing ``H(ClientKey)`` with ``StoredKey``.

User names are escaped in messages (``,`` as ``=2C``, ``=`` as ``=3D``). Kafka's bounds on
iterations (4096..16384) are :data:`MIN_ITERATIONS`/:data:`MAX_ITERATIONS`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from enum import IntEnum

from zurau.protocol.sasl.errors import SaslError

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class ScramMechanism(IntEnum):
    """Kafka's ScramMechanism ids (as in UserScramCredentialRecord and the admin APIs)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL name: ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``."""
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism:
        """The mechanism for a SASL name (case-insensitive); UNKNOWN for anything else."""
        for m in (cls.SCRAM_SHA_256, cls.SCRAM_SHA_512):
            if m.mechanism_name == name.upper():
                return m
        return cls.UNKNOWN


SCRAM_MECHANISMS = {m.mechanism_name: m for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores for one user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(mech: ScramMechanism, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, mech.hash_name).digest()


def salted_password(mech: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """``Hi(password, salt, i)`` of RFC 5802 (PBKDF2 with the mechanism's HMAC)."""
    return hashlib.pbkdf2_hmac(mech.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted(mech: ScramMechanism, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """The stored credential for a salted password (what AlterUserScramCredentials carries)."""
    client_key = _hmac(mech, salted, b"Client Key")
    stored_key = hashlib.new(mech.hash_name, client_key).digest()
    server_key = _hmac(mech, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def scram_credential(
    mech: ScramMechanism, password: str, *, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A new credential with a random 32-byte salt unless ``salt`` is given."""
    salt = secrets.token_bytes(32) if salt is None else salt
    return credential_from_salted(mech, salted_password(mech, password, salt, iterations), salt, iterations)


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        if name[i] == "=":
            code = name[i : i + 3]
            if code == "=2C":
                out.append(",")
            elif code == "=3D":
                out.append("=")
            else:
                raise SaslError(f"Invalid user name encoding: {name!r}")
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    pairs = []
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslError(f"Invalid SCRAM {what} message")
        pairs.append((key, value))
    return pairs


def _b64decode(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SaslError(f"Invalid SCRAM {what}: not base64") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _nonce() -> str:
    return secrets.token_urlsafe(24)


@dataclass(frozen=True, slots=True)
class ClientFirst:
    gs2_header: str
    username: str
    nonce: str
    bare: str
    extensions: dict[str, str] = field(default_factory=dict)

    @property
    def token_auth(self) -> bool:
        """The ``tokenauth`` extension is ``true`` (case-insensitive, as Java's parseBoolean)."""
        return self.extensions.get("tokenauth", "").lower() == "true"


def parse_client_first(token: bytes) -> ClientFirst:
    """Split a client-first message; refuses channel binding (``p=``) and malformed ones."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslError("Invalid SCRAM client first message: not UTF-8") from None
    flag, sep1, rest = text.partition(",")
    authzid, sep2, bare = rest.partition(",")
    if not sep1 or not sep2 or flag not in ("n", "y"):
        raise SaslError("Invalid SCRAM client first message (channel binding is not supported)")
    if authzid and not authzid.startswith("a="):
        raise SaslError("Invalid SCRAM client first message: bad authorization id")
    parts = bare.split(",")
    attrs = _attributes(",".join(parts[:2]), "client first")
    if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
        raise SaslError("Invalid SCRAM client first message: expected n=<user>,r=<nonce>")
    extensions: dict[str, str] = {}
    for part in parts[2:]:
        key, sep, value = part.partition("=")
        if not sep or not key.isalnum():
            raise SaslError("Invalid SCRAM client first message: bad extension")
        extensions[key] = value
    username = _unescape(attrs[0][1])
    if authzid and _unescape(authzid[2:]) != username:
        raise SaslError("Authentication failed: authorization id differs from the user name")
    return ClientFirst(f"{flag},{authzid},", username, attrs[1][1], bare, extensions)


class ScramServer:
    """The server side of one exchange.

    :meth:`first` takes the client-first message and the named user's credential (None when
    the user has none) and returns the server-first; :meth:`final` checks the client-final's proof
    and returns the server-final. An unknown user still gets a server-first (with a random salt),
    so an unknown user and a wrong password fail the same way, at the proof.
    """

    def __init__(self, mechanism: ScramMechanism, *, server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._server_nonce = server_nonce
        self._first: ClientFirst | None = None
        self._server_first = ""
        self._credential: ScramCredential | None = None
        self.username: str | None = None  # set once the exchange succeeds
        self.complete = False

    @property
    def requested_user(self) -> str | None:
        """The user named in the client-first message (not yet authenticated)."""
        return self._first.username if self._first is not None else None

    def first(self, token: bytes, credential: ScramCredential | None) -> bytes:
        """Answer the client-first ``token``; ``credential`` is the named user's (None: unknown)."""
        if self._first is not None:
            raise SaslError("Unexpected SCRAM client first message")
        first = parse_client_first(token)
        self._first = first
        self._credential = credential
        if credential is None:
            fake = scram_credential(self.mechanism, secrets.token_urlsafe(16), iterations=MIN_ITERATIONS)
            salt, iterations = fake.salt, fake.iterations
        else:
            salt, iterations = credential.salt, credential.iterations
        nonce = first.nonce + (self._server_nonce or _nonce())
        self._server_first = f"r={nonce},s={_b64(salt)},i={iterations}"
        return self._server_first.encode()

    def final(self, token: bytes) -> bytes:
        """Check the client-final ``token``'s proof; the server-final message on success."""
        first = self._first
        if first is None or self.complete:
            raise SaslError("Unexpected SCRAM client final message")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslError("Invalid SCRAM client final message: not UTF-8") from None
        attrs = _attributes(text, "client final")
        values = dict(attrs)
        if [k for k, _ in attrs][:2] != ["c", "r"] or attrs[-1][0] != "p":
            raise SaslError("Invalid SCRAM client final message: expected c=,r=,...,p=")
        if _b64decode(values["c"], "channel binding") != first.gs2_header.encode():
            raise SaslError("Invalid SCRAM client final message: channel binding does not match")
        expected_nonce = self._server_first.split(",", 1)[0][2:]
        # Kafka checks only that the nonce ends with the server-first's (librdkafka before 2.1
        # sends the client nonce twice); the proof covers the message as sent either way.
        if not values["r"].endswith(expected_nonce):
            raise SaslError("Invalid SCRAM client final message: nonce does not match")
        proof = _b64decode(values["p"], "proof")
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{first.bare},{self._server_first},{without_proof}".encode()
        cred = self._credential
        mech = self.mechanism
        if cred is None or len(proof) != len(cred.stored_key):
            raise SaslError("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                            + mech.mechanism_name)
        client_signature = _hmac(mech, cred.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(mech.hash_name, client_key).digest(), cred.stored_key):
            raise SaslError("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                            + mech.mechanism_name)
        self.complete = True
        self.username = first.username
        return f"v={_b64(_hmac(mech, cred.server_key, auth_message))}".encode()


class ScramClient:
    """The client side: :meth:`first`, then :meth:`step` with server-first (returns client-final),
    then :meth:`step` with server-final (verifies the server's signature, returns None)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        *,
        nonce: str | None = None,
        extensions: dict[str, str] | None = None,
    ) -> None:
        """``extensions``: SCRAM extensions for the client-first message (``{"tokenauth": "true"}``
        to log in with a delegation token: its id as ``username``, its base64 HMAC as ``password``)."""
        if mechanism is ScramMechanism.UNKNOWN:
            raise SaslError("unknown SCRAM mechanism")
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or _nonce()
        tail = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        self._bare = f"n={_escape(username)},r={self._nonce}{tail}"
        self._server_signature: bytes | None = None
        self.complete = False

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def step(self, server_token: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._final(server_token)
        text = server_token.decode("utf-8", "replace")
        if text.startswith("e="):
            raise SaslError(f"SCRAM authentication failed: {text[2:]}")
        if not text.startswith("v=") or not hmac.compare_digest(
            _b64decode(text[2:].split(",", 1)[0], "server signature"), self._server_signature
        ):
            raise SaslError("SCRAM server signature does not match: the server does not know the password")
        self.complete = True
        return None

    def _final(self, server_token: bytes) -> bytes:
        server_first = server_token.decode("utf-8", "replace")
        values = dict(_attributes(server_first, "server first"))
        nonce, salt_b64, iterations_s = values.get("r", ""), values.get("s", ""), values.get("i", "")
        if not nonce.startswith(self._nonce) or not iterations_s.isdigit():
            raise SaslError("Invalid SCRAM server first message")
        iterations = int(iterations_s)
        if iterations < MIN_ITERATIONS:
            raise SaslError(f"SCRAM server asks for {iterations} iterations, fewer than {MIN_ITERATIONS}")
        mech = self.mechanism
        salted = salted_password(mech, self._password, _b64decode(salt_b64, "salt"), iterations)
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        auth_message = f"{self._bare},{server_first},{without_proof}".encode()
        client_key = _hmac(mech, salted, b"Client Key")
        stored_key = hashlib.new(mech.hash_name, client_key).digest()
        signature = _hmac(mech, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = _hmac(mech, _hmac(mech, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()
