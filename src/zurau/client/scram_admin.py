"""SCRAM credentials of users, over Kafka's DescribeUserScramCredentials and
AlterUserScramCredentials (what ``kafka-configs.sh --entity-type users --add-config
'SCRAM-SHA-256=[iterations=8192,password=...]'`` uses).

The password never leaves the client: an upsertion carries a random 32-byte salt, the iterations
and the salted password (PBKDF2), as Kafka's admin client sends it. Any broker accepts the
request (a KRaft broker forwards it to the active controller).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.typed_api import ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_USER_SCRAM_CREDENTIALS
from zurau.protocol.errors import KafkaError, for_code
from zurau.protocol.messages import (
    AlterUserScramCredentialsRequestDeletions,
    AlterUserScramCredentialsRequestUpsertions,
)
from zurau.protocol.sasl import ScramMechanism
from zurau.protocol.sasl.scram import MIN_ITERATIONS, salted_password


@dataclass(frozen=True)
class ScramUpsertion:
    """Set ``user``'s credential for ``mechanism`` to ``password``."""

    user: str
    mechanism: ScramMechanism
    password: str
    iterations: int = MIN_ITERATIONS


@dataclass(frozen=True)
class ScramDeletion:
    """Delete ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: ScramMechanism


def mechanism(name: str) -> ScramMechanism:
    """``SCRAM-SHA-256``/``SCRAM-SHA-512`` (case-insensitive); ValueError for anything else."""
    found = ScramMechanism.from_name(name)
    if found is ScramMechanism.UNKNOWN:
        raise ValueError(f"unknown SCRAM mechanism {name!r} (SCRAM-SHA-256 or SCRAM-SHA-512)")
    return found


class ScramAdmin:
    """``async with ScramAdmin(config) as admin``: describe and alter users' SCRAM credentials."""

    def __init__(self, config: ClientConfig | Cluster) -> None:
        self.cluster, self._owns = Cluster.of(config)

    async def __aenter__(self) -> ScramAdmin:
        await self.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._owns:
            await self.cluster.close()

    async def describe(self, users: Iterable[str] | None = None) -> dict[str, dict[ScramMechanism, int] | KafkaError]:
        """User -> {mechanism: iterations}, or the error for that user (all users when None)."""
        conn = await self.cluster.any_connection()
        call = DESCRIBE_USER_SCRAM_CREDENTIALS({"users": None if users is None else [{"name": u} for u in users]})
        resp = await conn.call(call)
        if resp["error_code"]:
            raise for_code(resp["error_code"])(resp["error_message"] or "DescribeUserScramCredentials failed")
        out: dict[str, dict[ScramMechanism, int] | KafkaError] = {}
        for r in resp["results"]:
            if r["error_code"]:
                out[r["user"]] = for_code(r["error_code"])(r["error_message"] or r["user"])
            else:
                out[r["user"]] = {ScramMechanism(c["mechanism"]): c["iterations"] for c in r["credential_infos"]}
        return out

    async def alter(
        self, upsertions: Iterable[ScramUpsertion] = (), deletions: Iterable[ScramDeletion] = ()
    ) -> dict[str, KafkaError | None]:
        """User -> None (done) or the error that refused all of that user's changes."""
        ups: list[AlterUserScramCredentialsRequestUpsertions] = []
        for u in upsertions:
            salt = secrets.token_bytes(32)
            ups.append({
                "name": u.user,
                "mechanism": int(u.mechanism),
                "iterations": u.iterations,
                "salt": salt,
                "salted_password": salted_password(u.mechanism, u.password, salt, u.iterations),
            })
        dels: list[AlterUserScramCredentialsRequestDeletions] = [{"name": d.user, "mechanism": int(d.mechanism)} for d in deletions]
        conn = await self.cluster.any_connection()
        resp = await conn.call(ALTER_USER_SCRAM_CREDENTIALS({"deletions": dels, "upsertions": ups}))
        return {
            r["user"]: for_code(r["error_code"])(r["error_message"] or r["user"]) if r["error_code"] else None
            for r in resp["results"]
        }
