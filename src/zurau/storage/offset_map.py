"""The log cleaner's key -> latest offset map (Kafka's ``SkimpyOffsetMap``).

A cleaning pass first reads the dirty part of a log and remembers, for every key, the offset of
its latest record; it then keeps a record only if its offset is that latest one. Like Kafka, the
map stores a 16-byte digest of each key instead of the key (keys can be large): two keys with the
same digest would make the older record of one look superseded by the other, a risk Kafka accepts
with MD5 and that BLAKE2b-128 keeps at the same ~2**-64 per pair of keys.

Bounded memory: the map holds at most ``capacity`` keys, derived from its memory budget
(``log.cleaner.dedupe.buffer.size / log.cleaner.threads``) and ``log.cleaner.io.buffer.load.factor``
as ``int(memory // ENTRY_BYTES * load_factor)``. Kafka packs an entry in 24 bytes (digest +
offset) of a preallocated buffer; here an entry is a Python dict item (a 16-byte ``bytes`` key and
an ``int``), measured at 133 bytes on average and 150 at the peak of a dict resize, so
``ENTRY_BYTES`` is 160 and the map never grows past its budget. When the map is full, ``put``
refuses the key: the pass then cleans only up to :attr:`latest_offset`, the last offset whose
batch was mapped completely, and the next pass continues from there (Kafka's behaviour).

Invariants: ``latest_offset`` only grows between ``clear`` calls; a key absent from the map has
offset -1, so every record is at or after it (kept).
"""

from __future__ import annotations

import hashlib

ENTRY_BYTES = 160
_DIGEST_BYTES = 16


def key_digest(key: bytes | bytearray | memoryview) -> bytes:
    """The 16-byte digest the map stores for ``key``."""
    return hashlib.blake2b(key, digest_size=_DIGEST_BYTES).digest()


class OffsetMap:
    """Digest of a key -> offset of its latest record, bounded to ``capacity`` keys."""

    def __init__(self, memory: int, load_factor: float = 0.9) -> None:
        if memory <= 0:
            raise ValueError(f"the offset map needs a positive memory budget, not {memory}")
        if not 0 < load_factor <= 1:
            raise ValueError(f"load factor {load_factor} is not in (0, 1]")
        self.memory = memory
        self.slots = memory // ENTRY_BYTES
        self.capacity = int(self.slots * load_factor)
        if self.capacity < 1:
            raise ValueError(
                f"an offset map of {memory} bytes cannot hold a single key "
                f"(raise log.cleaner.dedupe.buffer.size or lower log.cleaner.threads)"
            )
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1
        self.lookups = 0
        self.inserts = 0

    def __len__(self) -> int:
        return len(self._map)

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.capacity

    @property
    def utilization(self) -> float:
        """Fraction of the capacity in use (Kafka's ``bufferUtilization``)."""
        return len(self._map) / self.capacity

    def put(self, key: bytes | bytearray | memoryview, offset: int) -> bool:
        """Remember ``offset`` as the latest for ``key``; False (nothing stored) when full.

        As in Kafka, fullness is checked before the key is looked at, so a full map refuses even
        a key it holds: the caller stops mapping at that record.
        """
        if len(self._map) >= self.capacity:
            return False
        self._map[key_digest(key)] = offset
        self.inserts += 1
        return True

    def get(self, key: bytes | bytearray | memoryview) -> int:
        """The latest offset mapped for ``key``, or -1."""
        self.lookups += 1
        return self._map.get(key_digest(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        """Everything up to ``offset`` is mapped (offsets past it are beyond this pass)."""
        if offset > self.latest_offset:
            self.latest_offset = offset

    def clear(self) -> None:
        self._map = {}
        self.latest_offset = -1
        self.lookups = self.inserts = 0
