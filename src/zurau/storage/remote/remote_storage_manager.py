"""The storage plugin Protocol of the remote tier (Kafka's ``RemoteStorageManager``), its errors
and the plugin loader.

A plugin stores the files of closed segments and gives them back. It is called from worker threads
(never from the broker's event loop), may be called concurrently for different segments, and must
be safe to call again after a crash for the same :class:`RemoteLogSegmentId` (a copy may be retried
under the same id only by the plugin's own retries; the remote log manager always uses a new id
for a new attempt, and deletes what an abandoned attempt left).

Errors: :class:`RemoteResourceNotFoundError` when an object that should exist does not (its data is
gone: readers answer with an error, never with other records); :class:`RemoteStorageError` for
everything else (network, permissions, throttling), which callers treat as retriable.

Loading (:func:`zurau.storage.remote.plugins.load_remote_storage_manager`, ``remote.log.storage.manager.class.name``): ``file`` and ``s3`` name the built-in
plugins; any other value is the name of an entry point in the group ``zurau.remote_storage``, or a
``module:attribute`` / dotted ``module.attribute`` path. The plugin is created with no arguments and
then given its settings through :meth:`RemoteStorageManager.configure`: the broker properties under
the prefix ``remote.log.storage.manager.impl.prefix`` (default ``rsm.config.``), prefix removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import BinaryIO, Protocol, runtime_checkable

from zurau.storage.remote.remote_log_segment import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentMetadata,
)


class RemoteStorageError(Exception):
    """A remote storage call failed (Kafka's ``RemoteStorageException``); retriable."""


class RemoteResourceNotFoundError(RemoteStorageError):
    """An object of a segment is missing (Kafka's ``RemoteResourceNotFoundException``)."""


@runtime_checkable
class RemoteStorageManager(Protocol):
    """A remote tier's storage: copy, fetch and delete the files of remote segments."""

    def configure(self, configs: Mapping[str, str]) -> None:
        """Take the plugin's settings (prefix removed); raise ValueError for a bad one."""
        ...

    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        """Store the segment's files under ``metadata.segment_id``; return custom metadata or None.

        On return every file is durable in the remote store. On an error nothing may be assumed
        stored (the caller deletes the attempt's objects with :meth:`delete_log_segment_data`).
        """
        ...

    def fetch_log_segment(
        self, metadata: RemoteLogSegmentMetadata, start_position: int, end_position: int | None = None
    ) -> BinaryIO:
        """A readable stream of the segment's ``.log`` bytes from ``start_position`` (inclusive) to
        ``end_position`` (inclusive; None: to the end). The caller closes it."""
        ...

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        """A readable stream of one of the segment's index files; RemoteResourceNotFoundError
        when the segment had none of that type (a transaction index is optional)."""
        ...

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Delete every object of the segment; deleting what is already gone is not an error."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...
