"""Tiered storage configuration definitions (KIP-405; Kafka's ``RemoteLogManagerConfig`` and
``TopicBasedRemoteLogMetadataManagerConfig``), Kafka 4's names, types, defaults and bounds.

:data:`REMOTE_LOG_CONFIGS` are broker configs (``log.local.retention.*``, the broker defaults of
the topics' ``local.retention.*``, are with the log configs). :data:`RLMM_CONFIGS` are the
topic-based remote log metadata's own settings: like Kafka's, they are given as broker
properties under ``remote.log.metadata.manager.impl.prefix`` (default ``rlmm.config.``), e.g.
``rlmm.config.remote.log.metadata.topic.num.partitions=50``; the storage plugin's settings go
under ``remote.log.storage.manager.impl.prefix`` (default ``rsm.config.``). Both are read through
:class:`~zurau.config.remote_log_views.RemoteLogManagerConfig`.

``remote.log.storage.manager.class.name`` has no default, as in Kafka: a broker with
``remote.log.storage.system.enable=true`` must name its tier (``file``, ``s3``, an entry point of
the group ``zurau.remote_storage`` or ``module:attribute``), since a silent default (say, a local
directory) would look like a remote tier without being one.
"""

from __future__ import annotations

from zurau.config.config_def import ConfigKey
from zurau.config.shorthand import LO, SH, B, D, I, L, M, S, at_least, between
from zurau.config.types import LONG_MAX
from zurau.config.validators import NonEmptyString

#: Kafka's only remote log metadata manager (Zurau's: zurau.replication.tiered).
TOPIC_BASED_RLMM = "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"

# fmt: off
REMOTE_LOG_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("remote.log.storage.system.enable", B, False, None, M,
              "Run the tiered storage services (remote log manager, remote log metadata) on this broker; "
              "topics may set remote.storage.enable only when it is true."),
    ConfigKey("remote.log.storage.manager.impl.prefix", S, "rsm.config.", NonEmptyString(), M,
              "Prefix of the broker properties handed (prefix removed) to the remote storage plugin."),
    ConfigKey("remote.log.metadata.manager.impl.prefix", S, "rlmm.config.", NonEmptyString(), M,
              "Prefix of the broker properties handed (prefix removed) to the remote log metadata manager."),
    ConfigKey("remote.log.storage.manager.class.name", S, None, NonEmptyString(), M,
              "The remote storage plugin: file, s3, an entry point of the group zurau.remote_storage, "
              "or module:attribute."),
    ConfigKey("remote.log.storage.manager.class.path", S, None, None, M,
              "Class path of the remote storage plugin (Java)."),
    ConfigKey("remote.log.metadata.manager.class.name", S, TOPIC_BASED_RLMM, NonEmptyString(), M,
              "The remote log metadata manager: the topic-based one (__remote_log_metadata)."),
    ConfigKey("remote.log.metadata.manager.class.path", S, None, None, M,
              "Class path of the remote log metadata manager (Java)."),
    ConfigKey("remote.log.metadata.manager.listener.name", S, None, NonEmptyString(), M,
              "Listener of this broker the remote log metadata manager's clients connect to."),
    ConfigKey("remote.log.metadata.custom.metadata.max.bytes", I, 128, at_least(0), LO,
              "Largest custom metadata a storage plugin may return for a copied segment."),
    ConfigKey("remote.log.index.file.cache.total.size.bytes", L, 1024 * 1024 * 1024, at_least(1), LO,
              "Local space for index files fetched from remote storage.", dynamic=True),
    ConfigKey("remote.log.manager.thread.pool.size", I, 2, at_least(1), M,
              "Threads of the follower tasks reading the highest copied offset of followed partitions."),
    ConfigKey("remote.log.manager.copier.thread.pool.size", I, 10, at_least(1), M,
              "Threads copying segments to remote storage.", dynamic=True),
    ConfigKey("remote.log.manager.expiration.thread.pool.size", I, 10, at_least(1), M,
              "Threads deleting expired remote segments.", dynamic=True),
    ConfigKey("remote.log.manager.task.interval.ms", L, 30_000, at_least(1), LO,
              "Interval of the remote log manager's copy and expiration tasks."),
    ConfigKey("remote.log.manager.task.retry.backoff.ms", L, 500, at_least(1), LO,
              "First back-off after a failed remote log manager task."),
    ConfigKey("remote.log.manager.task.retry.backoff.max.ms", L, 30_000, at_least(1), LO,
              "Largest back-off after failed remote log manager tasks (exponential)."),
    ConfigKey("remote.log.manager.task.retry.jitter", D, 0.2, between(0, 0.5), LO,
              "Random jitter factor of the remote log manager's back-off."),
    ConfigKey("remote.log.reader.threads", I, 10, at_least(1), M,
              "Threads reading from remote storage for fetches.", dynamic=True),
    ConfigKey("remote.log.reader.max.pending.tasks", I, 100, at_least(1), M,
              "Remote reads that may wait for a reader thread; beyond, fetches get an error."),
    ConfigKey("remote.log.manager.copy.max.bytes.per.second", L, LONG_MAX, at_least(1), M,
              "Bytes per second copied to remote storage by this broker.", dynamic=True),
    ConfigKey("remote.log.manager.copy.quota.window.num", I, 11, at_least(1), M,
              "Samples kept for the copy quota."),
    ConfigKey("remote.log.manager.copy.quota.window.size.seconds", I, 1, at_least(1), M,
              "Length of each copy quota sample window, in seconds."),
    ConfigKey("remote.log.manager.fetch.max.bytes.per.second", L, LONG_MAX, at_least(1), M,
              "Bytes per second read from remote storage by this broker.", dynamic=True),
    ConfigKey("remote.log.manager.fetch.quota.window.num", I, 11, at_least(1), M,
              "Samples kept for the remote fetch quota."),
    ConfigKey("remote.log.manager.fetch.quota.window.size.seconds", I, 1, at_least(1), M,
              "Length of each remote fetch quota sample window, in seconds."),
    ConfigKey("remote.fetch.max.wait.ms", I, 500, at_least(1), M,
              "Longest a fetch waits for a remote read before answering.", dynamic=True),
    ConfigKey("remote.list.offsets.request.timeout.ms", L, 30_000, at_least(1), M,
              "Longest a ListOffsets waits for a lookup in remote storage.", dynamic=True),
)

#: The topic-based remote log metadata manager's settings, under the rlmm prefix.
RLMM_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("remote.log.metadata.topic.replication.factor", SH, 3, at_least(1), LO,
              "Replication factor of __remote_log_metadata."),
    ConfigKey("remote.log.metadata.topic.num.partitions", I, 50, at_least(1), LO,
              "Partitions of __remote_log_metadata."),
    ConfigKey("remote.log.metadata.topic.retention.ms", L, -1, None, LO,
              "retention.ms of __remote_log_metadata (-1: unlimited)."),
    ConfigKey("remote.log.metadata.consume.wait.ms", L, 120_000, at_least(0), LO,
              "Longest a metadata write waits to be read back into this broker's cache."),
    ConfigKey("remote.log.metadata.initialization.retry.max.timeout.ms", L, 120_000, at_least(0), LO,
              "Longest the metadata manager retries its start (creating __remote_log_metadata)."),
    ConfigKey("remote.log.metadata.initialization.retry.interval.ms", L, 100, at_least(0), LO,
              "Back-off between the metadata manager's start attempts."),
)
# fmt: on
