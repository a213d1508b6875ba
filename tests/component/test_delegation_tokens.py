"""Delegation tokens (KIP-48) on a SASL_SSL broker with ACLs and ``delegation.token.secret.key``.

* alice creates a token over SASL_SSL (zurau's admin client); a confluent-kafka producer and
  consumer log in with SCRAM-SHA-256/512 as the token (user name = token id, password = its base64
  HMAC; librdkafka cannot send the ``tokenauth`` extension, so the broker's fallback recognises
  the token id) and act as alice: alice's ACLs apply, a topic she may not write stays closed;
* zurau's client with the Java form (``tokenauth="true"``) logs in too, and a token-authenticated
  connection may not create, renew, expire or describe tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
* renew extends the expiry (owner and renewers only), describe shows a token to its owner and
  renewers and to DESCRIBE_TOKENS holders, filtered by owner; CreateTokens is needed for another
  owner;
* expire (negative period) removes the token: the next SCRAM login with it fails with an
  authentication error; a token past its max lifetime fails the same way.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import KafkaError as CkError
from confluent_kafka import Producer as CkProducer
from typer.testing import CliRunner, Result

from zurau.cli.main import app
from zurau.client import AdminClient, ClientConfig, NewTopic
from zurau.client.acl_admin import AclAdmin
from zurau.client.delegation_token_admin import DelegationToken, DelegationTokenAdmin
from zurau.client.errors import AuthenticationError
from zurau.embedded import EmbeddedBroker
from zurau.protocol.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from zurau.protocol.errors import (
    DelegationTokenAuthorizationFailedError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
)

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}
TOPIC = "alice-topic"
runner = CliRunner()


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    configs = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "delegation.token.secret.key": "token-secret",
        "delegation.token.expiry.time.ms": "600000",
        "delegation.token.expiry.check.interval.ms": "500",
        "group.initial.rebalance.delay.ms": "0",
        "connection.failed.authentication.delay.ms": "0",
        "offsets.topic.num.partitions": "1",
    }
    with EmbeddedBroker(security="SASL_SSL", users=USERS, sasl_mechanism="SCRAM-SHA-256", **configs) as b:
        asyncio.run(_setup(b))
        yield b


def _cfg(b: EmbeddedBroker, user: str, **extra: str) -> ClientConfig:
    return ClientConfig.from_props({**b.client_config(user), **extra})


def _token_cfg(b: EmbeddedBroker, token: DelegationToken, mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
    props = b.client_config("alice")
    props.update(
        {"sasl.mechanism": mechanism, "sasl.username": token.token_id, "sasl.password": token.hmac_base64}
    )
    return props


async def _setup(b: EmbeddedBroker) -> None:
    def allow(principal: str, op: AclOperation, rtype: ResourceType, name: str) -> AclBinding:
        return AclBinding(rtype, name, PatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)

    async with AdminClient(_cfg(b, "admin")) as admin:
        created = await admin.create_topics([NewTopic(TOPIC, 1, 1), NewTopic("closed-topic", 1, 1)])
        assert created == {TOPIC: None, "closed-topic": None}
    async with AclAdmin(_cfg(b, "admin")) as acls:
        errors = await acls.create(
            [
                allow("User:alice", AclOperation.WRITE, ResourceType.TOPIC, TOPIC),
                allow("User:alice", AclOperation.READ, ResourceType.TOPIC, TOPIC),
                allow("User:alice", AclOperation.DESCRIBE, ResourceType.TOPIC, TOPIC),
                allow("User:alice", AclOperation.READ, ResourceType.GROUP, "alice-group"),
                allow("User:carol", AclOperation.DESCRIBE_TOKENS, ResourceType.USER, "User:alice"),
            ]
        )
        assert errors == [None] * 5


def _create(b: EmbeddedBroker, user: str, **kwargs: Any) -> DelegationToken:
    async def run() -> DelegationToken:
        async with DelegationTokenAdmin(_cfg(b, user)) as admin:
            return await admin.create(**kwargs)

    return asyncio.run(run())


def _produce(props: dict[str, str], topic: str, value: bytes) -> CkError | None:
    """Deliver one record; the delivery error (None: delivered)."""
    errors: list[CkError | None] = []
    producer = CkProducer({**props, "message.timeout.ms": 10000, "enable.idempotence": False})
    producer.produce(topic, value, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    return errors[0] if errors else CkError(CkError._MSG_TIMED_OUT)


def _login_error(props: dict[str, str]) -> CkError | None:
    """The error a fresh librdkafka client meets when connecting (None: it connected)."""
    seen: list[CkError] = []
    consumer = CkConsumer({**props, "group.id": "probe", "error_cb": seen.append})
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            consumer.poll(0.1)  # serves error_cb
            if seen:
                return seen[0]
            try:
                consumer.list_topics(timeout=0.5)
                return None
            except Exception:
                continue
        return seen[0] if seen else CkError(CkError._TIMED_OUT)
    finally:
        consumer.close()


def test_confluent_kafka_produces_and_consumes_as_the_token_owner(broker: EmbeddedBroker) -> None:
    token = _create(broker, "alice")
    assert token.owner == "User:alice" and token.requester == "User:alice"
    assert len(token.hmac) == 64 and token.expiry_timestamp_ms <= token.max_timestamp_ms
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        props = _token_cfg(broker, token, mechanism)
        assert _produce(props, TOPIC, f"via {mechanism}".encode()) is None
    denied = _produce(_token_cfg(broker, token), "closed-topic", b"x")
    assert denied is not None and denied.code() == CkError.TOPIC_AUTHORIZATION_FAILED

    consumer = CkConsumer(
        {**_token_cfg(broker, token), "group.id": "alice-group", "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe([TOPIC])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value() or b"")
    finally:
        consumer.close()
    assert sorted(got) == [b"via SCRAM-SHA-256", b"via SCRAM-SHA-512"]


def test_token_connection_cannot_manage_tokens_and_java_form_logs_in(broker: EmbeddedBroker) -> None:
    token = _create(broker, "alice")
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{token.token_id}" password="{token.hmac_base64}" tokenauth="true";'
    )
    base = {k: v for k, v in broker.client_config("alice").items() if not k.startswith("sasl.")}
    java_form = ClientConfig.from_props({**base, "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas})
    fallback = ClientConfig.from_props(_token_cfg(broker, token))

    async def run() -> None:
        for cfg in (java_form, fallback):
            async with DelegationTokenAdmin(cfg) as admin:
                with pytest.raises(DelegationTokenRequestNotAllowedError):
                    await admin.create()
                with pytest.raises(DelegationTokenRequestNotAllowedError):
                    await admin.renew(token.hmac)
                with pytest.raises(DelegationTokenRequestNotAllowedError):
                    await admin.describe()
            async with AdminClient(cfg) as client:
                assert TOPIC in await client.list_topics()

    asyncio.run(run())


def test_renew_describe_and_create_for_another_owner(broker: EmbeddedBroker) -> None:
    token = _create(broker, "alice", renewers=["User:bob"], max_lifetime_ms=3_600_000)
    assert token.max_timestamp_ms - token.issue_timestamp_ms == 3_600_000

    async def run() -> None:
        async with DelegationTokenAdmin(_cfg(broker, "bob")) as bob:
            renewed = await bob.renew(token.hmac_base64, 1_000_000)
            assert token.expiry_timestamp_ms <= renewed <= token.max_timestamp_ms
            assert [t.token_id for t in await bob.describe(["User:alice"])] == [token.token_id]
            with pytest.raises(DelegationTokenAuthorizationFailedError):
                await bob.create(owner="User:alice")
        async with DelegationTokenAdmin(_cfg(broker, "carol")) as carol:
            with pytest.raises(DelegationTokenOwnerMismatchError):
                await carol.renew(token.hmac)
            seen = {t.token_id: t for t in await carol.describe()}  # DESCRIBE_TOKENS on User:alice
            assert token.token_id in seen and seen[token.token_id].hmac == token.hmac
            assert seen[token.token_id].renewers == ("User:bob",)
            assert await carol.describe(["User:nobody"]) == []
        async with DelegationTokenAdmin(_cfg(broker, "alice")) as alice:
            mine = {t.token_id for t in await alice.describe(["User:alice"])}
            assert token.token_id in mine
            assert await alice.describe([]) == []
            capped = await alice.renew(token.hmac, 10**12)  # capped at the token's max timestamp
            assert capped <= token.max_timestamp_ms
        async with DelegationTokenAdmin(_cfg(broker, "admin")) as admin:  # a super user has CreateTokens
            for_alice = await admin.create(owner="User:alice")
            assert (for_alice.owner, for_alice.requester) == ("User:alice", "User:admin")
        async with DelegationTokenAdmin(_cfg(broker, "bob")) as bob:
            described = {t.token_id: t for t in await bob.describe()}
            assert for_alice.token_id not in described  # not bob's, no ACL

    asyncio.run(run())


def test_expired_tokens_no_longer_log_in(broker: EmbeddedBroker) -> None:
    token = _create(broker, "alice")
    props = _token_cfg(broker, token)
    assert _login_error(props) is None

    async def expire() -> int:
        async with DelegationTokenAdmin(_cfg(broker, "alice")) as alice:
            return await alice.expire(token.hmac, -1)

    assert asyncio.run(expire()) > 0
    failed = _login_error(props)
    assert failed is not None and failed.code() == CkError._AUTHENTICATION, failed

    short = _create(broker, "alice", max_lifetime_ms=1500)
    assert _login_error(_token_cfg(broker, short)) is None
    time.sleep(max(0.0, (short.max_timestamp_ms - time.time() * 1000) / 1000) + 0.2)
    failed = _login_error(_token_cfg(broker, short))
    assert failed is not None and failed.code() == CkError._AUTHENTICATION, failed

    async def zurau_login() -> None:
        async with AdminClient(ClientConfig.from_props(_token_cfg(broker, short))) as client:
            await client.list_topics()

    with pytest.raises(AuthenticationError):
        asyncio.run(zurau_login())
    # the controller's periodic check (every 500 ms here) removes both tokens from the metadata
    deadline = time.monotonic() + 10
    tokens = broker.broker.controller.image.delegation_tokens
    while (token.token_id in tokens or short.token_id in tokens) and time.monotonic() < deadline:
        time.sleep(0.1)
        tokens = broker.broker.controller.image.delegation_tokens
    assert token.token_id not in tokens and short.token_id not in tokens


def test_unique_token_ids(broker: EmbeddedBroker) -> None:
    ids = {_create(broker, "alice").token_id for _ in range(3)}
    assert len(ids) == 3 and all(uuid.UUID(i) for i in ids)


def test_cli_creates_renews_describes_and_expires(broker: EmbeddedBroker, tmp_path: Path) -> None:
    props = tmp_path / "alice.properties"
    props.write_text(
        "".join(f"{k}={v}\n" for k, v in broker.client_config("alice").items() if k != "bootstrap.servers")
    )
    common = ["--bootstrap-server", broker.bootstrap_servers, "--command-config", str(props)]

    def cli(*args: str) -> Result:
        return runner.invoke(app, ["delegation-tokens", *args, *common])

    created = cli(
        "--create", "--renewer-principal", "User:bob", "--max-life-time-period", "3600000", "--format", "json"
    )
    assert created.exit_code == 0, created.output
    token = json.loads(created.stdout)
    assert token["owner"] == "User:alice" and token["renewers"] == ["User:bob"]
    plain = cli("--create")
    assert plain.exit_code == 0 and "Created delegation token with tokenId : " in plain.stdout, plain.output
    assert plain.stdout.splitlines()[3].split() == [
        "TOKENID",
        "HMAC",
        "OWNER",
        "REQUESTER",
        "RENEWERS",
        "ISSUEDATE",
        "EXPIRYDATE",
        "MAXDATE",
    ]
    renewed = cli("--renew", "--hmac", token["hmac"], "--renew-time-period", "60000")
    assert renewed.exit_code == 0 and "Completed renew operation. New expiry date : " in renewed.stdout, (
        renewed.output
    )
    described = cli("--describe", "--owner-principal", "User:bob", "--format", "json")
    bobs = json.loads(described.stdout)  # tokens bob owns or renews (an earlier test made one too)
    assert token["token_id"] in [t["token_id"] for t in bobs] and all(
        "User:bob" in t["renewers"] for t in bobs
    )
    listed = cli("--describe")
    assert "Total number of tokens : " in listed.stdout and token["token_id"] in listed.stdout
    expired = cli("--expire", "--hmac", token["hmac"])
    assert expired.exit_code == 0 and "Completed expire operation." in expired.stdout, expired.output
    gone = cli("--renew", "--hmac", token["hmac"])
    assert gone.exit_code == 1 and "DELEGATION_TOKEN_NOT_FOUND" in gone.output.upper().replace(" ", "_"), (
        gone.output
    )
    usage = cli("--create", "--renew")
    assert usage.exit_code == 1 and "exactly one of" in usage.output


def test_acls_cli_grants_describe_on_a_token(broker: EmbeddedBroker, tmp_path: Path) -> None:
    token = _create(broker, "admin")
    props = tmp_path / "admin.properties"
    props.write_text(
        "".join(f"{k}={v}\n" for k, v in broker.client_config("admin").items() if k != "bootstrap.servers")
    )

    async def bob_sees() -> set[str]:
        async with DelegationTokenAdmin(_cfg(broker, "bob")) as bob:
            return {t.token_id for t in await bob.describe()}

    assert token.token_id not in asyncio.run(bob_sees())
    common = ["--bootstrap-server", broker.bootstrap_servers, "--command-config", str(props)]
    added = runner.invoke(
        app,
        [
            "acls",
            "--add",
            "--allow-principal",
            "User:bob",
            "--operation",
            "Describe",
            "--delegation-token",
            token.token_id,
            *common,
        ],
    )
    assert added.exit_code == 0, added.output
    assert token.token_id in asyncio.run(bob_sees())
    by_user = runner.invoke(
        app,
        [
            "acls",
            "--add",
            "--allow-principal",
            "User:bob",
            "--operation",
            "CreateTokens",
            "--user-principal",
            "User:carol",
            *common,
        ],
    )
    assert by_user.exit_code == 0, by_user.output

    async def bob_creates_for_carol() -> DelegationToken:
        async with DelegationTokenAdmin(_cfg(broker, "bob")) as bob:
            return await bob.create(owner="User:carol")

    made = asyncio.run(bob_creates_for_carol())
    assert (made.owner, made.requester) == ("User:carol", "User:bob")
