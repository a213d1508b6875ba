"""v2 records: varints, builder/decoder round trips, control markers, kafka-python cross-checks."""

from __future__ import annotations

import random
import struct
import types

import cramjam
import kafka.codec
import kafka.record.util as kutil
import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from zurau.protocol.errors import CorruptRecordError, UnsupportedCompressionTypeError
from zurau.protocol.records import batch as B
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import (
    build_control_batch,
    control_key,
    parse_control_key,
    parse_control_record,
)
from zurau.protocol.records.record import (
    Record,
    decode_batch_records,
    decode_records,
    decode_varint,
    decode_varlong,
    encode_record,
    encode_varint,
    encode_varlong,
    varint_size,
)

CODECS = [0, 1, 2, 3, 4]
TS = 1_700_000_000_000


@pytest.fixture(autouse=True)
def kafka_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python's codec needs python-snappy; back it with cramjam's raw snappy instead."""
    shim = types.SimpleNamespace(
        compress=lambda b: bytes(cramjam.snappy.compress_raw(bytes(b))),
        decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))),
    )
    monkeypatch.setattr(kafka.codec, "snappy", shim)


def _recrc(buf: bytes | bytearray) -> bytes:
    b = bytearray(buf)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


# --- varints ------------------------------------------------------------------------------------

INT32_EDGES = [0, -1, 1, 63, -64, 64, -65, 2**31 - 1, -(2**31), 300, -300]
INT64_EDGES = INT32_EDGES + [2**63 - 1, -(2**63), 2**31, -(2**31) - 1, 2**35, -(2**56)]


@pytest.mark.parametrize("v", INT32_EDGES)
def test_varint_round_trip(v: int) -> None:
    enc = encode_varint(v)
    assert decode_varint(enc) == (v, len(enc))
    assert decode_varint(b"\xaa" + enc + b"\xbb", 1) == (v, 1 + len(enc))
    assert varint_size(v) == len(enc) <= 5


@pytest.mark.parametrize("v", INT64_EDGES)
def test_varlong_round_trip(v: int) -> None:
    enc = encode_varlong(v)
    assert decode_varlong(enc) == (v, len(enc))
    assert varint_size(v) == len(enc) <= 10
    # kafka-python's (zigzag 64-bit) implementation agrees
    out = bytearray()
    kutil.encode_varint(v, out.append)
    assert bytes(out) == enc
    assert kutil.decode_varint(bytearray(enc), 0) == (v, len(enc))


def test_varint_known_encodings() -> None:
    assert encode_varint(0) == b"\x00"
    assert encode_varint(-1) == b"\x01"
    assert encode_varint(1) == b"\x02"
    assert encode_varint(-64) == b"\x7f"
    assert encode_varint(64) == b"\x80\x01"
    assert encode_varint(2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert encode_varint(-(2**31)) == b"\xff\xff\xff\xff\x0f"
    assert encode_varlong(2**63 - 1) == b"\xfe" + b"\xff" * 8 + b"\x01"
    assert encode_varlong(-(2**63)) == b"\xff" * 9 + b"\x01"


def test_varint_range_checks() -> None:
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(ValueError):
            encode_varint(bad)
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError):
            encode_varlong(bad)


def test_varint_decode_errors() -> None:
    for bad in (b"", b"\x80", b"\xff\xff", b"\xff\xff\xff\xff\xff\x01"):  # truncated / 6 bytes
        with pytest.raises(CorruptRecordError):
            decode_varint(bad)
    for bad in (b"", b"\x80", b"\xff" * 10 + b"\x01"):
        with pytest.raises(CorruptRecordError):
            decode_varlong(bad)
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x00", 1)


# --- build + decode -----------------------------------------------------------------------------

SAMPLE = [
    NewRecord(b"k0", b"v0", [("h", b"x")], TS),
    NewRecord(None, b"null key", (), TS + 5),
    NewRecord(b"null value", None, [("a", None), ("b", b""), ("ünï", b"\x00\xff")], TS - 3),
    NewRecord(b"", b"", (), TS + 2),
    (b"large", bytes(range(256)) * 4096, [("big", b"y" * 70_000)], TS + 1),  # plain 4-tuple, 1 MiB
    NewRecord(None, None, [], TS),
]


def _expected(records, base_offset: int = 0, log_append: int | None = None) -> list[Record]:
    return [
        Record(
            base_offset + i,
            r[3] if log_append is None else log_append,
            r[0],
            r[1],
            [(k, v) for k, v in r[2]],
        )
        for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_build_and_decode(codec: int) -> None:
    buf = build_batch(SAMPLE, base_offset=1000, compression=codec)
    [(pos, h)] = B.validate_batches(buf)
    assert pos == 0 and h.size == len(buf)
    assert h.compression == codec
    assert h.base_offset == 1000 and h.records_count == len(SAMPLE) and h.last_offset_delta == len(SAMPLE) - 1
    assert h.base_timestamp == TS and h.max_timestamp == TS + 5
    assert h.producer_id == -1 and h.producer_epoch == -1 and h.base_sequence == -1
    assert h.partition_leader_epoch == -1 and not h.is_transactional and not h.is_control
    assert decode_batch_records(buf) == _expected(SAMPLE, 1000)
    assert decode_batch_records(memoryview(buf)) == _expected(SAMPLE, 1000)
    assert decode_batch_records(bytearray(buf)) == _expected(SAMPLE, 1000)


def test_compression_shrinks_batch() -> None:
    recs = [(None, b"repetitive value " * 100, (), TS)] * 50
    plain = build_batch(recs)
    for codec in (1, 2, 3, 4):
        assert len(build_batch(recs, compression=codec)) < len(plain) // 5


def test_header_fields_and_attributes() -> None:
    buf = build_batch(
        [(b"k", b"v", (), TS)],
        base_offset=7,
        producer_id=42,
        producer_epoch=3,
        base_sequence=100,
        is_transactional=True,
        partition_leader_epoch=9,
        compression=3,
    )
    h = B.read_header(buf)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, 100)
    assert h.partition_leader_epoch == 9 and h.is_transactional and not h.is_control
    assert h.attributes == 3 | 0x10
    assert B.verify_crc(buf, 0, h)


def test_log_append_time() -> None:
    recs = [(b"a", b"1", (), TS + 100), (b"b", b"2", (), TS + 100)]
    buf = build_batch(recs, timestamp_type=1)
    h = B.read_header(buf)
    assert h.timestamp_type == 1 and h.attributes == 0x08
    # every record's timestamp is the batch max_timestamp, whatever its delta says
    b = bytearray(buf)
    struct.pack_into(">q", b, 35, TS + 999)  # max_timestamp
    got = decode_batch_records(_recrc(b))
    assert [r.timestamp for r in got] == [TS + 999, TS + 999]


def test_patching_base_offset_keeps_crc() -> None:
    b = bytearray(build_batch(SAMPLE[:3], compression=4))
    B.set_base_offset(b, 0, 5_000_000_000)
    B.set_partition_leader_epoch(b, 0, 12)
    B.validate_batches(b)
    assert [r.offset for r in decode_batch_records(b)] == [5_000_000_000, 5_000_000_001, 5_000_000_002]


def test_several_batches_validate() -> None:
    payload = build_batch(SAMPLE[:2]) + build_batch(SAMPLE[2:4], base_offset=2, compression=1)
    assert [p for p, _ in B.validate_batches(payload)] == [0, len(build_batch(SAMPLE[:2]))]


def test_builder_errors() -> None:
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v", (), TS)], timestamp_type=2)
    with pytest.raises(UnsupportedCompressionTypeError):
        build_batch([(b"k", b"v", (), TS)], compression=5)
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v", (), TS)], producer_epoch=70_000)


def test_encode_record_layout() -> None:
    # length 10: attrs 0, ts delta 0, offset delta 1 (02), key "k", null value, 1 header ("h", null)
    enc = encode_record(1, 0, b"k", None, [("h", None)])
    assert enc == bytes.fromhex("14000002026b0102026801")
    assert decode_records(enc, 1, base_offset=10, base_timestamp=5) == [
        Record(11, 5, b"k", None, [("h", None)])
    ]


def test_non_utf8_header_key_round_trips() -> None:
    buf = build_batch([(b"k", b"v", [(b"\xff\xfe", b"x")], TS)])
    [rec] = decode_batch_records(buf)
    assert rec.headers[0][0].encode("utf-8", "surrogateescape") == b"\xff\xfe"
    assert build_batch([(rec.key, rec.value, rec.headers, rec.timestamp)]) == buf


# --- corrupt input ------------------------------------------------------------------------------


def test_crc_failure() -> None:
    b = bytearray(build_batch(SAMPLE[:2]))
    assert b[B.HEADER_SIZE + 8 : B.HEADER_SIZE + 10] == b"v0"
    b[B.HEADER_SIZE + 8] = ord("w")
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_batch_records(b)
    assert decode_batch_records(b, check_crc=False)[0].value == b"w0"  # still parses unchecked


def test_length_mismatch_and_truncation() -> None:
    buf = build_batch(SAMPLE[:2])
    for bad in (buf[:-1], buf + b"\x00", buf[:30], b"", b"\x00" * 61):
        with pytest.raises(CorruptRecordError):
            decode_batch_records(bad)


def test_record_count_mismatch() -> None:
    buf = bytearray(build_batch(SAMPLE[:3]))
    struct.pack_into(">i", buf, 57, 4)  # one more record than present
    with pytest.raises(CorruptRecordError):
        decode_batch_records(_recrc(buf))
    struct.pack_into(">i", buf, 57, 2)  # bytes left after the declared records
    with pytest.raises(CorruptRecordError, match="left"):
        decode_batch_records(_recrc(buf))
    struct.pack_into(">i", buf, 57, -1)
    with pytest.raises(CorruptRecordError):
        decode_batch_records(_recrc(buf))


def test_malformed_records() -> None:
    cases = [
        bytes.fromhex("0c000000036b0100"),  # key length -2
        bytes.fromhex("0e000000026b010000"),  # declared 7, fields end at 6
        bytes.fromhex("0c000000146b0100"),  # key length 10 overruns the record
        bytes.fromhex("0c000000010101"),  # header count -1
        bytes.fromhex("0e0000000101020101"),  # null header key
        bytes.fromhex("1000000001017e0001"),  # header count 63
        bytes.fromhex("0200"),  # length below the minimum
        bytes.fromhex("ffffffffffff"),  # overlong varint
    ]
    for raw in cases:
        with pytest.raises(CorruptRecordError):
            decode_records(raw, 1)


@pytest.mark.parametrize("codec", CODECS)
def test_random_mutations_only_raise_corrupt_record(codec: int) -> None:
    rng = random.Random(1234 + codec)
    recs = [
        (b"key%d" % i, b"value %d " % i * (i + 1), [(f"h{i}", None if i % 2 else b"v")], TS + i)
        for i in range(8)
    ]
    good = build_batch(recs, compression=codec)
    for _ in range(400):
        m = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            m[rng.randrange(B.HEADER_SIZE, len(m))] = rng.randrange(256)
        if rng.random() < 0.2:
            struct.pack_into(">i", m, 57, rng.randrange(-2, 20))
        try:
            decode_batch_records(_recrc(m), max_output=1 << 20)
        except CorruptRecordError:
            pass


def test_compressed_garbage() -> None:
    buf = bytearray(build_batch(SAMPLE[:2], compression=1))
    buf[B.HEADER_SIZE + 3] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        decode_batch_records(_recrc(buf))


# --- control records ----------------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit: bool) -> None:
    buf = build_control_batch(commit, 77, 4, 12, 500, timestamp_ms=TS, partition_leader_epoch=3)
    [(_, h)] = B.validate_batches(buf)
    assert h.is_control and h.is_transactional and h.compression == 0
    assert h.attributes == 0x30
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (77, 4, -1)
    assert (h.base_offset, h.partition_leader_epoch, h.records_count) == (500, 3, 1)
    [rec] = decode_batch_records(buf)
    assert rec.offset == 500 and rec.timestamp == TS and rec.headers == []
    assert rec.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert rec.value == struct.pack(">hi", 0, 12)
    assert parse_control_record(rec.key, rec.value) == (commit, 12)
    # kafka-python agrees
    theirs = DefaultRecordBatch(buf)
    assert theirs.validate_crc() and theirs.is_control_batch and theirs.is_transactional
    [crec] = list(theirs)
    assert crec.commit is commit and crec.abort is (not commit)


def test_control_parse_errors_and_forward_compat() -> None:
    assert parse_control_key(control_key(2)) == 2  # e.g. KRaft LEADER_CHANGE
    with pytest.raises(CorruptRecordError):
        parse_control_record(control_key(2), struct.pack(">hi", 0, 1))
    for key, value in [
        (None, struct.pack(">hi", 0, 1)),
        (b"\x00\x00\x00", struct.pack(">hi", 0, 1)),
        (struct.pack(">hh", -1, 1), struct.pack(">hi", 0, 1)),
        (control_key(1), None),
        (control_key(1), b"\x00\x00\x00\x01"),
        (control_key(1), struct.pack(">hi", -1, 1)),
    ]:
        with pytest.raises(CorruptRecordError):
            parse_control_record(key, value)
    # newer versions with extra trailing fields are read as version 0
    assert parse_control_record(struct.pack(">hhx", 1, 0), struct.pack(">hiq", 1, 9, 0)) == (False, 9)


# --- cross-check with kafka-python --------------------------------------------------------------

KP_RECORDS = [
    (b"key-%d" % i if i % 3 else None, (b"value %d " % i) * 50 if i % 5 else None, h, TS + (i * 7) % 11)
    for i, h in enumerate(
        [[], [("h1", b"v1")], [("null", None), ("empty", b"")], [("ü", b"\x00")]] * 5 + [[("x", b"y" * 5000)]]
    )
]


def _kp_build(
    records, codec: int, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=txn,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 24,
    )
    for i, (key, value, headers, ts) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=list(headers))
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_built_we_read(codec: int) -> None:
    buf = _kp_build(KP_RECORDS, codec, pid=5, epoch=1, seq=10, txn=True)
    [(_, h)] = B.validate_batches(buf)
    assert h.compression == codec  # kafka-python falls back to none if it does not shrink
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.is_transactional) == (5, 1, 10, True)
    assert decode_batch_records(buf) == _expected(KP_RECORDS)


@pytest.mark.parametrize("codec", CODECS)
def test_we_built_kafka_python_reads(codec: int) -> None:
    buf = build_batch(
        KP_RECORDS, base_offset=300, compression=codec, producer_id=8, producer_epoch=2, base_sequence=0
    )
    theirs = DefaultRecordBatch(buf)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec and theirs.base_offset == 300
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (8, 2, 0)
    assert theirs.first_timestamp == KP_RECORDS[0][3]
    assert theirs.max_timestamp == max(r[3] for r in KP_RECORDS)
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in theirs]
    assert got == [tuple(r) for r in _expected(KP_RECORDS, 300)]


def test_uncompressed_bytes_identical_to_kafka_python() -> None:
    # same inputs, same layout: the uncompressed batch (and so its CRC) must match byte for byte
    ours = bytearray(
        build_batch(KP_RECORDS, producer_id=5, producer_epoch=1, base_sequence=10, is_transactional=True)
    )
    theirs = _kp_build(KP_RECORDS, 0, pid=5, epoch=1, seq=10, txn=True)
    B.set_partition_leader_epoch(ours, 0, 0)  # kafka-python writes 0 there, we write -1 (as Java)
    assert bytes(ours) == theirs
