"""``ApiKey`` against kio's index (generated from Kafka's message JSON) and our schemas."""

from __future__ import annotations

import pytest
from kio.schema.index import api_key_map

from zurau.protocol.api_keys import ApiKey, api_name
from zurau.protocol.schemas import ALL


def test_every_member_has_kafkas_number_and_name() -> None:
    for key in ApiKey:
        assert api_key_map.get(key.value) == key.name.lower(), (
            f"{key!r}: kio calls {key.value} {api_key_map.get(key.value)}"
        )


def test_every_api_kafka_defines_is_a_member() -> None:
    missing = sorted(set(api_key_map) - {k.value for k in ApiKey})
    assert not missing, f"ApiKey lacks {[(k, api_key_map[k]) for k in missing]}"


@pytest.mark.parametrize("key", sorted(ALL), ids=lambda k: ALL[k].name)
def test_every_schema_is_named_as_its_api_key(key: int) -> None:
    schema = ALL[key]
    assert type(schema.key) is ApiKey, f"{schema.name}: write key=ApiKey.X"
    assert ApiKey(key).api_name == schema.name


def test_the_kraft_apis_to_come() -> None:
    expected = {
        "VOTE": 52,
        "BEGIN_QUORUM_EPOCH": 53,
        "END_QUORUM_EPOCH": 54,
        "DESCRIBE_QUORUM": 55,
        "ALTER_PARTITION": 56,
        "ENVELOPE": 58,
        "FETCH_SNAPSHOT": 59,
        "BROKER_REGISTRATION": 62,
        "BROKER_HEARTBEAT": 63,
        "ALLOCATE_PRODUCER_IDS": 67,
        "OFFSET_FOR_LEADER_EPOCH": 23,
        "ADD_RAFT_VOTER": 80,
        "REMOVE_RAFT_VOTER": 81,
        "UPDATE_RAFT_VOTER": 82,
    }
    assert {name: ApiKey[name].value for name in expected} == expected


def test_names_for_logs() -> None:
    assert api_name(2) == "ListOffsets"
    assert api_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"
    assert api_name(4) == "ApiKey(4)"  # LeaderAndIsr: gone with ZooKeeper
    assert ApiKey.FETCH == 1 and {ApiKey.FETCH: "x"}[1] == "x"  # an int everywhere
