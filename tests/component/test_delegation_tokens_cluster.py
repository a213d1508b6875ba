"""Delegation tokens on a 3-node KRaft cluster (SASL_PLAINTEXT): Create, Renew and Expire sent to a
node that is not the active controller are forwarded to it, the token reaches every node's image
through the metadata log, and a token login works on every node.

* a follower checks owner/renewer itself before forwarding a renewal (the forwarded request does
  not carry the caller): a stranger gets DELEGATION_TOKEN_OWNER_MISMATCH, a renewer succeeds, also
  right after the token was created, when the follower may not have replicated it yet (it then
  checks against the active controller's tokens);
* a token created through a follower for another owner (by a super user) records the owner as
  requester too (the forwarded CreateDelegationToken v3 has no requester field: see
  :meth:`zurau.metadata.raft_controller_channel.RaftControllerChannel.create_delegation_token`);
* ExpireDelegationToken through a follower removes the token everywhere: logins fail on every node;
* the active controller's periodic check removes a token past its max lifetime on every node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from zurau.client import AdminClient, ClientConfig
from zurau.client.delegation_token_admin import DelegationToken, DelegationTokenAdmin
from zurau.client.errors import AuthenticationError
from zurau.embedded import EmbeddedCluster
from zurau.protocol.errors import DelegationTokenOwnerMismatchError

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    configs: dict[str, Any] = {  # Any: passed as keyword arguments (config names)
        "delegation.token.secret.key": "cluster-secret",
        "delegation.token.expiry.check.interval.ms": "300",
        "super.users": "User:admin",
        "connection.failed.authentication.delay.ms": "0",
    }
    with EmbeddedCluster(
        3, security="SASL_PLAINTEXT", users=USERS, sasl_mechanism="SCRAM-SHA-256", **configs
    ) as c:
        deadline = time.monotonic() + 30
        while c.controller_id < 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.controller_id > 0
        yield c


def _props(c: EmbeddedCluster, node: int, user: str) -> dict[str, str]:
    return {**c.client_config(user), "bootstrap.servers": c.node(node).bootstrap_servers}


def _follower(c: EmbeddedCluster) -> int:
    return next(i for i in (1, 2, 3) if i != c.controller_id)


def _eventually(check: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


async def _login(c: EmbeddedCluster, node: int, token: DelegationToken) -> None:
    props = {**_props(c, node, "alice"), "sasl.username": token.token_id, "sasl.password": token.hmac_base64}
    async with AdminClient(ClientConfig.from_props(props)) as admin:
        await admin.list_topics()


def test_forwarded_token_operations(cluster: EmbeddedCluster) -> None:
    via = _follower(cluster)

    def admin(user: str) -> DelegationTokenAdmin:
        return DelegationTokenAdmin(ClientConfig.from_props(_props(cluster, via, user)))

    def on_every_node(token_id: str) -> bool:
        return all(token_id in cluster.node(i).controller.image.delegation_tokens for i in (1, 2, 3))

    async def run() -> None:
        async with admin("alice") as alice:
            token = await alice.create(renewers=["User:bob"])
            short = await alice.create(max_lifetime_ms=1500)
        assert token.owner == token.requester == "User:alice"
        _eventually(lambda: on_every_node(token.token_id))
        for node in (1, 2, 3):
            await _login(cluster, node, token)
        async with admin("carol") as carol:
            with pytest.raises(DelegationTokenOwnerMismatchError):
                await carol.renew(token.hmac)
        async with admin("bob") as bob:
            assert token.expiry_timestamp_ms <= await bob.renew(token.hmac) <= token.max_timestamp_ms
        # Renewed and expired at once through the other follower, which may not have replicated
        # the token yet: it checks the caller against the active controller's tokens then.
        other = next(i for i in (1, 2, 3) if i not in (via, cluster.controller_id))
        for _ in range(5):
            async with admin("alice") as alice:
                fresh = await alice.create(renewers=["User:bob"])
            elsewhere = ClientConfig.from_props(_props(cluster, other, "bob"))
            async with DelegationTokenAdmin(elsewhere) as bob_elsewhere:
                assert await bob_elsewhere.renew(fresh.hmac) > 0
            elsewhere = ClientConfig.from_props(_props(cluster, other, "carol"))
            async with DelegationTokenAdmin(elsewhere) as carol_elsewhere:
                with pytest.raises(DelegationTokenOwnerMismatchError):
                    await carol_elsewhere.expire(fresh.hmac, -1)
        async with admin("admin") as super_user:
            for_alice = await super_user.create(owner="User:alice")
        assert (for_alice.owner, for_alice.requester) == ("User:alice", "User:alice")
        async with admin("alice") as alice:
            assert await alice.expire(token.hmac, -1) > 0
        _eventually(
            lambda: (
                not any(
                    token.token_id in cluster.node(i).controller.image.delegation_tokens for i in (1, 2, 3)
                )
            )
        )
        for node in (1, 2, 3):
            with pytest.raises(AuthenticationError):
                await _login(cluster, node, token)
        # past its max lifetime, the active controller's check removes the short token everywhere
        _eventually(
            lambda: (
                not any(
                    short.token_id in cluster.node(i).controller.image.delegation_tokens for i in (1, 2, 3)
                )
            )
        )

    asyncio.run(run())
