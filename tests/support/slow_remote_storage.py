"""A ``file`` storage plugin whose uploads take a while, for fault tests of tiered storage.

Broker properties: ``remote.log.storage.manager.class.name=tests.support.slow_remote_storage:SlowFileRemoteStorage``
(the node processes must be able to import ``tests``: the repository root on their ``PYTHONPATH``),
``rsm.config.dir`` as for ``file``, and ``rsm.config.copy.delay.ms`` (default 200): how long each
upload waits once the segment's index files are written and before its ``.log`` is. During that
time the upload is *in flight* and visible in the directory as a segment stem with index files and
no ``.log`` (:func:`uploads_in_flight`), so a test can kill the uploading broker mid-copy.

Everything else (layout, crash safety, fetches, deletes) is the ``file`` plugin's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from zurau.storage.remote.file_remote_storage import FileRemoteStorageManager
from zurau.storage.remote.remote_log_segment import IndexType

DELAY_CONFIG = "copy.delay.ms"
DEFAULT_DELAY_MS = 200


class SlowFileRemoteStorage(FileRemoteStorageManager):
    """The ``file`` plugin with a pause before each segment's ``.log`` is written."""

    def __init__(self) -> None:
        super().__init__()
        self.delay_s = DEFAULT_DELAY_MS / 1000

    def configure(self, configs: Mapping[str, str]) -> None:
        super().configure(configs)
        self.delay_s = int(configs.get(DELAY_CONFIG, DEFAULT_DELAY_MS)) / 1000

    def _write_atomically(self, final: Path, source: Path | bytes) -> None:
        if final.name.endswith(".log"):
            time.sleep(self.delay_s)
        super()._write_atomically(final, source)


def uploads_in_flight(root: Path) -> list[Path]:
    """Segment stems under ``root`` with an offset index but no ``.log`` (uploads in flight, or
    left by a broker that died during one)."""
    out = []
    for index in root.rglob(f"*.{IndexType.OFFSET.value}"):
        if not index.with_suffix(".log").exists():
            out.append(index.with_suffix(""))
    return out
