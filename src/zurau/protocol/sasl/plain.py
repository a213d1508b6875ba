"""SASL PLAIN (RFC 4616): one token, ``authzid NUL authcid NUL passwd`` in UTF-8.

Kafka's server accepts an empty authorization id or one equal to the user name, and refuses
empty user names and passwords; :func:`parse_plain_token` applies the same rules.
"""

from __future__ import annotations

from zurau.protocol.sasl.errors import SaslError


def parse_plain_token(token: bytes) -> tuple[str, str]:
    """``(username, password)`` of a PLAIN token; :class:`SaslError` when it is malformed."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslError("Invalid SASL/PLAIN response: not UTF-8") from None
    parts = text.split("\x00")
    if len(parts) != 3:
        raise SaslError("Invalid SASL/PLAIN response: expected 3 tokens")
    authzid, username, password = parts
    if not username:
        raise SaslError("Authentication failed: username not specified")
    if not password:
        raise SaslError("Authentication failed: password not specified")
    if authzid and authzid != username:
        raise SaslError("Authentication failed: Client requested an authorization id that is different from username")
    return username, password


class PlainClient:
    """The client side: :meth:`first` is the only token; the server's (empty) answer ends it."""

    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password
        self.complete = False

    def first(self) -> bytes:
        return f"\x00{self._username}\x00{self._password}".encode()

    def step(self, server_token: bytes) -> bytes | None:
        """No further token; the exchange is complete."""
        self.complete = True
        return None
