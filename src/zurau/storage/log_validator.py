"""Produce-time conversions that need the records themselves (Kafka's LogValidator role).

Only one conversion decodes records today: a topic whose ``compression.type`` is a codec (not
``producer``) stores every batch in that codec, so a batch that arrives in another codec is
decoded and rebuilt. Everything that identifies the batch is kept: producer id, epoch, base
sequence, transactional bit, timestamp type, record timestamps, keys, values and headers; offset
deltas stay contiguous from 0 as producers write them. Control batches are never rewritten.
Batches already in the topic's codec pass through untouched (the common, zero-decode path).
"""

from __future__ import annotations

from zurau.protocol.records.batch import BatchHeader, validate_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records

CODEC_BY_NAME = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def target_codec(compression_type: str) -> int | None:
    """The codec a topic's ``compression.type`` forces, or None for ``producer``."""
    return CODEC_BY_NAME.get(compression_type)


def needs_conversion(batches: list[tuple[int, BatchHeader]], codec: int | None) -> bool:
    return codec is not None and any(h.compression != codec and not h.is_control for _p, h in batches)


def convert_compression(
    buf: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]], codec: int
) -> tuple[bytearray, list[tuple[int, BatchHeader]]]:
    """Rebuild every non-control batch whose codec differs from ``codec``; revalidate the result."""
    mv = memoryview(buf)
    out = bytearray()
    for pos, h in batches:
        whole = mv[pos : pos + h.size]
        if h.is_control or h.compression == codec:
            out += whole
            continue
        records = decode_batch_records(whole)
        out += build_batch(
            [NewRecord(r.key, r.value, r.headers, r.timestamp) for r in records],
            compression=codec,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            is_transactional=h.is_transactional,
            timestamp_type=h.timestamp_type,
        )
    return out, validate_batches(out)
