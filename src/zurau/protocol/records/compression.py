"""Kafka record-batch compression codecs, keyed by the batch ``attributes & 0x07`` value.

=====  =======  ================================================================================
codec  name     bytes of the compressed records section (everything after the 61-byte header)
=====  =======  ================================================================================
0      none     the records themselves
1      gzip     RFC 1952 gzip member(s) (Java writes one ``GZIPOutputStream`` member)
2      snappy   xerial/snappy-java framing *or* one raw snappy block (see below)
3      lz4      LZ4 frame format (magic ``04 22 4D 18``), independent blocks
4      zstd     zstd frame(s), content size possibly absent (streaming encoders omit it)
=====  =======  ================================================================================

Snappy framing
--------------
The xerial (snappy-java ``SnappyOutputStream``) framing is, big-endian::

    8   magic      82 53 4E 41 50 50 59 00   (b"\\x82SNAPPY\\x00")
    4   version    int32 (1)
    4   compat     int32 (1)
    then, until the end of the data, blocks of:
    4   length     int32, bytes of the following raw snappy block
    n   block      raw snappy (varint uncompressed length + elements), input chunks of 32 KiB

Raw snappy is a single block with no framing at all.

*Decision:* :func:`compress` writes the xerial framing with 32 KiB input chunks, byte-for-byte the
layout the Java producer (Kafka's ``SnappyFactory`` wraps ``SnappyOutputStream``) and the Java broker
(when it recompresses) write, so every client has been tested against it. Every client reads both:

* librdkafka ``rdkafka_msgset_reader.c`` checks the 8-byte magic (and length > 16 + 4) and uses
  ``rd_kafka_snappy_java_uncompress``, otherwise raw snappy; its writer
  (``rd_kafka_msgset_writer_compress_snappy``) emits *raw* snappy.
* snappy-java ``SnappyInputStream.readHeader`` falls back to raw ``Snappy.uncompress`` when the
  magic is absent, so the Java client reads librdkafka/sarama batches.
* kafka-python ``codec.snappy_decode`` detects the magic (ignoring version/compat, since redpanda
  wrote them little-endian), else raw; ``snappy_encode`` writes xerial by default.

:func:`decompress` therefore accepts both, ignores the version/compat values like kafka-python, and
treats input that starts with the magic as xerial. (A raw snappy block cannot start with the magic:
its third byte would be a copy element before any literal.)

LZ4
---
:func:`compress` writes a standard LZ4 frame with independent 64 KiB blocks, no block or content
checksum and no content size, as Kafka's ``KafkaLZ4BlockOutputStream`` does (its reader rejects
dependent blocks). The broken header checksum of Kafka 0.8-0.9 concerns only magic 0/1 message sets
and is not handled here: v2 batches always use standard frames.

Decompression bombs
-------------------
Every :func:`decompress` call takes ``max_output`` (default :data:`DEFAULT_MAX_OUTPUT`, 256 MiB) and
raises :class:`CorruptRecordError` as soon as the output would exceed it, without producing more than
about ``max_output`` bytes first.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

import cramjam
import lz4.frame
import zstandard

from zurau.protocol.errors import CorruptRecordError, KafkaError, UnsupportedCompressionTypeError

__all__ = [
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CODEC_NAMES",
    "DEFAULT_MAX_OUTPUT",
    "OutputLimitExceeded",
    "XERIAL_MAGIC",
    "compress",
    "decompress",
]

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

CODEC_NAMES: Final[dict[int, str]] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

DEFAULT_MAX_OUTPUT: Final = 256 * 1024 * 1024

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE: Final = 16
_XERIAL_BLOCK_SIZE: Final = 32 * 1024
_I32: Final = struct.Struct(">i")

_GZIP_DEFAULT_LEVEL: Final = 6  # java.util.zip.Deflater.DEFAULT_COMPRESSION
_ZSTD_DEFAULT_LEVEL: Final = 3  # zstd-jni / librdkafka default
_ZSTD_FEED: Final = 1024

Buffer = bytes | bytearray | memoryview


def compress(codec: int, data: Buffer, *, level: int | None = None) -> bytes:
    """Compress a records section with ``codec`` (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).

    ``level`` is passed to gzip/lz4/zstd (ignored by none/snappy); None uses Kafka's defaults.
    Snappy output is xerial-framed (see the module docstring). Raises
    UnsupportedCompressionTypeError for any other codec value.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        c = zlib.compressobj(_GZIP_DEFAULT_LEVEL if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_compress(memoryview(data))
    if codec == LZ4:
        return lz4.frame.compress(
            data,
            compression_level=0 if level is None else level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_DEFAULT_LEVEL if level is None else level).compress(data)
    raise UnsupportedCompressionTypeError(f"unknown compression codec {codec}")


#: The input would decompress to more than ``max_output`` bytes: a CORRUPT_MESSAGE on the wire,
#: like any other decompression failure (a subclass of CorruptRecordError, built the way the
#: error classes are); callers that answer differently catch it.
OutputLimitExceeded: type[KafkaError] = type(
    "OutputLimitExceeded", (CorruptRecordError,), {"__doc__": "Decompressed output over the limit."}
)


def decompress(codec: int, data: Buffer, *, max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
    """Decompress a records section compressed with ``codec``.

    Raises UnsupportedCompressionTypeError for an unknown codec and CorruptRecordError for input
    that is malformed, truncated, or that would decompress to more than ``max_output`` bytes.
    """
    if codec == NONE:
        if len(data) > max_output:
            raise OutputLimitExceeded(f"records exceed the {max_output}-byte limit")
        return bytes(data)
    if codec == GZIP:
        return _gzip_decompress(data, max_output)
    if codec == SNAPPY:
        return _snappy_decompress(memoryview(data), max_output)
    if codec == LZ4:
        return _lz4_decompress(data, max_output)
    if codec == ZSTD:
        return _zstd_decompress(data, max_output)
    raise UnsupportedCompressionTypeError(f"unknown compression codec {codec}")


def _too_big(name: str, max_output: int) -> KafkaError:
    return OutputLimitExceeded(f"{name} records decompress to more than the {max_output}-byte limit")


# --- gzip ---------------------------------------------------------------------------------------


def _gzip_decompress(data: Buffer, max_output: int) -> bytes:
    """One or more concatenated gzip members (as GZIPInputStream reads them); nothing else after."""
    out = bytearray()
    rest: Buffer = data
    try:
        while True:
            d = zlib.decompressobj(31)
            chunk = d.decompress(rest, max_output - len(out) + 1)
            out += chunk
            while not d.eof and len(out) <= max_output:
                if not d.unconsumed_tail:
                    raise CorruptRecordError("gzip records are truncated")
                out += d.decompress(d.unconsumed_tail, max_output - len(out) + 1)
            if len(out) > max_output:
                raise _too_big("gzip", max_output)
            rest = d.unused_data
            if not rest:
                return bytes(out)
            if rest[:2] != b"\x1f\x8b":
                raise CorruptRecordError(f"gzip records have {len(rest)} trailing bytes")
    except zlib.error as e:
        raise CorruptRecordError(f"gzip records are corrupt: {e}") from None


# --- snappy -------------------------------------------------------------------------------------


def _xerial_compress(mv: memoryview) -> bytes:
    parts = [_XERIAL_HEADER]
    n = len(mv)
    for i in range(0, max(n, 1), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(mv[i : i + _XERIAL_BLOCK_SIZE]))
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _raw_snappy_length(mv: memoryview) -> int:
    """The uncompressed length in a raw snappy block's preamble (uvarint, at most 32 bits)."""
    result = 0
    shift = 0
    for i in range(min(len(mv), 5)):
        b = mv[i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > 0xFFFFFFFF:
                break
            return result
        shift += 7
    raise CorruptRecordError("snappy block has an invalid length preamble")


def _raw_snappy_block(block: memoryview, budget: int, max_output: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise _too_big("snappy", max_output)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as e:
        raise CorruptRecordError(f"snappy records are corrupt: {e}") from None


def _snappy_decompress(mv: memoryview, max_output: int) -> bytes:
    n = len(mv)
    if n < _XERIAL_HEADER_SIZE or mv[:8].tobytes() != XERIAL_MAGIC:
        return _raw_snappy_block(mv, max_output, max_output)
    # xerial framing; version and compat are ignored (see module docstring)
    parts: list[bytes] = []
    total = 0
    pos = _XERIAL_HEADER_SIZE
    while pos < n:
        if mv[pos : pos + 8].tobytes() == XERIAL_MAGIC:  # concatenated stream (a length is never negative)
            pos += _XERIAL_HEADER_SIZE
            continue
        if n - pos < 4:
            raise CorruptRecordError("xerial snappy block length is truncated")
        length = _I32.unpack_from(mv, pos)[0]
        pos += 4
        if length < 0 or pos + length > n:
            raise CorruptRecordError(f"xerial snappy block length {length} exceeds the data")
        block = _raw_snappy_block(mv[pos : pos + length], max_output - total, max_output)
        total += len(block)
        parts.append(block)
        pos += length
    return b"".join(parts)


# --- lz4 ----------------------------------------------------------------------------------------


def _lz4_decompress(data: Buffer, max_output: int) -> bytes:
    """One or more concatenated LZ4 frames."""
    out = bytearray()
    rest = bytes(data)
    if not rest:
        raise CorruptRecordError("lz4 records are empty")
    try:
        while rest:
            d = lz4.frame.LZ4FrameDecompressor()
            out += d.decompress(rest, max_length=max_output - len(out) + 1)
            while not d.eof and not d.needs_input and len(out) <= max_output:
                out += d.decompress(b"", max_length=max_output - len(out) + 1)
            if len(out) > max_output:
                raise _too_big("lz4", max_output)
            if not d.eof:
                raise CorruptRecordError("lz4 records are truncated")
            rest = d.unused_data
    except RuntimeError as e:  # lz4.frame reports every decoding failure as RuntimeError
        raise CorruptRecordError(f"lz4 records are corrupt: {e}") from None
    return bytes(out)


# --- zstd ---------------------------------------------------------------------------------------


def _zstd_decompress(data: Buffer, max_output: int) -> bytes:
    """One or more concatenated zstd frames, with or without a content size in their headers.

    The input is fed in ``_ZSTD_FEED``-byte slices so a bomb overshoots ``max_output`` by at most
    ~32 MiB (a 4-byte RLE block expands to 128 KiB) before it is caught; a frame still open at the
    end of the input is reported as truncated.
    """
    mv = memoryview(data).cast("B")
    n = len(mv)
    if n == 0:
        raise CorruptRecordError("zstd records are empty")
    out = bytearray()
    pos = 0
    pending: bytes = b""
    in_frame = False
    dctx = zstandard.ZstdDecompressor()
    d = dctx.decompressobj()
    try:
        while pos < n or pending:
            if pending:
                chunk: Buffer = pending
                pending = b""
            else:
                chunk = mv[pos : pos + _ZSTD_FEED]
                pos += len(chunk)
            in_frame = True
            out += d.decompress(chunk)
            if len(out) > max_output:
                raise _too_big("zstd", max_output)
            if d.eof:
                pending = d.unused_data
                in_frame = False
                d = dctx.decompressobj()
    except zstandard.ZstdError as e:
        raise CorruptRecordError(f"zstd records are corrupt: {e}") from None
    if in_frame:
        raise CorruptRecordError("zstd records are truncated")
    return bytes(out)
