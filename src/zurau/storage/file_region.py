"""Fetched log bytes made transferable: a :class:`~zurau.storage.partition_log.LogReadSlice` turned
into what a response carries to the socket (Kafka's ``FileRecords`` slice as ``TransferableRecords``).

A :class:`LogReadSlice` names a range of a segment file by the log's own descriptor, which a
retention pass may close at the next await; :func:`transferable` turns it, right after the read
and before any await, into either

* ``bytes`` read with one ``pread`` (slices up to :data:`SMALL_SLICE_BYTES`: a region would cost a
  ``dup``, a ``sendfile`` and a ``close`` and split the response into two writes, which at low
  rates is most of a fetch's cost), or
* a :class:`FileRegion` holding its own duplicate of the descriptor, which the broker's connection
  sends with ``os.sendfile`` straight from the page cache (plain TCP) or reads in pieces (TLS).

Invariant: a :class:`FileRegion` stays readable until it is closed (by the connection once
written, or when collected), however long the response waits behind earlier ones and even if
the segment file is deleted meanwhile. ``len()`` is its size: the codec writes it as the records
length and appends the region as one piece of the response.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from zurau.storage.partition_log import LogReadSlice

#: Slices up to this size are read into the response rather than sent as a file region.
SMALL_SLICE_BYTES = 16 * 1024


class FileRegion:
    """Bytes ``[position, position + size)`` of an open file, to be sent without copying.

    Holds its own duplicate of the descriptor (see the module docstring). ``bytes()`` reads the
    region (for transports that cannot sendfile).
    """

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd = -1
        self.fd = os.dup(fd)
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def read(self, skip: int = 0) -> bytes:
        """The region's bytes from ``skip`` on; raises EOFError if the file was truncated under it."""
        want = self.size - skip
        chunks = []
        pos = self.position + skip
        while want > 0:
            chunk = os.pread(self.fd, want, pos)
            if not chunk:
                raise EOFError(f"file region truncated: {want} of {self.size} bytes missing")
            chunks.append(chunk)
            pos += len(chunk)
            want -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def __bytes__(self) -> bytes:
        return self.read()

    def chunks(self, skip: int, size: int) -> Iterator[bytes]:
        """The region's bytes from ``skip`` on, ``size`` bytes at a time (EOFError if truncated)."""
        pos, end = self.position + skip, self.position + self.size
        while pos < end:
            chunk = os.pread(self.fd, min(size, end - pos), pos)
            if not chunk:
                raise EOFError(f"file region truncated: {end - pos} of {self.size} bytes missing")
            pos += len(chunk)
            yield chunk

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


def transferable(data: LogReadSlice) -> bytes | FileRegion:
    """``data`` as a response carries it: its bytes when small, else a file region (see the
    module docstring). Call it with no await since the read, while the log's descriptor is open."""
    if data.size <= SMALL_SLICE_BYTES:
        chunk = os.pread(data.fd, data.size, data.position)
        if len(chunk) == data.size:
            return chunk
    return FileRegion(data.fd, data.position, data.size)
