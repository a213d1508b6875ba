"""Delegation tokens (KIP-48) without sockets: the HMAC and SCRAM password, the records in Kafka's
layout, the controller's rules (create, renew, expire, sweep, disabled), the image and snapshots,
SCRAM with the ``tokenauth`` extension and the fallback without it, and the connection checks."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from types import SimpleNamespace
from typing import Any

import pytest

from zurau.broker.auth.delegation_token_cache import DelegationTokenCache
from zurau.broker.auth.listener_security import listener_security
from zurau.broker.auth.session import SecuritySession
from zurau.broker.handlers._tokens import token_requests_allowed
from zurau.config import BrokerConfig
from zurau.metadata.controller.delegation_token_control import DelegationTokenControlManager
from zurau.metadata.delegation_token import hmac_password, is_expired, secret_key, token_hmac
from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import DelegationTokenRecord, RemoveDelegationTokenRecord
from zurau.metadata.snapshot import image_records
from zurau.protocol.errors import (
    DelegationTokenAuthDisabledError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    InvalidPrincipalTypeError,
    SaslAuthenticationFailedError,
)
from zurau.protocol.primitives import write_uvarint
from zurau.protocol.sasl import ScramClient, ScramMechanism, ScramServer, scram_credential
from zurau.protocol.sasl.scram import parse_client_first

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
DAY, WEEK = 86_400_000, 7 * 86_400_000


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": "/tmp/unused", **props})


def _manager(secret: str | None = "s3cret", **props: str) -> DelegationTokenControlManager:
    configs = {"delegation.token.secret.key": secret} if secret is not None else {}
    ids = iter(f"token-{i}" for i in range(100))
    return DelegationTokenControlManager(_config(**configs, **props), lambda: next(ids))


# ---------------------------------------------------------------------------- HMAC and password


def test_hmac_is_hmac_sha512_of_the_token_id_and_the_password_its_base64() -> None:
    mac = token_hmac("secret", "8f0bd1b5-2f5f-4b3e-9bb8-1d1f0d3d1d1a")
    assert mac == hmac.new(b"secret", b"8f0bd1b5-2f5f-4b3e-9bb8-1d1f0d3d1d1a", hashlib.sha512).digest()
    assert len(mac) == 64 and hmac_password(mac) == base64.b64encode(mac).decode()
    # RFC 4231 test case 2 (HMAC-SHA-512, key "Jefe"): the primitive is the standard one.
    assert (
        token_hmac("Jefe", "what do ya want for nothing?")
        .hex()
        .startswith("164b7a7bfcf819e2e395fbe73b56e0a3")
    )


def test_secret_key_and_its_deprecated_name() -> None:
    assert secret_key(_config()) is None
    assert secret_key(_config(**{"delegation.token.secret.key": ""})) is None
    assert secret_key(_config(**{"delegation.token.master.key": "m"})) == "m"
    assert (
        secret_key(_config(**{"delegation.token.secret.key": "s", "delegation.token.master.key": "m"})) == "s"
    )
    cfg = _config()
    assert (cfg.get("delegation.token.expiry.time.ms"), cfg.get("delegation.token.max.lifetime.ms")) == (
        DAY,
        WEEK,
    )
    assert cfg.get("delegation.token.expiry.check.interval.ms") == 3_600_000


# ---------------------------------------------------------------------------- records


def write_compact_string(out: bytearray, text: str) -> None:
    """A compact string as Kafka's flexible encoding writes it: uvarint(length + 1), UTF-8 bytes."""
    data = text.encode()
    write_uvarint(out, len(data) + 1)
    out += data


def test_records_have_kafkas_layout_and_round_trip() -> None:
    rec = DelegationTokenRecord("tid", "User:alice", "User:admin", ("User:bob", "User:carol"), 1, 3, 2)
    expected = bytearray()
    for n in (1, 10, 0):  # frame version, DelegationTokenRecord (10), version 0
        write_uvarint(expected, n)
    write_compact_string(expected, "User:alice")
    write_compact_string(expected, "User:admin")
    write_uvarint(expected, 3)
    write_compact_string(expected, "User:bob")
    write_compact_string(expected, "User:carol")
    expected += (1).to_bytes(8, "big") + (3).to_bytes(8, "big") + (2).to_bytes(8, "big")
    write_compact_string(expected, "tid")
    expected.append(0)  # no tagged fields
    assert encode_record(rec) == bytes(expected)
    assert decode_record(encode_record(rec)) == rec
    removal = RemoveDelegationTokenRecord("tid")
    assert encode_record(removal)[:3] == b"\x01\x1a\x00" and decode_record(encode_record(removal)) == removal


# ---------------------------------------------------------------------------- controller


def test_create_defaults_caps_and_checks() -> None:
    m = _manager()
    image = MetadataImage("c")
    made = m.create(image, "User:alice", "User:alice", ["User:bob"], -1, 1_000)
    r = made.response
    assert (
        r["error_code"] == 0 and r["token_id"] == "token-0" and r["hmac"] == token_hmac("s3cret", "token-0")
    )
    assert (r["issue_timestamp_ms"], r["expiry_timestamp_ms"], r["max_timestamp_ms"]) == (
        1_000,
        1_000 + DAY,
        1_000 + WEEK,
    )
    assert made.records == [
        DelegationTokenRecord(
            "token-0", "User:alice", "User:alice", ("User:bob",), 1_000, 1_000 + WEEK, 1_000 + DAY
        )
    ]
    short = m.create(image, "User:alice", "User:admin", [], 5_000, 0).response
    assert (short["max_timestamp_ms"], short["expiry_timestamp_ms"]) == (
        5_000,
        5_000,
    )  # expiry never past max
    assert (short["principal_name"], short["token_requester_principal_name"]) == ("alice", "admin")
    long = m.create(image, "User:alice", "User:alice", [], 10 * WEEK, 0).response
    assert long["max_timestamp_ms"] == WEEK  # a longer request is capped by the config
    bad = m.create(image, "User:alice", "User:alice", ["Group:x"], -1, 0)
    assert bad.response["error_code"] == InvalidPrincipalTypeError.code and bad.records == []
    off = _manager(None).create(image, "User:alice", "User:alice", [], -1, 0)
    assert off.response["error_code"] == DelegationTokenAuthDisabledError.code and off.records == []


def test_renew_expire_and_sweep() -> None:
    m = _manager(**{"delegation.token.expiry.time.ms": "1000", "delegation.token.max.lifetime.ms": "1500"})
    image = MetadataImage("c")
    created = m.create(image, "User:alice", "User:alice", ["User:bob"], -1, 0)
    image = image.apply(created.records)
    mac = created.response["hmac"]
    token = image.delegation_tokens["token-0"]
    assert token.expiration_timestamp == 1000 and not is_expired(token, 1000) and is_expired(token, 1001)

    assert m.renew(image, b"nope", -1, "User:alice", 10).response == (DelegationTokenNotFoundError.code, -1)
    assert m.renew(image, mac, -1, "User:carol", 10).response == (DelegationTokenOwnerMismatchError.code, -1)
    renewed = m.renew(image, mac, 400, "User:bob", 500)  # a renewer; shorter than the default period
    assert renewed.response == (0, 900)
    image = image.apply(renewed.records)
    assert image.delegation_tokens["token-0"].expiration_timestamp == 900
    assert m.renew(image, mac, -1, None, 850).response == (0, 1_500)  # capped at the max timestamp
    assert m.renew(image, mac, -1, "User:alice", 901).response == (DelegationTokenExpiredError.code, -1)

    assert m.expire(image, mac, -1, "User:carol", 10).response == (DelegationTokenOwnerMismatchError.code, -1)
    later = m.expire(image, mac, 100, "User:alice", 10)
    assert later.response == (0, 110)
    assert m.expire(image, mac, 100, "User:alice", 950).response == (DelegationTokenExpiredError.code, -1)
    now = m.expire(image, mac, -1, "User:alice", 950)  # a negative period removes it even when expired
    assert now.response == (0, 950) and now.records == [RemoveDelegationTokenRecord("token-0")]
    assert "token-0" not in image.apply(now.records).delegation_tokens

    second = m.create(image, "User:bob", "User:bob", [], -1, 800)
    image = image.apply(second.records)
    assert m.sweep(image, 900) == []
    assert m.sweep(image, 901) == [RemoveDelegationTokenRecord("token-0")]
    assert m.sweep(image, 1801) == [
        RemoveDelegationTokenRecord("token-0"),
        RemoveDelegationTokenRecord("token-1"),
    ]
    off = _manager(None)
    assert off.renew(image, mac, -1, "User:alice", 0).response[0] == DelegationTokenAuthDisabledError.code
    assert off.expire(image, mac, -1, "User:alice", 0).response[0] == DelegationTokenAuthDisabledError.code


def test_tokens_survive_a_snapshot() -> None:
    m = _manager()
    image = MetadataImage("c")
    for owner in ("User:alice", "User:bob"):
        image = image.apply(m.create(image, owner, owner, ["User:carol"], -1, 7).records)
    again = MetadataImage("c").apply(image_records(image))
    assert again.delegation_tokens == image.delegation_tokens and len(again.delegation_tokens) == 2


# ---------------------------------------------------------------------------- SCRAM with a token


def test_client_first_extensions() -> None:
    first = parse_client_first(b"n,,n=abc,r=xyz,tokenauth=true")
    assert (first.username, first.nonce, first.extensions, first.token_auth) == (
        "abc",
        "xyz",
        {"tokenauth": "true"},
        True,
    )
    assert not parse_client_first(b"n,,n=abc,r=xyz").token_auth
    assert (
        ScramClient(SHA256, "t", "p", nonce="n", extensions={"tokenauth": "true"}).first()
        == b"n,,n=t,r=n,tokenauth=true"
    )
    # The proof covers the client-first message with its extensions (RFC 5802 AuthMessage).
    cred = scram_credential(SHA512, "pw")
    client = ScramClient(SHA512, "t", "pw", extensions={"tokenauth": "true"})
    server = ScramServer(SHA512)
    final = client.step(server.first(client.first(), cred))
    assert final is not None
    assert client.step(server.final(final)) is None and client.complete


def _sasl_config() -> BrokerConfig:
    return BrokerConfig(
        {
            "listeners": "SASL_PLAINTEXT://:9093",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "connection.failed.authentication.delay.ms": "0",
            "delegation.token.secret.key": "s3cret",
            "log.dirs": "/tmp/unused",
        }
    )


def test_session_logs_in_with_a_token_with_and_without_the_extension() -> None:
    cfg = _sasl_config()
    security = listener_security(cfg, "SASL_PLAINTEXT")
    m = _manager()
    image = MetadataImage("c")
    start = int(time.time() * 1000)  # the session bounds its lifetime with the wall clock
    made = m.create(image, "User:alice", "User:alice", [], -1, start)
    image = image.apply(made.records)
    now = [start]
    cache = DelegationTokenCache(lambda: image, lambda: cfg, lambda: now[0])
    users = {("bob", SHA256): scram_credential(SHA256, "bob-pw")}
    password = hmac_password(made.response["hmac"])

    async def login(
        user: str, pw: str, mech: ScramMechanism, extensions: dict[str, str] | None
    ) -> SecuritySession:
        s = SecuritySession(security, lambda u, mm: users.get((u, mm)), lambda _reason: None, cache.lookup)
        s.handshake(mech.mechanism_name, 1)
        client = ScramClient(mech, user, pw, extensions=extensions)
        first = s.authenticate(client.first(), 1)
        if first["error_code"]:
            return s
        final = client.step(first["auth_bytes"])
        assert final is not None
        done = s.authenticate(final, 1)
        if done["error_code"] == 0:
            assert client.step(done["auth_bytes"]) is None
            # the session ends when the token expires (as of the login)
            if s.token_authenticated:
                assert DAY - 60_000 < done["session_lifetime_ms"] <= DAY
            else:
                assert done["session_lifetime_ms"] == 0
        return s

    async def run() -> None:
        for mech in (SHA256, SHA512):
            for ext in ({"tokenauth": "true"}, None):
                s = await login("token-0", password, mech, ext)
                assert s.authenticated and s.principal == "User:alice" and s.token_authenticated
        bob = await login("bob", "bob-pw", SHA256, None)
        assert bob.authenticated and bob.principal == "User:bob" and not bob.token_authenticated
        assert not (await login("token-0", "wrong", SHA256, None)).authenticated
        assert not (await login("bob", "bob-pw", SHA256, {"tokenauth": "true"})).authenticated  # not a token
        now[0] = made.response["expiry_timestamp_ms"] + 1  # expired: refused even before the sweep
        assert not (await login("token-0", password, SHA256, None)).authenticated

    asyncio.run(run())


def test_token_lookup_requires_a_live_token_and_a_key() -> None:
    m = _manager()
    image = MetadataImage("c")
    image = image.apply(m.create(image, "User:alice", "User:alice", [], -1, 0).records)
    cfg: list[Any] = [_config(**{"delegation.token.secret.key": "s3cret"})]
    cache = DelegationTokenCache(lambda: image, lambda: cfg[0], lambda: 0)
    first = cache.lookup("token-0", SHA256)
    assert first is not None and first.owner == "User:alice" and first.credential.iterations == 4096
    assert cache.lookup("token-0", SHA256) == first  # derived once
    assert cache.lookup("unknown", SHA256) is None
    cfg[0] = _config(**{"delegation.token.secret.key": "other"})
    other = cache.lookup("token-0", SHA256)
    assert other is not None and other.credential != first.credential  # a new key, a new password
    cfg[0] = _config()
    assert cache.lookup("token-0", SHA256) is None


def test_which_connections_may_ask_for_tokens() -> None:
    def ctx(protocol: str | None, principal: str = "User:alice", by_token: bool = False) -> Any:
        if protocol is None:
            return SimpleNamespace(session=None)
        session = SimpleNamespace(
            security=SimpleNamespace(protocol=protocol), principal=principal, token_authenticated=by_token
        )
        return SimpleNamespace(session=session)

    assert token_requests_allowed(ctx("SASL_SSL")) and token_requests_allowed(ctx("SASL_PLAINTEXT"))
    assert token_requests_allowed(ctx("SSL", "User:CN=client"))
    assert not token_requests_allowed(ctx("SSL", "User:ANONYMOUS"))
    assert not token_requests_allowed(ctx("PLAINTEXT")) and not token_requests_allowed(ctx(None))
    assert not token_requests_allowed(ctx("SASL_SSL", by_token=True))


@pytest.mark.parametrize("bad", [b"n,,n=a,r=b,=x", b"n,,n=a,r=b,to-ken=1", b"n,,n=a,r=b,noequals"])
def test_malformed_extensions_fail(bad: bytes) -> None:
    from zurau.protocol.sasl import SaslError

    with pytest.raises(SaslError):
        parse_client_first(bad)
    assert SaslAuthenticationFailedError.code == 58


async def test_a_follower_that_has_not_replicated_a_token_checks_the_caller_at_the_controller() -> None:
    """Renew/Expire through a node whose image lacks the token (created a moment ago): the
    caller is checked against the active controller's DescribeDelegationToken answer."""
    from types import SimpleNamespace

    from zurau.metadata.raft_controller_channel import RaftControllerChannel
    from zurau.protocol.errors import DelegationTokenNotFoundError, DelegationTokenOwnerMismatchError

    described = {
        "error_code": 0,
        "tokens": [
            {"principal_type": "User", "principal_name": "alice", "hmac": b"mac-1",
             "renewers": [{"principal_type": "User", "principal_name": "bob"}]},
        ],
    }
    asked: list[object] = []

    class Conn:
        async def call(self, call: object) -> dict[str, object]:
            asked.append(call)
            return described

    node = SimpleNamespace(_precheck_token=lambda hmac, caller: DelegationTokenNotFoundError.code)
    check = RaftControllerChannel._precheck_token_at
    assert await check(node, Conn(), b"mac-1", "User:alice") == 0  # type: ignore[arg-type]
    assert await check(node, Conn(), b"mac-1", "User:bob") == 0  # type: ignore[arg-type]
    assert await check(node, Conn(), b"mac-1", "User:carol") == DelegationTokenOwnerMismatchError.code  # type: ignore[arg-type]
    assert await check(node, Conn(), b"mac-2", "User:alice") == DelegationTokenNotFoundError.code  # type: ignore[arg-type]
    assert len(asked) == 4
    known = SimpleNamespace(_precheck_token=lambda hmac, caller: 0)  # in this node's image: no call
    assert await check(known, Conn(), b"mac-1", "User:carol") == 0  # type: ignore[arg-type]
    assert len(asked) == 4
