"""Kafka codecs: round trips, the snappy framings, interop with kafka-python, corrupt input, bombs."""

from __future__ import annotations

import gzip
import io
import os
import struct
import types

import cramjam
import kafka.codec
import lz4.frame
import pytest
import zstandard

from zurau.protocol.errors import CorruptRecordError, UnsupportedCompressionTypeError
from zurau.protocol.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    XERIAL_MAGIC,
    ZSTD,
    compress,
    decompress,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
COMPRESSED = [GZIP, SNAPPY, LZ4, ZSTD]

# Mixed payload: compressible runs, random bytes, spans several 32 KiB snappy / 64 KiB lz4 blocks.
PAYLOAD = (b"kafka record " * 5000) + os.urandom(70_000) + bytes(100_000)


def _raw_snappy(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


@pytest.fixture
def kafka_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python's codec needs python-snappy; back it with cramjam's raw snappy instead."""
    shim = types.SimpleNamespace(
        compress=lambda b: bytes(cramjam.snappy.compress_raw(bytes(b))),
        decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))),
    )
    monkeypatch.setattr(kafka.codec, "snappy", shim)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("data", [b"", b"x", PAYLOAD], ids=["empty", "one-byte", "large"])
def test_round_trip(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_accepts_buffer_types(codec: int) -> None:
    z = compress(codec, bytearray(PAYLOAD[:5000]))
    assert decompress(codec, memoryview(z)) == PAYLOAD[:5000]
    assert decompress(codec, bytearray(z)) == PAYLOAD[:5000]


@pytest.mark.parametrize("codec", COMPRESSED)
def test_actually_compresses(codec: int) -> None:
    assert len(compress(codec, b"a" * 100_000)) < 10_000


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 100])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(UnsupportedCompressionTypeError) as e:
        compress(codec, b"x")
    assert e.value.code == 76
    with pytest.raises(UnsupportedCompressionTypeError):
        decompress(codec, b"x")


# --- snappy framing -----------------------------------------------------------------------------


def _xerial(blocks: list[bytes], version: bytes = struct.pack(">ii", 1, 1)) -> bytes:
    out = XERIAL_MAGIC + version
    for b in blocks:
        z = _raw_snappy(b)
        out += struct.pack(">i", len(z)) + z
    return out


def test_snappy_writes_xerial_framing() -> None:
    z = compress(SNAPPY, PAYLOAD)
    assert z[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    # 32 KiB input chunks, each a length-prefixed raw snappy block
    pos, out, blocks = 16, b"", 0
    while pos < len(z):
        (n,) = struct.unpack_from(">i", z, pos)
        chunk = bytes(cramjam.snappy.decompress_raw(z[pos + 4 : pos + 4 + n]))
        assert len(chunk) <= 32 * 1024
        out += chunk
        pos += 4 + n
        blocks += 1
    assert out == PAYLOAD
    assert blocks == -(-len(PAYLOAD) // (32 * 1024))


def test_snappy_decodes_hand_assembled_xerial() -> None:
    blocks = [b"first block " * 100, b"", os.urandom(5000), b"z" * 40_000]
    assert decompress(SNAPPY, _xerial(blocks)) == b"".join(blocks)


def test_snappy_xerial_ignores_version_fields() -> None:
    # redpanda wrote version/compat little-endian; kafka-python and librdkafka ignore them
    data = b"little endian header " * 50
    assert decompress(SNAPPY, _xerial([data], struct.pack("<ii", 1, 1))) == data


def test_snappy_xerial_concatenated_streams() -> None:
    assert decompress(SNAPPY, _xerial([b"abc" * 10]) + _xerial([b"def" * 10])) == b"abc" * 10 + b"def" * 10


def test_snappy_decodes_raw() -> None:
    for data in (b"", b"a", PAYLOAD):
        assert decompress(SNAPPY, _raw_snappy(data)) == data


def test_snappy_interop_with_kafka_python(kafka_snappy: None) -> None:
    # theirs (xerial and raw) -> ours
    assert decompress(SNAPPY, kafka.codec.snappy_encode(PAYLOAD)) == PAYLOAD
    assert decompress(SNAPPY, kafka.codec.snappy_encode(PAYLOAD, xerial_compatible=False)) == PAYLOAD
    # ours -> theirs
    assert kafka.codec.snappy_decode(compress(SNAPPY, PAYLOAD)) == PAYLOAD


def test_snappy_corrupt() -> None:
    good = _xerial([b"hello " * 100])
    bad_inputs = [
        good[:-3],  # truncated block
        good[:18],  # truncated length
        XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01" + struct.pack(">i", -5) + b"xx",
        XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01" + struct.pack(">i", 3) + b"\xff\xff\xff",
        b"\xff\xff\xff\xff\xff\xff",  # raw: invalid length preamble
        b"\x05\x00",  # raw: claims 5 bytes, has none
        b"",
    ]
    for bad in bad_inputs:
        with pytest.raises(CorruptRecordError):
            decompress(SNAPPY, bad)


# --- lz4 / gzip / zstd specifics ----------------------------------------------------------------


def test_lz4_frame_matches_kafka_java_settings() -> None:
    z = compress(LZ4, PAYLOAD)
    assert z[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg, bd = z[4], z[5]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # independent blocks (Kafka's Java reader rejects dependent blocks)
    assert not flg & 0x08  # no content size
    assert not flg & 0x10  # no block checksum
    assert (bd >> 4) & 0x7 == 4  # 64 KiB max block size
    assert lz4.frame.decompress(z) == PAYLOAD


def test_lz4_interop_with_kafka_python() -> None:
    assert decompress(LZ4, kafka.codec.lz4_encode(PAYLOAD)) == PAYLOAD
    assert kafka.codec.lz4_decode(compress(LZ4, PAYLOAD)) == PAYLOAD
    # a frame with content size, checksums and linked blocks (as other writers may produce)
    fancy = lz4.frame.compress(PAYLOAD, store_size=True, content_checksum=True, block_linked=True)
    assert decompress(LZ4, fancy) == PAYLOAD


def test_gzip_interop() -> None:
    assert decompress(GZIP, gzip.compress(PAYLOAD)) == PAYLOAD
    assert decompress(GZIP, kafka.codec.gzip_encode(PAYLOAD)) == PAYLOAD
    assert gzip.decompress(compress(GZIP, PAYLOAD)) == PAYLOAD
    # concatenated members, as GZIPInputStream accepts
    assert decompress(GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_zstd_streaming_frame_without_content_size() -> None:
    buf = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(buf, closefd=False) as w:
        w.write(PAYLOAD)
    z = buf.getvalue()
    assert zstandard.get_frame_parameters(z).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, z) == PAYLOAD
    assert decompress(ZSTD, z + zstandard.ZstdCompressor().compress(b"tail")) == PAYLOAD + b"tail"


def test_zstd_interop_with_kafka_python() -> None:
    assert decompress(ZSTD, kafka.codec.zstd_encode(PAYLOAD)) == PAYLOAD
    assert kafka.codec.zstd_decode(compress(ZSTD, PAYLOAD)) == PAYLOAD


# --- corrupt input and bombs --------------------------------------------------------------------


@pytest.mark.parametrize("codec", COMPRESSED)
def test_corrupt_input(codec: int) -> None:
    z = compress(codec, PAYLOAD)
    for bad in (b"", b"\x00" * 10, os.urandom(64), z[: len(z) // 2], z[:-1], z + b"junk!"):
        with pytest.raises(CorruptRecordError):
            decompress(codec, bad)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_random_mutations_only_raise_corrupt_record(codec: int) -> None:
    import random

    rng = random.Random(codec)
    z = bytearray(compress(codec, PAYLOAD[:20_000]))
    for _ in range(300):
        m = bytearray(z)
        for _ in range(rng.randint(1, 4)):
            m[rng.randrange(len(m))] = rng.randrange(256)
        try:
            decompress(codec, bytes(m), max_output=1 << 20)
        except CorruptRecordError:
            pass


@pytest.mark.parametrize("codec", CODECS)
def test_max_output(codec: int) -> None:
    data = bytes(1 << 20)
    z = compress(codec, data)
    assert decompress(codec, z, max_output=len(data)) == data
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(codec, z, max_output=len(data) - 1)


def test_bombs_are_rejected_quickly() -> None:
    # 64 MiB of zeros compress to a few KiB; each codec must stop near the limit
    zstd_bomb = zstandard.ZstdCompressor().compress(bytes(64 << 20))
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(ZSTD, zstd_bomb, max_output=1 << 20)
    # a raw snappy block whose preamble claims 512 MiB is refused at the default limit up front
    size = 512 << 20
    preamble = bytearray()
    n = size
    while n >= 0x80:
        preamble.append((n & 0x7F) | 0x80)
        n >>= 7
    preamble.append(n)
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(SNAPPY, bytes(preamble) + b"\x00" * 16)
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(GZIP, compress(GZIP, bytes(8 << 20)), max_output=1 << 20)
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(LZ4, compress(LZ4, bytes(8 << 20)), max_output=1 << 20)
