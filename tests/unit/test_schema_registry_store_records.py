"""The ``_schemas`` records: key bytes exactly as Confluent and Karapace write them (compaction
compares bytes), values round-trip, and replaying records rebuilds the registry's state."""

from __future__ import annotations

import json

import pytest

from zurau.schema_registry.registry_state import RegistryState
from zurau.schema_registry.store_records import (
    CONFIG,
    DELETE_SUBJECT,
    MODE,
    NOOP,
    SCHEMA,
    Reference,
    RegistryKey,
    SchemaValue,
    StoreRecordError,
    decode_config,
    encode_config,
    encode_delete_subject,
    encode_mode,
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (RegistryKey(SCHEMA, "orders-value", 3), b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}'),
        (RegistryKey(CONFIG, None), b'{"keytype":"CONFIG","subject":null,"magic":0}'),
        (RegistryKey(CONFIG, "s"), b'{"keytype":"CONFIG","subject":"s","magic":0}'),
        (RegistryKey(MODE, "s"), b'{"keytype":"MODE","subject":"s","magic":0}'),
        (RegistryKey(DELETE_SUBJECT, "s"), b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'),
        (RegistryKey(NOOP), b'{"keytype":"NOOP","magic":0}'),
    ],
)
def test_key_bytes_are_confluents(key: RegistryKey, expected: bytes) -> None:
    assert key.encode() == expected
    assert RegistryKey.decode(expected) == key


def test_keys_in_another_field_order_decode() -> None:
    assert RegistryKey.decode(b'{"magic": 1, "version": 2, "subject": "s", "keytype": "SCHEMA"}') == RegistryKey(
        SCHEMA, "s", 2
    )


@pytest.mark.parametrize("bad", [b"nope", b"[]", b'{"keytype":"WHAT"}', b'{"keytype":"SCHEMA","subject":"s"}'])
def test_bad_keys_are_rejected(bad: bytes) -> None:
    with pytest.raises(StoreRecordError):
        RegistryKey.decode(bad)


def test_avro_value_omits_schema_type_and_empty_references() -> None:
    value = SchemaValue("s", 1, 7, '"string"')
    assert json.loads(value.encode()) == {"subject": "s", "version": 1, "id": 7, "schema": '"string"', "deleted": False}
    assert SchemaValue.decode(value.encode()) == value


def test_json_value_with_references_round_trips() -> None:
    value = SchemaValue("s", 2, 9, "{}", "JSON", (Reference("a.json", "a", 1),), True)
    obj = json.loads(value.encode())
    assert obj["schemaType"] == "JSON" and obj["references"] == [{"name": "a.json", "subject": "a", "version": 1}]
    assert SchemaValue.decode(value.encode()) == value


def test_config_value() -> None:
    assert encode_config("FULL") == b'{"compatibilityLevel":"FULL"}'
    assert decode_config(b'{"compatibilityLevel": "NONE"}') == "NONE"


def replay(records: list[tuple[bytes, bytes | None]]) -> RegistryState:
    state = RegistryState()
    for key, value in records:
        state.apply(key, value)
    return state


def schema(subject: str, version: int, schema_id: int, deleted: bool = False) -> tuple[bytes, bytes]:
    return (
        RegistryKey(SCHEMA, subject, version).encode(),
        SchemaValue(subject, version, schema_id, '"int"', deleted=deleted).encode(),
    )


def test_replay_builds_versions_ids_configs_and_modes() -> None:
    state = replay(
        [
            (RegistryKey(NOOP).encode(), None),
            schema("a", 1, 1),
            schema("a", 2, 2),
            schema("b", 1, 1),
            (RegistryKey(CONFIG, None).encode(), encode_config("FULL")),
            (RegistryKey(CONFIG, "a").encode(), encode_config("NONE")),
            (RegistryKey(MODE, "b").encode(), encode_mode("READONLY")),
        ]
    )
    assert state.subjects() == ["a", "b"]
    assert [sv.version for sv in state.live_versions("a")] == [1, 2]
    assert state.max_id == 2
    assert state.configs == {None: "FULL", "a": "NONE"}
    assert state.modes == {"b": "READONLY"}


def test_delete_subject_soft_deletes_up_to_its_version_and_tombstones_remove() -> None:
    state = replay(
        [
            schema("a", 1, 1),
            schema("a", 2, 2),
            (RegistryKey(DELETE_SUBJECT, "a").encode(), encode_delete_subject("a", 2)),
            schema("a", 3, 3),
            (RegistryKey(CONFIG, "a").encode(), encode_config("NONE")),
            (RegistryKey(CONFIG, "a").encode(), None),
        ]
    )
    assert [(sv.version, sv.deleted) for sv in state.all_versions("a")] == [(1, True), (2, True), (3, False)]
    assert "a" not in state.configs
    state.apply(RegistryKey(SCHEMA, "a", 1).encode(), None)
    assert [sv.version for sv in state.all_versions("a")] == [2, 3]
    assert state.max_id == 3  # ids seen before a tombstone stay taken


def test_unreadable_records_are_skipped() -> None:
    state = replay([(b"garbage", b"x"), (RegistryKey(SCHEMA, "a", 1).encode(), b"{not json"), schema("a", 1, 5)])
    assert state.max_id == 5 and state.subjects() == ["a"]
