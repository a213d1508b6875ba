"""The local log: Kafka's on-disk layout, no sockets, no asyncio, no threads, no replication.

The log cleaner's passes (``log_cleaner``) run on worker threads the broker provides: they read
closed segment files and write new ``.cleaned`` files only, and reach a PartitionLog (not
thread-safe) only through a callback that runs on the log's owner (the broker's event loop).

Modules (named after Kafka's concepts):

* ``log_config``      LogConfig: topic configs with Kafka's names and defaults
* ``checkpoint``      Kafka's text offset checkpoints, atomic file replacement
* ``abstract_index``  shared machinery of the two sparse segment indexes
* ``offset_index``    OffsetIndex (``.index``): relative offset -> file position
* ``time_index``      TimeIndex (``.timeindex``): timestamp -> relative offset
* ``log_segment``     LogSegment: one ``.log`` file plus its indexes
* ``producer_state``  idempotent-producer state and its ``.snapshot`` files
* ``txn_index``       aborted transactions (``.txnindex``) for read_committed fetches
* ``leader_epoch_cache``  epoch -> start offset (``leader-epoch-checkpoint``), OffsetForLeaderEpoch
* ``log_validator``   LogValidator: checks, offset assignment (leader) or keeping (follower),
                      compression conversion
* ``partition_log``   PartitionLog: one topic-partition (append/read/recovery/retention)
* ``log_manager``     LogManager: every PartitionLog of a broker, checkpoints, shutdown marker
* ``offset_map``      OffsetMap (Kafka's SkimpyOffsetMap): key digest -> latest offset, bounded
* ``cleaner``         Cleaner: one compaction pass over one log into ``.cleaned`` segments
* ``segment_swap``    the crash-safe ``.cleaned -> .swap -> final`` protocol and its recovery
* ``log_cleaner_manager``  LogCleanerManager: the dirtiest log, ``cleaner-offset-checkpoint``
* ``log_cleaner``     LogCleaner: the ``log.cleaner.threads`` compaction threads
"""

from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.partition_log import AppendResult, LogReadSlice, PartitionLog

__all__ = ["AppendResult", "LogConfig", "LogManager", "LogReadSlice", "PartitionLog"]
