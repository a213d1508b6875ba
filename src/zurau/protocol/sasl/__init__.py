"""SASL mechanisms as sans-I/O state machines, shared by the broker (server side) and
:mod:`zurau.client` (client side): PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and
OAUTHBEARER (RFC 7628; :mod:`.oauthbearer`).

Each side takes the peer's token (``bytes``) and returns the next token to send; a failure raises
:class:`SaslError` with a message safe to show the peer. Nothing here touches sockets or clocks.
"""

from zurau.protocol.sasl.errors import SaslError
from zurau.protocol.sasl.plain import PlainClient, parse_plain_token
from zurau.protocol.sasl.scram import (
    SCRAM_MECHANISMS,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    scram_credential,
)

__all__ = [
    "SCRAM_MECHANISMS",
    "PlainClient",
    "SaslError",
    "ScramClient",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "parse_plain_token",
    "scram_credential",
]
