"""The StandardAuthorizer's decisions, the ACL controller rules and the ACL metadata records.

The authorizer table follows Kafka's StandardAuthorizer: literal, wildcard and prefixed patterns,
principal and host wildcards, DENY winning over ALLOW, operations implied by others, super users
and ``allow.everyone.if.no.acl.found``. ACL changes go through the controller functions as
records, applied to an image and carried by a snapshot.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

import pytest

from zurau.broker.auth.authorizer import StandardAuthorizer, peer_host
from zurau.config import BrokerConfig, ConfigError
from zurau.metadata.controller.acl_control import create_acls, delete_acls, describe_acls
from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from zurau.metadata.snapshot import encode_snapshot, image_from_snapshot
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

Op, T, P = AclOperation, ResourceType, PatternType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(
    name: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    principal: str = ALICE,
    host: str = "*",
    rtype: ResourceType = T.TOPIC,
    pattern: PatternType = P.LITERAL,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(*bindings: AclBinding, supers: frozenset[str] = frozenset(), everyone: bool = False) -> StandardAuthorizer:
    acls: Mapping[uuid.UUID, AclBinding] = {uuid.uuid4(): b for b in bindings}
    return StandardAuthorizer(lambda: acls, supers, everyone)


def may(a: StandardAuthorizer, op: AclOperation, name: str = "orders", principal: str = ALICE,
        rtype: ResourceType = T.TOPIC, host: str = HOST) -> bool:
    return a.authorize(principal, host, op, rtype, name)


# ------------------------------------------------------------------------------ matching table

@pytest.mark.parametrize(
    ("binding", "name", "expected"),
    [
        (acl("orders", Op.READ), "orders", True),
        (acl("orders", Op.READ), "orders2", False),
        (acl("*", Op.READ), "anything", True),
        (acl("ord", Op.READ, pattern=P.PREFIXED), "orders", True),
        (acl("ord", Op.READ, pattern=P.PREFIXED), "or", False),
        (acl("orders", Op.READ, pattern=P.PREFIXED), "orders", True),
        (acl("x", Op.READ, pattern=P.PREFIXED), "orders", False),
        (acl("orders", Op.READ, principal="User:*"), "orders", True),
        (acl("orders", Op.READ, principal=BOB), "orders", False),
        (acl("orders", Op.READ, host=HOST), "orders", True),
        (acl("orders", Op.READ, host="10.0.0.2"), "orders", False),
        (acl("orders", Op.ALL), "orders", True),
        (acl("orders", Op.WRITE), "orders", False),
        (acl("orders", Op.READ, rtype=T.GROUP), "orders", False),
    ],
)
def test_allow_matching(binding: AclBinding, name: str, expected: bool) -> None:
    assert may(authorizer(binding), Op.READ, name) is expected


@pytest.mark.parametrize(
    "deny",
    [
        acl("orders", Op.READ, DENY),
        acl("*", Op.READ, DENY),
        acl("ord", Op.READ, DENY, pattern=P.PREFIXED),
        acl("orders", Op.ALL, DENY),
        acl("orders", Op.READ, DENY, principal="User:*"),
        acl("orders", Op.READ, DENY, host=HOST),
    ],
)
def test_deny_wins_over_allow(deny: AclBinding) -> None:
    a = authorizer(acl("orders", Op.ALL), acl("*", Op.READ), deny)
    assert not may(a, Op.READ)


def test_a_deny_for_another_operation_host_or_principal_does_not_deny() -> None:
    a = authorizer(
        acl("orders", Op.READ),
        acl("orders", Op.WRITE, DENY),
        acl("orders", Op.READ, DENY, host="10.9.9.9"),
        acl("orders", Op.READ, DENY, principal=BOB),
    )
    assert may(a, Op.READ)
    assert not may(a, Op.WRITE)


@pytest.mark.parametrize(
    ("granted", "asked", "expected"),
    [
        (Op.READ, Op.DESCRIBE, True),
        (Op.WRITE, Op.DESCRIBE, True),
        (Op.DELETE, Op.DESCRIBE, True),
        (Op.ALTER, Op.DESCRIBE, True),
        (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
        (Op.CREATE, Op.DESCRIBE, False),
        (Op.DESCRIBE, Op.READ, False),
        (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
        (Op.ALTER, Op.ALTER_CONFIGS, False),
        (Op.ALL, Op.DESCRIBE_CONFIGS, True),
    ],
)
def test_implied_operations(granted: AclOperation, asked: AclOperation, expected: bool) -> None:
    assert may(authorizer(acl("orders", granted)), asked) is expected


def test_implication_does_not_apply_to_deny() -> None:
    """A DENY of READ leaves a DESCRIBE granted by WRITE alone (Kafka denies only the named op)."""
    a = authorizer(acl("orders", Op.WRITE), acl("orders", Op.READ, DENY))
    assert may(a, Op.DESCRIBE)


def test_super_users_pass_even_a_deny() -> None:
    a = authorizer(acl("orders", Op.ALL, DENY, principal="User:*"), supers=frozenset({"User:admin"}))
    assert may(a, Op.WRITE, principal="User:admin")
    assert not may(a, Op.WRITE)


def test_allow_everyone_if_no_acl_found() -> None:
    a = authorizer(acl("orders", Op.READ, principal=BOB), everyone=True)
    assert may(a, Op.WRITE, name="free")  # no binding applies to "free"
    assert not may(a, Op.WRITE)  # "orders" has one (for bob): the flag no longer applies
    assert not may(authorizer(everyone=False), Op.WRITE, name="free")


def test_wildcard_principal_covers_users_only() -> None:
    a = authorizer(acl("orders", Op.READ, principal="User:*"))
    assert may(a, Op.READ, principal="User:anyone")
    assert not may(a, Op.READ, principal="Group:ops")


def test_the_index_follows_the_acl_mapping() -> None:
    current: dict[uuid.UUID, AclBinding] = {}
    a = StandardAuthorizer(lambda: current)
    assert not may(a, Op.READ)
    current = {uuid.uuid4(): acl("orders", Op.READ)}
    assert may(a, Op.READ)


def test_authorize_any_of_a_resource_type() -> None:
    assert authorizer(acl("x", Op.WRITE, pattern=P.PREFIXED)).authorize_any(ALICE, HOST, Op.WRITE, T.TOPIC)
    assert not authorizer(acl("x", Op.READ)).authorize_any(ALICE, HOST, Op.WRITE, T.TOPIC)
    denied = authorizer(acl("x", Op.WRITE), acl("*", Op.WRITE, DENY))
    assert not denied.authorize_any(ALICE, HOST, Op.WRITE, T.TOPIC)


def test_denials_are_logged_once_each(caplog: pytest.LogCaptureFixture) -> None:
    a = authorizer(acl("orders", Op.READ))
    with caplog.at_level(logging.INFO, logger="zurau.authorizer"):
        assert may(a, Op.READ)
        assert not a.authorize(BOB, HOST, Op.WRITE, T.TOPIC, "orders", "PRODUCE")
        assert not a.authorize(BOB, HOST, Op.DESCRIBE, T.TOPIC, "orders", log_denied=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "zurau.authorizer"]
    assert lines == [
        "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.1 on resource = TOPIC:orders "
        "for request = PRODUCE"
    ]


def test_peer_host() -> None:
    assert peer_host("127.0.0.1:5555") == "127.0.0.1"
    assert peer_host("::1:5555") == "::1"


def test_config() -> None:
    assert StandardAuthorizer.from_config(BrokerConfig({}), dict) is None
    a = StandardAuthorizer.from_config(
        BrokerConfig({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                      "super.users": "User:admin; User:ops", "allow.everyone.if.no.acl.found": "true"}),
        dict,
    )
    assert a is not None and a.super_users == {"User:admin", "User:ops"} and a.allow_everyone_if_no_acl
    with pytest.raises(ConfigError):
        BrokerConfig({"authorizer.class.name": "com.example.Mine"})


# ------------------------------------------------------------------------------ filters

def test_filter_matching() -> None:
    lit, pre, star = acl("orders", Op.READ), acl("ord", Op.READ, pattern=P.PREFIXED), acl("*", Op.READ)
    match = AclBindingFilter(T.TOPIC, "orders", P.MATCH)
    assert [match.matches(b) for b in (lit, pre, star)] == [True, True, True]
    assert not match.matches(acl("orders-x", Op.READ))
    assert [AclBindingFilter(T.ANY, "orders", P.ANY).matches(b) for b in (lit, pre, star)] == [True, False, False]
    assert [AclBindingFilter(pattern_type=P.PREFIXED).matches(b) for b in (lit, pre, star)] == [False, True, False]
    assert not AclBindingFilter(principal=BOB).matches(lit)
    assert AclBindingFilter(T.TOPIC, None, P.ANY, ALICE, "*", Op.READ, ALLOW).matches(lit)


# ------------------------------------------------------------------------------ controller rules

def _creation(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"resource_type": 2, "resource_name": "orders", "resource_pattern_type": 3,
                               "principal": ALICE, "host": "*", "operation": 3, "permission_type": 3}
    return {**base, **over}


def _filter(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                               "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
    return {**base, **over}


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"resource_type": 1}, "Invalid resourceType ANY"),
        ({"resource_type": 0}, "Invalid resourceType UNKNOWN"),
        ({"resource_pattern_type": 2}, "Invalid patternType MATCH"),
        ({"operation": 1}, "Invalid operation ANY"),
        ({"permission_type": 1}, "Invalid permissionType ANY"),
        ({"resource_name": ""}, "Resource name should not be empty"),
        ({"resource_type": 4, "resource_name": "other"}, "The only valid name for the CLUSTER resource is kafka-cluster"),
        ({"principal": "alice"}, "Could not parse principal from `alice`"),
        ({"principal": "User:"}, "Invalid empty principal"),
    ],
)
def test_invalid_creations_are_refused_one_by_one(over: dict[str, object], message: str) -> None:
    result = create_acls(MetadataImage("c"), [_creation(**over), _creation()])
    assert len(result.records) == 1
    bad, good = result.response
    assert bad["error_code"] == 42 and bad["error_message"].startswith(message)
    assert good == {"error_code": 0, "error_message": None}


def test_create_describe_delete_through_records() -> None:
    image = MetadataImage("c")
    created = create_acls(image, [_creation(), _creation(), _creation(operation=4, resource_pattern_type=4)])
    assert [type(r) for r in created.records] == [AccessControlEntryRecord] * 2  # the duplicate is one binding
    image = image.apply(created.records, 1)
    assert len(image.acls) == 2
    assert create_acls(image, [_creation()]).records == []  # exists already

    described = describe_acls(image, _filter(resource_type_filter=2, resource_name_filter="orders", pattern_type_filter=2))
    assert described["error_code"] == 0
    assert [(r["resource_name"], r["pattern_type"], [a["operation"] for a in r["acls"]]) for r in described["resources"]] == [
        ("orders", 3, [3]), ("orders", 4, [4])
    ]
    assert describe_acls(image, _filter(operation=0))["error_code"] == 42

    deleted = delete_acls(image, [_filter(operation=3), _filter(), _filter(principal_filter="nocolon")])
    first, second, bad = deleted.response
    assert [m["operation"] for m in first["matching_acls"]] == [3]
    assert [m["operation"] for m in second["matching_acls"]] == [4]  # not the one the first filter removed
    assert bad["error_code"] == 42
    assert all(isinstance(r, RemoveAccessControlEntryRecord) for r in deleted.records)
    assert image.apply(deleted.records, 2).acls == {}


def test_acl_records_round_trip_and_survive_a_snapshot() -> None:
    record = AccessControlEntryRecord(uuid.uuid4(), 2, "orders", 4, ALICE, "10.0.0.1", 4, 2)
    assert decode_record(encode_record(record)) == record
    removal = RemoveAccessControlEntryRecord(record.id)
    assert decode_record(encode_record(removal)) == removal
    assert encode_record(removal)[:3] == bytes([1, 19, 0])  # frame version, Kafka's record type 19, version 0
    image = MetadataImage("c").apply([record], 5)
    (binding,) = image.acls.values()
    assert binding == AclBinding(T.TOPIC, "orders", P.PREFIXED, ALICE, "10.0.0.1", Op.WRITE, DENY)
    again = image_from_snapshot("c", encode_snapshot(image, 0), 6)
    assert dict(again.acls) == dict(image.acls)
