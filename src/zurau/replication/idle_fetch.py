"""Idle partitions of a sessionless consumer Fetch, answered from precomputed bytes.

Consumers without fetch sessions (librdkafka, kafka-python, aiokafka) name every assigned
partition in every Fetch, so with 1,000 partitions and a few of them written to, almost every
partition of almost every fetch is *idle*: led here, at the fetcher's leader epoch, and fetched
at exactly the offset reading stops at (the high watermark, or for read_committed the last
stable offset), not below the log start. Reading such a partition finds no records and no error,
and its answer depends only on (partition index, high watermark, last stable offset, log start
offset) and on the request's version and isolation level: error 0, no aborted transactions (an
empty list for read_committed, null otherwise), no preferred read replica (-1), empty records and
no tagged fields. :func:`idle_encoder` writes that answer with one ``struct`` call; the replica
manager's fetch (:mod:`zurau.replication.delayed_fetch`) puts the bytes in the response in place of
the partition's dict (the codec appends a ``bytes`` element of an array of structs as is), so an
idle partition costs a dictionary lookup, a few attribute reads and one ``pack``: no read, no
dict, no generic encoding.

Invariant: ``idle_encoder(v, rc)(i, hw, lso, ls)`` is byte for byte the codec's encoding of that
partition entry in Fetch response version ``v``; it is checked against the codec when first built
(and by the unit tests for every version), and the codec's own encoder is used if it ever differs.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.codec import compile_struct
from zurau.protocol.messages import FetchResponseResponsesPartitions
from zurau.protocol.schemas import ALL
from zurau.protocol.schemas.fetch import PARTITION_DATA

#: (partition index, high watermark, last stable offset, log start offset) -> encoded entry.
IdleEncoder = Callable[[int, int, int, int], bytes]


def idle_entry(index: int, hw: int, lso: int, log_start: int, read_committed: bool) -> FetchResponseResponsesPartitions:
    """The partition entry a read of an idle partition gives (as a full read builds it)."""
    return {
        "partition_index": index,
        "error_code": 0,
        "high_watermark": hw,
        "last_stable_offset": lso,
        "log_start_offset": log_start,
        "aborted_transactions": [] if read_committed else None,
        "preferred_read_replica": -1,
        "records": b"",
    }


@cache
def idle_encoder(version: int, read_committed: bool) -> IdleEncoder:
    """The encoder of idle partition entries for Fetch response ``version`` (see the module
    docstring); the codec's own encoder when the fast form does not reproduce it exactly."""
    _, enc = compile_struct(PARTITION_DATA.fields, version, ALL[ApiKey.FETCH].is_flexible(version), "idle")

    def via_codec(index: int, hw: int, lso: int, log_start: int) -> bytes:
        out = bytearray()
        enc(out, idle_entry(index, hw, lso, log_start, read_committed), [])
        return bytes(out)

    # Every version from 4 on starts with partition_index, error_code, high_watermark,
    # last_stable_offset, then (v5+) log_start_offset; what follows is the same for every idle
    # partition (aborted transactions, preferred read replica, records, tags).
    with_log_start = version >= 5
    head = ">ihqq" + ("q" if with_log_start else "")
    head_size = struct.calcsize(head)
    tail = via_codec(0, 0, 0, 0)[head_size:]
    pack = struct.Struct(f"{head}{len(tail)}s").pack

    if with_log_start:

        def fast(index: int, hw: int, lso: int, log_start: int) -> bytes:
            return pack(index, 0, hw, lso, log_start, tail)

    else:

        def fast(index: int, hw: int, lso: int, log_start: int) -> bytes:
            return pack(index, 0, hw, lso, tail)

    samples = ((0, 0, 0, 0), (7, 1 << 40, (1 << 40) - 5, 3), (2**31 - 1, 2**62, 2**61, 2**60))
    if all(fast(*s) == via_codec(*s) for s in samples):
        return fast
    return via_codec
