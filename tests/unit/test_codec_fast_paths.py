"""The codec's fast paths give exactly what the field-by-field paths give: fused fixed-width runs,
arrays of fixed-width structs read with one ``iter_unpack`` (falling back when an element has
tagged fields), and pre-encoded struct elements; and the Fetch handler's idle-partition bytes are
the codec's encoding of an idle partition in every Fetch version."""

from __future__ import annotations

import uuid

import pytest

from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.primitives import write_uvarint
from zurau.protocol.schemas import ALL
from zurau.protocol.schemas.fetch import PARTITION_DATA
from zurau.replication.idle_fetch import idle_encoder, idle_entry

FETCH_VERSIONS = range(4, ALL[ApiKey.FETCH].max_version + 1)


def _fetch_request(version: int, partitions: int) -> dict:
    return {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 50 << 20,
        "isolation_level": 1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "t" if version < 13 else "",
                "topic_id": uuid.UUID(int=7) if version >= 13 else None,
                "partitions": [
                    {
                        "partition": i,
                        "current_leader_epoch": i % 3,
                        "fetch_offset": 1_000_000_007 * i,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                    for i in range(partitions)
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_request_partitions_decode_as_written(version: int) -> None:
    req = _fetch_request(version, 50)
    back = codec.decode(ApiKey.FETCH, version, "request", codec.encode(ApiKey.FETCH, version, "request", req))
    got = back["topics"][0]["partitions"]
    assert len(got) == 50
    for sent, p in zip(req["topics"][0]["partitions"], got, strict=True):
        for k, v in sent.items():
            if k in ("current_leader_epoch",) and version < 9:
                continue
            if k == "last_fetched_epoch" or (k == "log_start_offset" and version < 5):
                continue
            assert p[k] == v, (k, p)
        # Fields absent in this version (or tagged and not sent) have their defaults.
        assert p["replica_directory_id"] == uuid.UUID(int=0)
        assert p["high_watermark"] == 2**63 - 1


def test_an_element_with_tagged_fields_is_decoded_field_by_field() -> None:
    # v17: partition 1 of 3 carries its (tagged) replica directory id.
    req = _fetch_request(17, 3)
    directory = uuid.UUID(int=99)
    req["topics"][0]["partitions"][1]["replica_directory_id"] = directory
    back = codec.decode(ApiKey.FETCH, 17, "request", codec.encode(ApiKey.FETCH, 17, "request", req))
    parts = back["topics"][0]["partitions"]
    assert [p["replica_directory_id"] for p in parts] == [uuid.UUID(int=0), directory, uuid.UUID(int=0)]
    assert [p["fetch_offset"] for p in parts] == [0, 1_000_000_007, 2_000_000_014]


def test_a_truncated_array_of_fixed_structs_is_a_decode_error() -> None:
    raw = codec.encode(ApiKey.FETCH, 16, "request", _fetch_request(16, 10))
    with pytest.raises(codec.DecodeError):
        codec.decode(ApiKey.FETCH, 16, "request", raw[:-40])


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@pytest.mark.parametrize("read_committed", [False, True])
def test_idle_partition_bytes_are_the_codecs_encoding(version: int, read_committed: bool) -> None:
    _, enc = codec.compile_struct(PARTITION_DATA.fields, version, ALL[ApiKey.FETCH].is_flexible(version))
    fast = idle_encoder(version, read_committed)
    for args in ((0, 0, 0, 0), (5, 123, 120, 7), (2**31 - 1, 2**63 - 1, 2**62, 2**40)):
        out = bytearray()
        enc(out, idle_entry(*args, read_committed), [])
        assert fast(*args) == bytes(out)


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_pre_encoded_partitions_mix_with_dicts_in_a_fetch_response(version: int) -> None:
    """A response whose partitions are partly pre-encoded bytes decodes as if all were dicts."""
    entries = [idle_entry(i, 10 + i, 10 + i, 0, True) for i in range(4)]
    entries[2]["records"] = b"abc"
    resp = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [{"topic": "t", "topic_id": uuid.UUID(int=7), "partitions": entries}],
    }
    expected = codec.encode(ApiKey.FETCH, version, "response", resp)
    mixed = [
        e if i == 2 else idle_encoder(version, True)(i, 10 + i, 10 + i, 0) for i, e in enumerate(entries)
    ]
    resp["responses"][0]["partitions"] = mixed
    assert codec.encode(ApiKey.FETCH, version, "response", resp) == expected


def test_fused_fixed_fields_encode_and_decode_in_order() -> None:
    # ListOffsets v1 partition: partition_index (int32), timestamp (int64) are fused.
    req = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 3, "timestamp": -2},
                    {"partition_index": 4, "timestamp": 99},
                ],
            }
        ],
    }
    back = codec.decode(
        ApiKey.LIST_OFFSETS, 1, "request", codec.encode(ApiKey.LIST_OFFSETS, 1, "request", req)
    )
    assert [(p["partition_index"], p["timestamp"]) for p in back["topics"][0]["partitions"]] == [
        (3, -2),
        (4, 99),
    ]


def test_uvarint_tag_count_of_zero_is_one_byte() -> None:
    out = bytearray()
    write_uvarint(out, 0)
    assert out == b"\x00"  # what the fixed-array fast path expects after each flexible element
