"""ACLs with real clients over SASL_PLAINTEXT, against a broker running Kafka's StandardAuthorizer.

``User:admin`` (PLAIN) is a super user; ``User:alice`` and ``User:bob`` (SCRAM-SHA-256, created by
admin with AlterUserScramCredentials) start with no ACLs. confluent-kafka's and kafka-python's
admin clients create, describe and delete ACLs; alice's produce and consume fail with
TOPIC_AUTHORIZATION_FAILED in confluent-kafka, kafka-python and aiokafka until ACLs allow them;
a consumer without READ on its group gets GROUP_AUTHORIZATION_FAILED; Metadata lists only the
topics a principal may describe; a transactional producer without WRITE on its transactional id
fails; the super user passes a DENY for everyone; every denial is a line of the audit log; and
ACLs survive a restart (they live in the metadata log).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiokafka
import aiokafka.errors
import kafka
import kafka.admin as kadmin
import kafka.errors
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from zurau.embedded import EmbeddedBroker

pytestmark = pytest.mark.slow
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
PASSWORDS = {"admin": "admin-secret", "alice": "alice-pw", "bob": "bob-pw"}
CONFIGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "group.initial.rebalance.delay.ms": "0",
}


class Secured:
    def __init__(self, broker: EmbeddedBroker) -> None:
        self.broker = broker
        self.bootstrap = broker.listener_address("SASL_PLAINTEXT")
        self._admin: AdminClient | None = None

    def props(self, user: str) -> dict[str, Any]:
        mechanism = "PLAIN" if user == "admin" else "SCRAM-SHA-256"
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": PASSWORDS[user]}

    def python(self, user: str) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap, "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": user, "sasl_plain_password": PASSWORDS[user]}

    def admin(self) -> AdminClient:
        """The super user's admin client (kept: librdkafka fails the futures of a destroyed handle)."""
        if self._admin is None:
            self._admin = AdminClient(self.props("admin"))
        return self._admin

    def allow(self, *bindings: AclBinding) -> None:
        for f in self.admin().create_acls(list(bindings), request_timeout=30).values():
            f.result(timeout=30)

    def topic(self, partitions: int = 1) -> str:
        name = f"acl-{uuid.uuid4().hex[:10]}"
        for f in self.admin().create_topics([NewTopic(name, partitions, 1)]).values():
            f.result(timeout=30)
        return name


def binding(rtype: ResourceType, name: str, user: str, op: AclOperation, allow: bool = True,
            pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    perm = AclPermissionType.ALLOW if allow else AclPermissionType.DENY
    return AclBinding(rtype, name, pattern, f"User:{user}", "*", op, perm)


def _start(data_dir: Path) -> Secured:
    broker = EmbeddedBroker(data_dir, **CONFIGS).start()
    return Secured(broker)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    s = _start(tmp_path_factory.mktemp("acls"))
    try:
        upserts = [UserScramCredentialUpsertion(u, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), PASSWORDS[u].encode())
                   for u in ("alice", "bob")]
        for f in s.admin().alter_user_scram_credentials(upserts).values():
            f.result(timeout=30)
        yield s
    finally:
        s.broker.stop()


def _confluent_produce(props: dict[str, Any], topic: str) -> KafkaError | None:
    errors: list[KafkaError] = []
    p = Producer({**props, "message.timeout.ms": 10000, "error_cb": errors.append})
    delivered: list[KafkaError | None] = []
    p.produce(topic, b"v", on_delivery=lambda err, _msg: delivered.append(err))
    p.flush(20)
    assert delivered, errors
    return delivered[0]


def _confluent_consume(props: dict[str, Any], topic: str, group: str) -> tuple[list[bytes], KafkaError | None]:
    c = Consumer({**props, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(60):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                return got, m.error()
            got.append(m.value())
            return got, None
        return got, None
    finally:
        c.close()


# ------------------------------------------------------------------------------- admin APIs


def test_confluent_admin_creates_describes_and_deletes_acls(secured: Secured) -> None:
    admin = secured.admin()
    name = f"adm-{uuid.uuid4().hex[:6]}"
    bindings = [
        binding(ResourceType.TOPIC, name, "bob", AclOperation.READ),
        binding(ResourceType.TOPIC, name[:5], "bob", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
        binding(ResourceType.GROUP, name, "bob", AclOperation.READ, allow=False),
    ]
    for f in admin.create_acls(bindings).values():
        assert f.result(timeout=30) is None
    match = AclBindingFilter(ResourceType.TOPIC, name, ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    found = admin.describe_acls(match).result(timeout=30)
    assert sorted((b.name, b.resource_pattern_type.name, b.operation.name) for b in found) == sorted(
        [(name, "LITERAL", "READ"), (name[:5], "PREFIXED", "WRITE")]
    )
    bob_any = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
                               AclOperation.ANY, AclPermissionType.ANY)
    assert len(admin.describe_acls(bob_any).result(timeout=30)) == 3
    (deleted,) = admin.delete_acls([bob_any]).values()
    assert sorted(b.restype.name for b in deleted.result(timeout=30)) == ["GROUP", "TOPIC", "TOPIC"]
    assert admin.describe_acls(bob_any).result(timeout=30) == []
    # A non-super user has no ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED.
    alice_admin = AdminClient(secured.props("alice"))
    (f,) = alice_admin.create_acls([binding(ResourceType.TOPIC, name, "alice", AclOperation.ALL)]).values()
    with pytest.raises(KafkaException) as e:
        f.result(timeout=30)
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_kafka_python_admin_acls(secured: Secured) -> None:
    admin = kadmin.KafkaAdminClient(**{**secured.python("admin"), "sasl_mechanism": "PLAIN"})
    try:
        name = f"kp-{uuid.uuid4().hex[:6]}"
        pattern = kadmin.ResourcePattern(kadmin.ResourceType.TOPIC, name, kadmin.ACLResourcePatternType.LITERAL)
        acl = kadmin.ACL("User:bob", "*", kadmin.ACLOperation.DESCRIBE, kadmin.ACLPermissionType.ALLOW, pattern)
        result = admin.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        flt = kadmin.ACLFilter("User:bob", None, kadmin.ACLOperation.ANY, kadmin.ACLPermissionType.ANY,
                               kadmin.ResourcePatternFilter(kadmin.ResourceType.TOPIC, name, kadmin.ACLResourcePatternType.ANY))
        acls, error = admin.describe_acls(flt)
        assert error is kafka.errors.NoError
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in acls] == [
            ("User:bob", kadmin.ACLOperation.DESCRIBE, name)
        ]
        ((_, deleted, del_error),) = admin.delete_acls([flt])
        assert del_error is kafka.errors.NoError and len(deleted) == 1
        assert admin.describe_acls(flt)[0] == []
    finally:
        admin.close()


# ------------------------------------------------------------------------------- enforcement


def test_produce_and_consume_need_acls_in_every_client(secured: Secured, caplog: pytest.LogCaptureFixture) -> None:
    topic, group = secured.topic(), f"g-{uuid.uuid4().hex[:6]}"
    alice = secured.props("alice")
    with caplog.at_level(logging.INFO, logger="zurau.authorizer"):
        err = _confluent_produce(alice, topic)
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        _, cerr = _confluent_consume(alice, topic, group)
        assert cerr is not None and cerr.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED)

        kp = kafka.KafkaProducer(**secured.python("alice"), max_block_ms=10000, retries=0)
        try:
            with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
                kp.send(topic, b"v").get(timeout=20)
        finally:
            kp.close()

        async def aio() -> None:
            p = aiokafka.AIOKafkaProducer(**secured.python("alice"), request_timeout_ms=10000)
            await p.start()
            try:
                with pytest.raises(aiokafka.errors.TopicAuthorizationFailedError):
                    await p.send_and_wait(topic, b"v")
            finally:
                await p.stop()

        asyncio.run(aio())
    denials = [r.getMessage() for r in caplog.records if r.name == "zurau.authorizer"]
    assert any(f"Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = TOPIC:{topic} "
               "for request = METADATA" in m
               for m in denials), denials

    secured.allow(
        binding(ResourceType.TOPIC, topic, "alice", AclOperation.WRITE),
        binding(ResourceType.TOPIC, topic, "alice", AclOperation.READ),
        binding(ResourceType.GROUP, group, "alice", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
    )
    assert _confluent_produce(alice, topic) is None
    kp = kafka.KafkaProducer(**secured.python("alice"))
    try:
        kp.send(topic, b"kp").get(timeout=20)
    finally:
        kp.close()

    async def aio_roundtrip() -> list[bytes]:
        p = aiokafka.AIOKafkaProducer(**secured.python("alice"))
        await p.start()
        try:
            await p.send_and_wait(topic, b"aio")
        finally:
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(topic, **secured.python("alice"), group_id=group, auto_offset_reset="earliest")
        await c.start()
        try:
            batch = await c.getmany(timeout_ms=10000, max_records=3)
            return [m.value for msgs in batch.values() for m in msgs]
        finally:
            await c.stop()

    assert b"v" in asyncio.run(aio_roundtrip())
    got, cerr = _confluent_consume(alice, topic, f"{group}-confluent")
    assert cerr is None and got


def test_a_consumer_without_read_on_its_group_is_refused(secured: Secured) -> None:
    topic, group = secured.topic(), f"g-{uuid.uuid4().hex[:6]}"
    secured.allow(binding(ResourceType.TOPIC, topic, "bob", AclOperation.READ))
    _, err = _confluent_consume(secured.props("bob"), topic, group)
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    c = kafka.KafkaConsumer(topic, **secured.python("bob"), group_id=group, consumer_timeout_ms=5000)
    try:
        with pytest.raises(kafka.errors.GroupAuthorizationFailedError):
            c.poll(timeout_ms=8000)
    finally:
        c.close()


def test_metadata_lists_only_described_topics_and_prefixed_acls_apply(secured: Secured) -> None:
    stem = f"pre-{uuid.uuid4().hex[:6]}"
    visible, hidden = secured.topic(), secured.topic()
    prefixed = f"{stem}-x"
    for f in secured.admin().create_topics([NewTopic(prefixed, 1, 1)]).values():
        f.result(timeout=30)
    secured.allow(
        binding(ResourceType.TOPIC, visible, "bob", AclOperation.DESCRIBE),
        binding(ResourceType.TOPIC, stem, "bob", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
    )
    bob = AdminClient(secured.props("bob"))
    topics = set(bob.list_topics(timeout=20).topics)
    assert visible in topics and prefixed in topics and hidden not in topics
    assert set(secured.admin().list_topics(timeout=20).topics) >= {visible, hidden, prefixed}
    assert _confluent_produce(secured.props("bob"), prefixed) is None


def test_transactional_producer_needs_write_on_its_transactional_id(secured: Secured) -> None:
    topic = secured.topic()
    secured.allow(binding(ResourceType.TOPIC, topic, "bob", AclOperation.WRITE))
    p = Producer({**secured.props("bob"), "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    with pytest.raises(KafkaException) as e:
        p.init_transactions(20)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    tid = f"ok-{uuid.uuid4().hex[:6]}"
    secured.allow(binding(ResourceType.TRANSACTIONAL_ID, tid, "bob", AclOperation.WRITE))
    p = Producer({**secured.props("bob"), "transactional.id": tid})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"in-txn")
    p.commit_transaction(20)


def test_super_user_passes_a_deny_for_everyone(secured: Secured) -> None:
    topic = secured.topic()
    secured.allow(binding(ResourceType.TOPIC, topic, "*", AclOperation.ALL, allow=False))
    assert _confluent_produce(secured.props("admin"), topic) is None
    err = _confluent_produce(secured.props("alice"), topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    s = _start(tmp_path)
    try:
        s.allow(binding(ResourceType.TOPIC, "kept", "carol", AclOperation.READ))
    finally:
        s.broker.stop()
    s = _start(tmp_path)
    try:
        flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:carol", None,
                               AclOperation.ANY, AclPermissionType.ANY)
        (b,) = s.admin().describe_acls(flt).result(timeout=30)
        assert (b.name, b.operation) == ("kept", AclOperation.READ)
    finally:
        s.broker.stop()
