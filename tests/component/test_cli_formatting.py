"""Output formats of ``zurau consume`` (pure functions, no broker)."""

from __future__ import annotations

import json

import pytest

from zurau.cli.common import config_pairs, split_config_list
from zurau.cli.consume import parse_offset
from zurau.cli.formatting import compile_format, json_formatter, kafka_formatter, make_formatter
from zurau.client.errors import kafka_error_name
from zurau.client.types import ConsumerRecord
from zurau.protocol import errors

REC = ConsumerRecord("t", 2, 41, 1_700_000_000_123, 0, b"key", b"val\x00ue", [("a", b"1"), ("b", None)])
NULLS = ConsumerRecord("t", 0, 0, 5, 1, None, None, [])


def test_kcat_tokens_and_escapes() -> None:
    f = compile_format(r"%t|%p|%o|%T|%k(%K)|%s(%S)|%h|%%|\t\\\n")
    assert f(REC) == b"t|2|41|1700000000123|key(3)|val\x00ue(6)|a=1,b|%|\t\\\n"
    assert f(NULLS) == b"t|0|0|5|(-1)|(-1)||%|\t\\\n"
    with pytest.raises(ValueError, match="unknown format token %x"):
        compile_format("%x")


def test_default_format_is_the_value_and_a_newline() -> None:
    assert make_formatter(None, {})(REC) == b"val\x00ue\n"
    assert make_formatter(None, {})(NULLS) == b"\n"


def test_json_format() -> None:
    doc = json.loads(json_formatter(REC))
    assert doc == {"topic": "t", "partition": 2, "offset": 41, "timestamp": 1_700_000_000_123,
                   "timestamp_type": "CreateTime", "key": "key", "value": "val\x00ue",
                   "headers": [["a", "1"], ["b", None]]}  # fmt: skip
    binary = json.loads(json_formatter(REC._replace(value=b"\xff")))
    assert binary["value"] == "/w==" and binary["value_encoding"] == "base64" and "key_encoding" not in binary
    assert json.loads(json_formatter(NULLS))["timestamp_type"] == "LogAppendTime"
    assert make_formatter("JSON", {}) is json_formatter


def test_kafka_console_consumer_properties() -> None:
    f = kafka_formatter({"print.key": "true", "print.timestamp": "true", "print.partition": "true",
                         "print.offset": "true", "print.headers": "true", "key.separator": " | "})  # fmt: skip
    assert f(REC) == b"CreateTime:1700000000123 | Partition:2 | Offset:41 | a:1,b:null | key | val\x00ue\n"
    assert kafka_formatter({"print.key": "true"})(NULLS) == b"null\tnull\n"
    assert kafka_formatter({"print.value": "false", "print.offset": "true"})(REC) == b"Offset:41\n"
    with pytest.raises(ValueError, match="unknown --property print.color"):
        kafka_formatter({"print.color": "true"})
    with pytest.raises(ValueError, match="either --format or --property"):
        make_formatter("%s", {"print.key": "true"})


def test_offset_arguments() -> None:
    assert parse_offset("earliest") == ("beginning", 0)
    assert parse_offset("END") == ("end", 0)
    assert parse_offset("12") == ("absolute", 12)
    assert parse_offset("-3") == ("from_end", 3)


def test_kafka_config_list_syntax() -> None:
    assert split_config_list("a=1,b=[x,y],c=") == ["a=1", "b=x,y", "c="]
    assert config_pairs(["a=1,b=[x,y]", "c=3"]) == {"a": "1", "b": "x,y", "c": "3"}


def test_error_names_are_kafkas() -> None:
    assert kafka_error_name(errors.UnknownTopicOrPartitionError()) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert kafka_error_name(errors.InvalidTopicError()) == "INVALID_TOPIC_EXCEPTION"
    assert kafka_error_name(errors.NotLeaderOrFollowerError()) == "NOT_LEADER_OR_FOLLOWER"
    assert kafka_error_name(errors.InvalidConfigError()) == "INVALID_CONFIG"
    assert kafka_error_name(errors.UnknownServerError()) == "UNKNOWN_SERVER_ERROR"
