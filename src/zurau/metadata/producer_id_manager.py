"""Producer id allocation that never hands out the same id twice, across restarts.

Ids are reserved in blocks: the file ``producer_id_block`` holds one integer, the first id not yet
reserved. Reserving a block writes the new bound durably (temp file, fsync, rename) *before* any id
of the block is handed out, so after a crash at worst the rest of a block is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, directory: Path) -> None:
        self.path = directory / "producer_id_block"
        self._next = 0
        self._limit = 0
        if self.path.exists():
            text = self.path.read_text("ascii").strip()
            try:
                self._next = self._limit = int(text)
            except ValueError:
                raise ValueError(f"{self.path}: expected an integer, found {text[:40]!r}") from None

    def _reserve(self) -> None:
        limit = self._limit + BLOCK_SIZE
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{limit}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._next = self._limit
        self._limit = limit

    def next_id(self) -> int:
        if self._next >= self._limit:
            self._reserve()
        pid = self._next
        self._next += 1
        return pid
