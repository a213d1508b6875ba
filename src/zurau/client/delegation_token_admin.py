"""Delegation tokens (KIP-48) over Kafka's Create/Renew/Expire/DescribeDelegationToken, as
``kafka-delegation-tokens.sh`` and the Java admin client's ``createDelegationToken`` & co use them.

A token is created over a SASL- or TLS-client-authenticated connection, for the caller or (with
CREATE_TOKENS on ``User:<owner>``, KIP-373) for another owner, and used by clients that log in
with SCRAM: user name = :attr:`DelegationToken.token_id`, password = :attr:`DelegationToken.hmac_base64`
(Java client: ``ScramLoginModule required username=... password=... tokenauth="true"``).
Renewals and expiries name the token by its HMAC. Principals are ``Type:name`` strings.

Any broker accepts these requests (a KRaft broker forwards Create/Renew/Expire to the active
controller). Errors come back as the Kafka error's exception (DelegationTokenNotFoundError ...).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.typed_api import (
    CREATE_DELEGATION_TOKEN,
    DESCRIBE_DELEGATION_TOKEN,
    EXPIRE_DELEGATION_TOKEN,
    RENEW_DELEGATION_TOKEN,
)
from zurau.protocol.errors import for_code
from zurau.protocol.messages import CreateDelegationTokenRequest, DescribeDelegationTokenRequest


def _split(principal: str) -> tuple[str, str]:
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        raise ValueError(f"a principal is Type:name (User:alice), not {principal!r}")
    return kind, name


@dataclass(frozen=True)
class DelegationToken:
    """A token as Kafka's ``DelegationToken``: its information and HMAC."""

    token_id: str
    hmac: bytes
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    expiry_timestamp_ms: int
    max_timestamp_ms: int

    @property
    def hmac_base64(self) -> str:
        """The HMAC as the SCRAM password (and ``--hmac`` of the tool)."""
        return base64.b64encode(self.hmac).decode("ascii")


def hmac_bytes(hmac: str | bytes) -> bytes:
    """An HMAC given as its base64 text (as printed) or as bytes."""
    return base64.b64decode(hmac) if isinstance(hmac, str) else bytes(hmac)


class DelegationTokenAdmin:
    """``async with DelegationTokenAdmin(config) as admin``: create, renew, expire and describe tokens."""

    def __init__(self, config: ClientConfig | Cluster) -> None:
        self.cluster, self._owns = Cluster.of(config)

    async def __aenter__(self) -> DelegationTokenAdmin:
        await self.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._owns:
            await self.cluster.close()

    async def create(
        self, *, renewers: Sequence[str] = (), max_lifetime_ms: int = -1, owner: str | None = None
    ) -> DelegationToken:
        """A new token (owner: the caller unless ``owner`` names another principal)."""
        owner_type, owner_name = _split(owner) if owner else (None, None)
        body: CreateDelegationTokenRequest = {
            "owner_principal_type": owner_type,
            "owner_principal_name": owner_name,
            "renewers": [
                {"principal_type": t, "principal_name": n} for t, n in (_split(r) for r in renewers)
            ],
            "max_lifetime_ms": max_lifetime_ms,
        }
        conn = await self.cluster.any_connection()
        resp = await conn.call(CREATE_DELEGATION_TOKEN(body))
        if resp["error_code"]:
            raise for_code(resp["error_code"])("CreateDelegationToken failed")
        owner_text = f"{resp['principal_type']}:{resp['principal_name']}"
        requester = (
            f"{resp['token_requester_principal_type']}:{resp['token_requester_principal_name']}"
            if resp.get("token_requester_principal_name")
            else owner_text
        )
        return DelegationToken(
            resp["token_id"],
            bytes(resp["hmac"]),
            owner_text,
            requester,
            tuple(renewers),
            resp["issue_timestamp_ms"],
            resp["expiry_timestamp_ms"],
            resp["max_timestamp_ms"],
        )

    async def renew(self, hmac: str | bytes, renew_period_ms: int = -1) -> int:
        """Renew the token with this HMAC; its new expiry timestamp (epoch ms)."""
        conn = await self.cluster.any_connection()
        resp = await conn.call(
            RENEW_DELEGATION_TOKEN({"hmac": hmac_bytes(hmac), "renew_period_ms": renew_period_ms})
        )
        if resp["error_code"]:
            raise for_code(resp["error_code"])("RenewDelegationToken failed")
        return resp["expiry_timestamp_ms"]

    async def expire(self, hmac: str | bytes, expiry_time_period_ms: int = -1) -> int:
        """Expire the token with this HMAC after the period (negative: now, removing it); its
        expiry timestamp (epoch ms)."""
        conn = await self.cluster.any_connection()
        call = EXPIRE_DELEGATION_TOKEN(
            {"hmac": hmac_bytes(hmac), "expiry_time_period_ms": expiry_time_period_ms}
        )
        resp = await conn.call(call)
        if resp["error_code"]:
            raise for_code(resp["error_code"])("ExpireDelegationToken failed")
        return resp["expiry_timestamp_ms"]

    async def describe(self, owners: Iterable[str] | None = None) -> list[DelegationToken]:
        """The tokens the caller may see, of ``owners`` (owned or renewed by; None: all)."""
        body: DescribeDelegationTokenRequest = {
            "owners": None
            if owners is None
            else [{"principal_type": t, "principal_name": n} for t, n in (_split(o) for o in owners)]
        }
        conn = await self.cluster.any_connection()
        resp = await conn.call(DESCRIBE_DELEGATION_TOKEN(body))
        if resp["error_code"]:
            raise for_code(resp["error_code"])("DescribeDelegationToken failed")
        out = []
        for t in resp["tokens"]:
            owner = f"{t['principal_type']}:{t['principal_name']}"
            requester_name = t.get("token_requester_principal_name")
            requester = f"{t['token_requester_principal_type']}:{requester_name}" if requester_name else owner
            out.append(
                DelegationToken(
                    t["token_id"],
                    bytes(t["hmac"]),
                    owner,
                    requester,
                    tuple(f"{r['principal_type']}:{r['principal_name']}" for r in t["renewers"]),
                    t["issue_timestamp"],
                    t["expiry_timestamp"],
                    t["max_timestamp"],
                )
            )
        return out
