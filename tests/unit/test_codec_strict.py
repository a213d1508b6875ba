"""The codec's strict mode: a key that is no field of its message is an error, not a silent default.

The whole suite runs with strict mode on (tests/conftest.py); these tests pin down what it catches,
what it lets through (a field of another version), and that it is compiled away when off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.codec import UnknownFieldError
from zurau.protocol.schema import INT32, STRING, Array, F, Struct


@pytest.fixture
def strict_off() -> Iterator[None]:
    was = codec.is_strict()
    codec.set_strict(False)
    try:
        yield
    finally:
        codec.set_strict(was)


def test_the_suite_runs_strict() -> None:
    assert codec.is_strict()
    assert os.environ.get("ZURAU_STRICT_CODEC") == "1"  # inherited by brokers in other processes


def test_a_misspelt_top_level_key_is_named() -> None:
    with pytest.raises(
        UnknownFieldError, match=r"MetadataRequest v12: unknown key 'allow_auto_topic_creaton'"
    ):
        codec.encode(ApiKey.METADATA, 12, "request", {"topics": [], "allow_auto_topic_creaton": False})


def test_a_misspelt_key_in_an_array_element_is_named_with_its_path() -> None:
    body = {"topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_ofset": 5}]}]}
    with pytest.raises(UnknownFieldError) as e:
        codec.encode(ApiKey.FETCH, 11, "request", body)
    assert "FetchRequest v11.topics[].partitions[]" in str(e.value)
    assert "'fetch_ofset'" in str(e.value)
    assert "fetch_offset" in str(e.value)  # the known fields are listed


def test_a_misspelt_key_in_a_nested_struct_is_named() -> None:
    partition = {
        "partition_index": 0,
        "error_code": 0,
        "high_watermark": 1,
        "records": b"",
        "current_leader": {"leader_id": 1, "leader_epok": 2},
    }
    body = {"responses": [{"topic": "t", "partitions": [partition]}]}
    with pytest.raises(
        UnknownFieldError, match=r"responses\[\]\.partitions\[\]\.current_leader: unknown key 'leader_epok'"
    ):
        codec.encode(ApiKey.FETCH, 12, "response", body)


def test_several_unknown_keys_are_all_named() -> None:
    with pytest.raises(UnknownFieldError, match=r"unknown keys 'a', 'b'"):
        codec.encode(ApiKey.HEARTBEAT, 0, "response", {"error_code": 0, "b": 1, "a": 2})


def test_a_field_of_another_version_is_accepted() -> None:
    """Fetch v4 has no topic_id and v13 no topic name: both keys are fields of Fetch, so no error."""
    topic = {"topic": "t", "topic_id": None, "partitions": []}
    v4 = codec.encode(ApiKey.FETCH, 4, "request", {"topics": [topic]})
    v13 = codec.encode(ApiKey.FETCH, 13, "request", {"topics": [topic]})
    assert codec.decode(ApiKey.FETCH, 4, "request", v4)["topics"][0]["topic"] == "t"
    assert len(codec.decode(ApiKey.FETCH, 13, "request", v13)["topics"]) == 1


def test_decoded_messages_re_encode_in_strict_mode() -> None:
    body = {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": True}
    data = codec.encode(ApiKey.METADATA, 12, "request", body)
    decoded = codec.decode(ApiKey.METADATA, 12, "request", data)
    assert codec.encode(ApiKey.METADATA, 12, "request", decoded) == data


def test_compile_struct_is_strict_too() -> None:
    fields = (F("name", STRING), F("items", Array(Struct(F("id", INT32)))))
    _dec, enc = codec.compile_struct(fields, 0, False, "MyRecord")
    enc(bytearray(), {"name": "x", "items": [{"id": 1}]}, [])
    with pytest.raises(UnknownFieldError, match=r"MyRecord\.items\[\]: unknown key 'idd'"):
        enc(bytearray(), {"name": "x", "items": [{"idd": 1}]}, [])


def test_strict_mode_off_costs_nothing_and_keeps_the_old_behaviour(strict_off: None) -> None:
    """Off, the compiled encoder is the plain one (no key check at all) and a stray key is ignored."""
    _dec, enc = codec._compiled(ApiKey.METADATA, 12, "request")
    assert enc.__name__ == "enc"
    body = {"topics": [], "allow_auto_topic_creation": False}
    assert codec.encode(ApiKey.METADATA, 12, "request", {**body, "typo": 1}) == codec.encode(
        ApiKey.METADATA, 12, "request", body
    )
    codec.set_strict(True)
    _dec, enc = codec._compiled(ApiKey.METADATA, 12, "request")
    assert enc.__name__ == "strict_enc"


@pytest.mark.parametrize(("value", "strict"), [("1", True), ("true", True), ("0", False), ("", False)])
def test_the_environment_variable_sets_the_mode_at_import(value: str, strict: bool) -> None:
    env = {**os.environ, "ZURAU_STRICT_CODEC": value}
    out = subprocess.run(
        [sys.executable, "-c", "from zurau.protocol import codec; print(codec.is_strict())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == str(strict)
