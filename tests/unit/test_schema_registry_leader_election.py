"""The schema registry group's wire format (Confluent's ``SchemaRegistryIdentity`` and
``SchemaRegistryProtocol.Assignment`` JSON), the primary's choice, and the configs."""

from __future__ import annotations

import json

import pytest

from zurau.schema_registry.leader_election import (
    DUPLICATE_URLS,
    Election,
    RegistryIdentity,
    decode_election,
    decode_identity,
    elect,
    encode_election,
    encode_identity,
)
from zurau.schema_registry.registry_config import RegistryConfig, RegistryConfigError


def test_identity_json_is_confluents() -> None:
    me = RegistryIdentity("sr-1", 8081)
    assert json.loads(encode_identity(me)) == {
        "version": 1, "host": "sr-1", "port": 8081, "master_eligibility": True, "scheme": "http", "leader": False,
    }
    assert decode_identity(encode_identity(me)) == me
    # what an older Confluent instance sends (no "leader"), and the newer field name
    assert decode_identity(b'{"version":1,"host":"h","port":1,"master_eligibility":false,"scheme":"http"}') == (
        RegistryIdentity("h", 1, leader_eligibility=False)
    )
    assert decode_identity(b'{"host":"h","port":1,"leader_eligibility":true}').leader_eligibility
    with pytest.raises(ValueError):
        decode_identity(b'{"host":"h"}')


def test_assignment_json_is_confluents() -> None:
    primary = RegistryIdentity("a", 1)
    data = encode_election(Election(0, "member-1", primary))
    assert json.loads(data) == {"version": 1, "error": 0, "master": "member-1", "master_identity": primary.to_json()}
    assert decode_election(data) == Election(0, "member-1", primary)
    # no eligible member: Confluent leaves the empty fields out
    assert json.loads(encode_election(Election())) == {"version": 1, "error": 0}
    assert decode_election(b'{"version":1,"error":0}') == Election()


def test_the_primary_is_the_eligible_member_with_the_smallest_url() -> None:
    members = {
        "m1": RegistryIdentity("b", 1),
        "m2": RegistryIdentity("a", 2),
        "m3": RegistryIdentity("a", 1, leader_eligibility=False),
    }
    assert elect(members) == Election(0, "m2", members["m2"])
    assert elect({"m3": members["m3"]}) == Election()
    # sticky: an eligible member already primary keeps the role
    sticky = {**members, "m1": RegistryIdentity("b", 1, leader=True)}
    assert elect(sticky, sticky=True).primary_member == "m1"
    assert elect(sticky).primary_member == "m2"
    assert elect({"x": RegistryIdentity("a", 1), "y": RegistryIdentity("a", 1)}).error == DUPLICATE_URLS


def test_cluster_configs() -> None:
    cfg = RegistryConfig.from_props({})
    assert (cfg.group_id, cfg.leader_eligibility, cfg.session_timeout_ms) == ("schema-registry", True, 10_000)
    cfg = RegistryConfig.from_props({
        "schema.registry.group.id": "g", "master.eligibility": "false", "host.name": "sr.example",
        "inter.instance.protocol": "HTTP", "inter.instance.headers.whitelist": "X-A, X-B",
        "kafkagroup.session.timeout.ms": "2000", "leader.election.sticky": "true",
    })
    assert (cfg.group_id, cfg.leader_eligibility, cfg.host_name) == ("g", False, "sr.example")
    assert cfg.headers_whitelist == ("X-A", "X-B") and cfg.session_timeout_ms == 2000 and cfg.leader_election_sticky
    for bad in ({"inter.instance.protocol": "https"}, {"leader.eligibility": "maybe"}, {"schema.registry.group.id": ""}):
        with pytest.raises(RegistryConfigError):
            RegistryConfig.from_props(bad)
