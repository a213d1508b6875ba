"""An embedded broker with a SASL_PLAINTEXT (SCRAM-SHA-256) listener, ACLs and SCRAM users, for
tests of what users see through SASL (the console's login).

:func:`sasl_broker` starts it with a PLAINTEXT listener next to the SASL one, whose anonymous
principal is a super user: users (confluent-kafka's AlterUserScramCredentials) and ACLs are made
through it. Each user of :data:`USERS` may describe, read, write and describe the configs of the
topics whose names start with ``<user>-`` (a PREFIXED ACL), and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka.admin import (
    AclBinding,
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

from zurau import EmbeddedBroker

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256"}
CONFIGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": "0",
}


@contextmanager
def sasl_broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(**CONFIGS) as b:
        admin = superuser(b)
        upserts = [
            UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), pw.encode())
            for user, pw in USERS.items()
        ]
        for f in admin.alter_user_scram_credentials(upserts).values():
            f.result(timeout=30)
        acls = [
            AclBinding(ResourceType.TOPIC, f"{user}-", ResourcePatternType.PREFIXED, f"User:{user}", "*", op,
                       AclPermissionType.ALLOW)
            for user in USERS
            for op in (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE_CONFIGS)
        ]
        for f in admin.create_acls(acls).values():
            f.result(timeout=30)
        yield b


def superuser(broker: EmbeddedBroker) -> AdminClient:
    """An admin client on the PLAINTEXT listener (a super user)."""
    return AdminClient({"bootstrap.servers": broker.listener_address("PLAINTEXT")})


def create_topics(broker: EmbeddedBroker, *names: str) -> None:
    admin = superuser(broker)  # held until the futures are done: a dropped client cancels them
    for f in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        f.result(timeout=30)
