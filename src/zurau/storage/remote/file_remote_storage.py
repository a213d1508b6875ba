"""The ``file`` storage plugin: the remote tier in a directory (an NFS mount, a second disk).

Setting (broker property ``rsm.config.dir``, or ``dir`` given to :meth:`configure`): the directory,
created if missing. Kafka's own ``LocalTieredStorage`` test plugin uses the same setting name.

Layout (:mod:`zurau.storage.remote.remote_segment_layout`)::

    <dir>/<topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>.log
                                                                              .index
                                                                              .timeindex
                                                                              .txnindex     (optional)
                                                                              .snapshot
                                                                              .leader-epoch-checkpoint

Crash safety: every file is written under a temporary name ``<final name>.<random>.tmp`` in the
same directory, fsynced, renamed to its final name and the directory fsynced; so a file with a
final name is always complete and durable, and a crash mid-copy leaves at most temporary files,
which no fetch ever opens and :meth:`delete_log_segment_data` removes with the segment's other
files. The ``.log`` is renamed last.

Errors: a missing file is :class:`RemoteResourceNotFoundError`; any other ``OSError`` (including a
local segment file that retention removed during the copy) is :class:`RemoteStorageError`.
Deleting removes the partition's and the topic's directory once they are empty.

Thread safety: calls for different segments share nothing but directories, and each call opens
its own files, so any number of threads may call the plugin at once.
"""

from __future__ import annotations

import errno
import io
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from zurau.storage.checkpoint import fsync_dir
from zurau.storage.remote.remote_log_segment import IndexType, LogSegmentData, RemoteLogSegmentMetadata
from zurau.storage.remote.remote_segment_layout import (
    LOG_SUFFIX,
    partition_path,
    segment_file_stem,
    suffix_of,
)
from zurau.storage.remote.remote_storage_manager import RemoteResourceNotFoundError, RemoteStorageError

DIR_CONFIG = "dir"
TMP_SUFFIX = ".tmp"
_MKDIR_ATTEMPTS = 3  # a concurrent delete may remove an emptied partition directory under a copy


class RangeReader(io.RawIOBase):
    """Reads at most ``length`` bytes of ``raw`` (an open binary file) from its current position;
    closing it closes ``raw``."""

    def __init__(self, raw: BinaryIO, length: int | None) -> None:
        super().__init__()
        self._raw = raw
        self._left = length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        want = len(view) if self._left is None else min(len(view), self._left)
        if want <= 0:
            return 0
        data = self._raw.read(want)
        n = len(data)
        view[:n] = data
        if self._left is not None:
            self._left -= n
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def check_range(start_position: int, end_position: int | None) -> None:
    if start_position < 0:
        raise ValueError(f"start position {start_position} < 0")
    if end_position is not None and end_position < start_position:
        raise ValueError(f"end position {end_position} < start position {start_position}")


@contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError as e:
        raise RemoteResourceNotFoundError(f"{what}: {e.filename} not found") from e
    except OSError as e:
        raise RemoteStorageError(f"{what}: {e}") from e


class FileRemoteStorageManager:
    """The ``file`` plugin (see the module docstring)."""

    def __init__(self) -> None:
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None:
            raise RemoteStorageError("the file remote storage is not configured (no rsm.config.dir)")
        return self._root

    def configure(self, configs: Mapping[str, str]) -> None:
        value = configs.get(DIR_CONFIG, "").strip()
        if not value:
            raise ValueError(
                f"the file remote storage needs the setting rsm.config.{DIR_CONFIG} (a directory)"
            )
        root = Path(value)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ValueError(f"rsm.config.{DIR_CONFIG}={value}: cannot create the directory: {e}") from e
        if not root.is_dir():
            raise ValueError(f"rsm.config.{DIR_CONFIG}={value} is not a directory")
        self._root = root

    # -- paths -----------------------------------------------------------------------------------
    def partition_dir(self, metadata: RemoteLogSegmentMetadata) -> Path:
        return self.root / partition_path(metadata)

    def path_of(self, metadata: RemoteLogSegmentMetadata, suffix: str) -> Path:
        return self.partition_dir(metadata) / f"{segment_file_stem(metadata)}.{suffix}"

    # -- copy ------------------------------------------------------------------------------------
    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        files: list[tuple[str, Path | bytes]] = [
            (suffix_of(IndexType.OFFSET), data.offset_index),
            (suffix_of(IndexType.TIMESTAMP), data.time_index),
        ]
        if data.transaction_index is not None:
            files.append((suffix_of(IndexType.TRANSACTION), data.transaction_index))
        files += [
            (suffix_of(IndexType.PRODUCER_SNAPSHOT), data.producer_snapshot),
            (suffix_of(IndexType.LEADER_EPOCH), data.leader_epoch_index),
            (LOG_SUFFIX, data.log_segment),  # last: see the module docstring
        ]
        with _storage_errors(f"copying {metadata.segment_id}"):
            try:
                for suffix, source in files:
                    self._write_atomically(self.path_of(metadata, suffix), source)
            except FileNotFoundError as e:
                # A local file vanished, or the directory was removed under us: not a missing
                # remote object, so not RemoteResourceNotFoundError.
                raise RemoteStorageError(f"copying {metadata.segment_id}: {e}") from e
        return None

    def _write_atomically(self, final: Path, source: Path | bytes) -> None:
        tmp = final.with_name(f"{final.name}.{secrets.token_hex(6)}{TMP_SUFFIX}")
        for attempt in range(_MKDIR_ATTEMPTS):
            try:
                final.parent.mkdir(parents=True, exist_ok=True)
                out = open(tmp, "xb")  # noqa: SIM115 (closed below, after the fsync)
                break
            except FileNotFoundError:
                if attempt == _MKDIR_ATTEMPTS - 1:
                    raise
        try:
            with out:
                if isinstance(source, bytes):
                    out.write(source)
                else:
                    with open(source, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(final.parent)

    # -- fetch -----------------------------------------------------------------------------------
    def fetch_log_segment(
        self, metadata: RemoteLogSegmentMetadata, start_position: int, end_position: int | None = None
    ) -> BinaryIO:
        check_range(start_position, end_position)
        path = self.path_of(metadata, LOG_SUFFIX)
        with _storage_errors(f"fetching {metadata.segment_id}"):
            f = open(path, "rb")  # noqa: SIM115 (the caller closes the reader)
            try:
                f.seek(start_position)
            except BaseException:
                f.close()
                raise
        length = None if end_position is None else end_position - start_position + 1
        return io.BufferedReader(RangeReader(f, length))

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        with _storage_errors(f"fetching the {index_type.name} index of {metadata.segment_id}"):
            return open(self.path_of(metadata, suffix_of(index_type)), "rb")

    # -- delete ----------------------------------------------------------------------------------
    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        directory = self.partition_dir(metadata)
        stem = segment_file_stem(metadata)
        with _storage_errors(f"deleting {metadata.segment_id}"):
            try:
                names = [n for n in os.listdir(directory) if n.startswith(stem + ".")]
            except FileNotFoundError:
                return
            for name in names:
                (directory / name).unlink(missing_ok=True)
            if names:
                fsync_dir(directory)
            for d in (directory, directory.parent):
                try:
                    d.rmdir()
                except FileNotFoundError:
                    continue
                except OSError as e:
                    if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        break
                    raise

    def close(self) -> None:
        pass


__all__ = ["DIR_CONFIG", "FileRemoteStorageManager", "RangeReader", "check_range"]
