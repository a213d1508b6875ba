"""Tiered storage (KIP-405): the remote tier's data model and its storage plugins.

This package is part of the storage layer: no sockets of its own towards Kafka clients, no
replication. The remote log manager that drives it (copying closed segments, reading them back,
remote retention) lives in :mod:`zurau.replication.tiered`.

Modules:

* ``remote_log_segment``      RemoteLogSegmentId / RemoteLogSegmentMetadata and their states,
                              LogSegmentData (the files of one closed segment), IndexType
* ``remote_log_metadata_manager``  the RemoteLogMetadataManager Protocol (what is remote, in what state)
* ``remote_log_metadata_records``  the records of ``__remote_log_metadata`` (Kafka's
                              RemoteLogMetadataSerde bytes: segment, update, partition-delete and
                              snapshot events)
* ``remote_log_metadata_cache``  one partition's remote segments built from those events (Kafka's
                              RemoteLogMetadataCache: per-epoch offset index, state machine, replay);
                              the topic-based manager over it is in :mod:`zurau.replication.tiered`
* ``remote_storage_manager``  the RemoteStorageManager plugin Protocol and its errors
* ``plugins``                 the loader (``remote.log.storage.manager.class.name``: ``file``,
                              ``s3``, a ``zurau.remote_storage`` entry point or a module path) and
                              ``plugin_configs`` (the ``rsm.config.`` settings)
* ``remote_segment_layout``   the object names of a remote segment, shared by the built-in plugins
* ``file_remote_storage``     the ``file`` plugin (a directory: NFS, a second disk)
* ``s3_remote_storage``       the ``s3`` plugin (boto3; ``zurau[tiered]``), imported only when used
* ``remote_index_cache``      the readers' bounded, thread-safe LRU cache of remote indexes and
                              segment chunks (``remote.log.index.file.cache.total.size.bytes``)

The formats of the files a remote segment carries are the local log's: decode them with
:mod:`zurau.storage.offset_index` (``lookup_bytes``), :mod:`zurau.storage.txn_index`
(``decode_entries``) and :mod:`zurau.storage.leader_epoch_cache` (``parse_leader_epoch_checkpoint``).
"""

from zurau.storage.remote.remote_log_segment import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.storage.remote.remote_storage_manager import (
    RemoteResourceNotFoundError,
    RemoteStorageError,
    RemoteStorageManager,
)

__all__ = [
    "IndexType",
    "LogSegmentData",
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteState",
    "RemoteResourceNotFoundError",
    "RemoteStorageError",
    "RemoteStorageManager",
]
