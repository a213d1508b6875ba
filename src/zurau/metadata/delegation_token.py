"""Delegation tokens (KIP-48): what every node derives from a token and the secret key.

A token lives in the metadata log as a ``DelegationTokenRecord`` (:mod:`zurau.metadata.records`):
its id (a random UUID string), owner, requester and renewers (principals as ``Type:name`` strings,
``User:alice``), and its issue, max and expiration timestamps (epoch ms). Its secret is never
stored: every node computes it from ``delegation.token.secret.key`` as Kafka does,

    HMAC = HmacSHA512(key = UTF-8(secret key), message = UTF-8(token id))

and the password a client logs in with (SCRAM, username = token id) is that HMAC in standard
base64 with padding (:func:`hmac_password`), for every SCRAM mechanism.

Invariants: the HMAC of a token id depends only on the secret key, so all nodes (which must share
the key) agree on it; a token is *expired* at ``now`` when ``now`` is past its expiration or its
max timestamp (Kafka compares with ``<``: a token is still valid at the very millisecond of its
expiration).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from zurau.metadata.records import DelegationTokenRecord

USER_TYPE = "User"


def secret_key(config: Any) -> str | None:
    """``delegation.token.secret.key``, else its deprecated name ``delegation.token.master.key``;
    None when neither is set or the value is empty (delegation tokens are then disabled)."""
    for name in ("delegation.token.secret.key", "delegation.token.master.key"):
        value = config.get(name)
        if value is None:
            continue
        text = getattr(value, "value", value)
        if text:
            return str(text)
    return None


def token_hmac(secret: str, token_id: str) -> bytes:
    """The token's HMAC: HmacSHA512 of the token id under the secret key (64 bytes)."""
    return hmac.new(secret.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def hmac_password(token_hmac_bytes: bytes) -> str:
    """The SCRAM password of a token: its HMAC in base64 (as Kafka's clients and tools print it)."""
    return base64.b64encode(token_hmac_bytes).decode("ascii")


def principal(principal_type: str, name: str) -> str:
    """``Type:name``, the string form Kafka stores and compares principals in."""
    return f"{principal_type}:{name}"


def split_principal(value: str) -> tuple[str, str]:
    """(type, name) of a ``Type:name`` principal string (type ``User`` when there is no colon)."""
    kind, sep, name = value.partition(":")
    return (kind, name) if sep else (USER_TYPE, value)


def owner_or_renewer(token: DelegationTokenRecord, who: str) -> bool:
    """True when ``who`` (``Type:name``) owns the token or is one of its renewers."""
    return token.owner == who or who in token.renewers


def is_expired(token: DelegationTokenRecord, now_ms: int) -> bool:
    """True once ``now_ms`` is past the token's expiration or max timestamp."""
    return token.max_timestamp < now_ms or token.expiration_timestamp < now_ms


def find_by_hmac(
    tokens: Mapping[str, DelegationTokenRecord], secret: str, wanted: bytes
) -> DelegationTokenRecord | None:
    """The token whose HMAC is ``wanted`` (compared in constant time), or None."""
    for token in tokens.values():
        if hmac.compare_digest(token_hmac(secret, token.token_id), wanted):
            return token
    return None
