"""All partition logs of a broker across its log dirs (Kafka's ``LogManager``).

Per log dir (Kafka's file names and formats, see checkpoint.py)::

    <log_dir>/
        recovery-point-offset-checkpoint   topic partition recovery_point
        log-start-offset-checkpoint        topic partition log_start_offset
        replication-offset-checkpoint      topic partition high_watermark
        .kafka_cleanshutdown               present only between a clean close and the next start:
                                           Kafka's JSON {"version":0,"brokerEpoch":<epoch>}
        <topic>-<partition>/               one PartitionLog each
        <topic>-<partition>.<hex>-delete/  a partition being deleted (removed at startup)

Invariants:
* a partition lives in exactly one log dir; new partitions go to the dir holding the fewest;
* the clean-shutdown marker is written only after every log was closed (flushed, producer
  snapshots written) and the checkpoints were written; it is removed right after loading, so a
  crash at any later time makes the next start an unclean one, which rescans every log from
  its checkpointed recovery point;
* the marker names the broker epoch the broker had when it closed (KIP-966: read before the
  broker registers, by :func:`read_clean_shutdown_epoch`, and sent as its
  ``previous_broker_epoch``; the controller trusts the broker's place in the eligible leader
  replicas only when it matches). A kill -9 leaves no marker, so the next start proves nothing;
* checkpoints are replaced atomically; a partition missing from the recovery-point checkpoint is
  recovered from offset 0;
* a partition this process creates gets its directory and first segment without any fsync
  (``PartitionLog.create_new``); they become durable with the log's first flush plan, which for
  many new logs at once is one shared ``syncfs`` (``prepare_flush_dirty``). A process killed
  midway leaves a directory that loads as an empty, usable log (tests/unit/test_partition_creation.py).

No threads of its own: the broker shell calls ``checkpoint``, ``run_retention``,
``flush_dirty`` and ``remove_expired_producers`` on its own schedule (Kafka's
``log.flush.offset.checkpoint.interval.ms``, ``log.retention.check.interval.ms``,
``log.flush.scheduler.interval.ms``, ``producer.id.expiration.check.interval.ms``). Every method
runs on the owning (event-loop) thread except two, which touch no log and may run in a worker:
``FlushPlan.run`` of the plans ``prepare_flush_dirty`` returns (see log_flush.py; complete them
with ``complete_flushes``), and ``write_checkpoint`` of a ``checkpoint_snapshot``. Checkpoint
writes are serialised and numbered: a snapshot older than one already written is skipped, so a
late write from the worker never replaces a newer checkpoint.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from zurau.protocol.errors import InvalidTopicError, KafkaStorageError
from zurau.storage.abstract_index import set_max_open_writers
from zurau.storage.checkpoint import (
    atomic_write,
    fsync_dir,
    read_offsets_checkpoint,
    write_offsets_checkpoint,
)
from zurau.storage.file_limits import check_open_files, raise_open_files_limit
from zurau.storage.log_config import LogConfig
from zurau.storage.log_flush import FileSystemSync, FlushPlan, syncfs_available
from zurau.storage.partition_log import DELETE_DIR_SUFFIX, PartitionLog
from zurau.types import TopicPartitionKey

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
CLEAN_SHUTDOWN_VERSION = 0

log_ = logging.getLogger("zurau.storage")

_PARTITION_DIR = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>\d+)$")
_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

METADATA_TOPIC = "__cluster_metadata"

#: Open descriptors one ``prepare_flush_dirty`` round may hold in its plans (see there).
MAX_FLUSH_DESCRIPTORS = 2048
#: New logs of one log dir awaiting their first flush from which a round shares one ``syncfs``
#: (log_flush.FileSystemSync) instead of giving each its own descriptors (creating a topic of
#: thousands of partitions); fewer keep plans of their own.
GROUPED_SYNC_MIN_LOGS = 32


_Offsets = dict[TopicPartitionKey, int]


@dataclass(frozen=True, slots=True)
class CheckpointSnapshot:
    """The checkpoints' contents as of one moment on the owning thread: per log dir,
    ``(recovery points, log start offsets, high watermarks)``; ``seq`` orders snapshots."""

    seq: int
    dirs: dict[Path, tuple[_Offsets, _Offsets, _Offsets]]


def _check_topic(topic: str) -> None:
    if not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
        raise InvalidTopicError(f"illegal topic name {topic!r}")



def read_clean_shutdown_epoch(log_dirs: Sequence[Path | str]) -> int:
    """The broker epoch the clean-shutdown markers of ``log_dirs`` name (Kafka's
    ``readBrokerEpochFromCleanShutdownFiles``): -1 unless every dir has a readable marker and
    they all name the same epoch (a dir without one was not shut down cleanly). Read before the
    logs are loaded, since loading removes the markers."""
    epoch: int | None = None
    for d in log_dirs:
        try:
            content = json.loads((Path(d) / CLEAN_SHUTDOWN_FILE).read_bytes() or b"{}")
            found = int(content["brokerEpoch"])
        except (OSError, ValueError, KeyError, TypeError):
            return -1
        if epoch is not None and found != epoch:
            return -1
        epoch = found
    return -1 if epoch is None else epoch

class LogManager:
    """Owns every PartitionLog; loads them at construction."""

    def __init__(
        self,
        log_dirs: list[Path],
        now_ms: Callable[[], int],
        *,
        default_config: LogConfig | None = None,
        config_for: Callable[[str], LogConfig] | None = None,
        load: bool = True,
    ) -> None:
        """Load every partition found in ``log_dirs`` (``load=False``: not yet; see :meth:`load`).

        ``config_for(topic)`` gives the config of a loaded topic (default: ``default_config``,
        itself defaulting to Kafka's defaults); change it later with ``update_config``.
        """
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.now_ms = now_ms
        self.default_config = default_config if default_config is not None else LogConfig()
        self._config_for = config_for
        self._logs: dict[TopicPartitionKey, PartitionLog] = {}
        self._dir_of: dict[TopicPartitionKey, Path] = {}
        self.had_clean_shutdown: dict[Path, bool] = {}
        # The broker epoch the clean-shutdown marker will name (-1: unknown, e.g. a single node).
        self.broker_epoch = -1
        self.closed = False
        self.loaded = False
        self._checkpoint_seq = itertools.count(1)
        self._checkpoint_lock = threading.Lock()
        self._checkpoint_written = 0
        self._flush_cursor = 0  # where the next prepare_flush_dirty round starts
        # Logs created by this process whose directory may not be durable yet (created_unsynced);
        # pruned by prepare_flush_dirty, which groups their first flush when they are many.
        self._created: dict[TopicPartitionKey, PartitionLog] = {}
        raise_open_files_limit()
        set_max_open_writers(None)  # the bound follows the (maybe raised) limit
        if load:
            self.load()

    # -- loading ---------------------------------------------------------------------------------

    def load(self) -> None:
        """Open (and recover) every partition directory of every log dir, each with the config
        ``config_for`` gives its topic now. Once; a broker of a cluster calls it only when its
        metadata has caught up with the quorum (docs/architecture.md: restart safety), so that
        ``config_for`` answers from the topics' real configs, never from an empty image.

        Touches nothing but this manager and its files: it may run on a worker thread as long as
        nothing else uses the manager until it returns."""
        if self.loaded:
            return
        for d in self.log_dirs:
            self._load_dir(d)
        self.loaded = True
        check_open_files(sum(log.segment_count for log in self._logs.values()))

    def _load_dir(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        self.had_clean_shutdown[log_dir] = clean
        recovery_points = read_offsets_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
        start_offsets = read_offsets_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = read_offsets_checkpoint(log_dir / HIGH_WATERMARK_CHECKPOINT)
        now = self.now_ms()
        configs: dict[str, LogConfig] = {}  # per topic: resolved once, not once per partition
        for entry in sorted(os.listdir(log_dir)):
            path = log_dir / entry
            if not path.is_dir():
                continue
            if entry.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            m = _PARTITION_DIR.match(entry)
            if m is None:
                continue  # e.g. Kafka's -future/-stray dirs or unrelated data: leave alone
            tp = (m.group("topic"), int(m.group("partition")))
            if tp[0] == METADATA_TOPIC:
                continue  # the metadata log is the controller's (zurau.metadata.metadata_log)
            if tp in self._logs:
                raise KafkaStorageError(
                    f"partition {tp[0]}-{tp[1]} found in both {self._dir_of[tp]} and {log_dir}"
                )
            config = configs.get(tp[0]) or self.default_config
            if tp[0] not in configs and self._config_for is not None:
                config = configs[tp[0]] = self._config_for(tp[0])
            log = PartitionLog.open(
                path,
                tp[0],
                tp[1],
                config,
                recovery_points.get(tp, 0),
                start_offsets.get(tp),
                now_ms=now,
                high_watermark=high_watermarks.get(tp),
                had_clean_shutdown=clean and tp in recovery_points,
            )
            self._logs[tp] = log
            self._dir_of[tp] = log_dir
        if clean:
            marker.unlink()
            fsync_dir(log_dir)

    # -- access ----------------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> PartitionLog:
        """The log of ``topic-partition``, created empty in the least-loaded log dir if missing."""
        tp = (topic, partition)
        log = self._logs.get(tp)
        if log is not None:
            return log
        if not self.loaded:  # the directory may exist and hold data that is not loaded yet
            raise KafkaStorageError(f"cannot create {topic}-{partition}: the log dirs are not loaded yet")
        _check_topic(topic)
        if partition < 0:
            raise KafkaStorageError(f"illegal partition {partition}")
        if len(self.log_dirs) == 1:
            log_dir = self.log_dirs[0]
        else:  # the dir holding the fewest (counting is linear: not once per partition of 10,000)
            counts = Counter(self._dir_of.values())
            log_dir = min(self.log_dirs, key=lambda d: counts[d])
        path = log_dir / f"{topic}-{partition}"
        config = config if config is not None else self.default_config
        now = self.now_ms()
        # A directory of its own, created without fsync (PartitionLog.create_new): its entry in
        # ``log_dir``, its files and its epoch checkpoint are fsynced by the log's next flush
        # plan, off the caller's thread (creating thousands of partitions must not hold the event
        # loop). A directory already there (no load found it: e.g. made by hand) is opened.
        log = PartitionLog.create_new(path, topic, partition, config, now_ms=now)
        if log is None:
            log = PartitionLog.open(path, topic, partition, config, now_ms=now)
            log.mark_created()
        self._logs[tp] = log
        self._dir_of[tp] = log_dir
        self._created[tp] = log
        if len(self._logs) % 1000 == 0:
            check_open_files(sum(lg.segment_count for lg in self._logs.values()))
        return log

    def all_logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    def update_config(self, topic: str, config: LogConfig) -> None:
        """Apply a new config to every partition of ``topic``."""
        for (t, _p), log in self._logs.items():
            if t == topic:
                log.update_config(config)

    def delete_partition(self, topic: str, partition: int) -> bool:
        """Delete a partition's log: rename its dir to ``<tp>.<hex>-delete``, then remove it.

        Returns False if the partition is unknown. A crash between rename and removal leaves a
        ``-delete`` dir that the next start removes.
        """
        tp = (topic, partition)
        log = self._logs.pop(tp, None)
        if log is None:
            return False
        self._dir_of.pop(tp)
        self._created.pop(tp, None)
        log.delete()
        self.checkpoint()
        return True

    # -- periodic work ---------------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write the recovery-point, log-start-offset and high-watermark checkpoints now."""
        self.write_checkpoint(self.checkpoint_snapshot())

    def checkpoint_snapshot(self) -> CheckpointSnapshot:
        """What the checkpoints should hold now (read on the owning thread)."""
        dirs: dict[Path, tuple[_Offsets, _Offsets, _Offsets]] = {d: ({}, {}, {}) for d in self.log_dirs}
        for tp, log in self._logs.items():
            rps, starts, hws = dirs[self._dir_of[tp]]
            rps[tp] = log.recovery_point
            starts[tp] = log.log_start_offset
            hws[tp] = log.high_watermark
        return CheckpointSnapshot(next(self._checkpoint_seq), dirs)

    def write_checkpoint(self, snapshot: CheckpointSnapshot) -> bool:
        """Write ``snapshot``'s checkpoint files (atomically, fsynced); any thread. False (and
        nothing written) if a newer snapshot was written already, or if the logs were never
        loaded (an empty snapshot would erase the previous run's recovery points)."""
        if not self.loaded:
            return False
        with self._checkpoint_lock:
            if snapshot.seq < self._checkpoint_written:
                return False
            for log_dir, (rps, starts, hws) in snapshot.dirs.items():
                write_offsets_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT, rps)
                write_offsets_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT, starts)
                write_offsets_checkpoint(log_dir / HIGH_WATERMARK_CHECKPOINT, hws)
            self._checkpoint_written = snapshot.seq
            return True

    def run_retention(self, now_ms: int) -> int:
        """Apply retention to every log; return the number of segments deleted."""
        return sum(log.apply_retention(now_ms) for log in self._logs.values())

    def prepare_flush_dirty(
        self, now_ms: int, max_descriptors: int = MAX_FLUSH_DESCRIPTORS
    ) -> list[tuple[PartitionLog, FlushPlan]]:
        """Flush plans (log_flush.py) for logs due by ``flush.ms``, for segments rolled since
        the last flush (as Kafka flushes a segment when it rolls; up to the active segment), and
        for a new segment file whose directory entry is not yet durable.

        A call holds at most about ``max_descriptors`` open descriptors in its plans (each plan
        duplicates a few): after thousands of partitions were created at once the rest wait for
        the next call, which starts where this one stopped, so every log gets its turn. A
        descriptor that cannot be opened (EMFILE) ends the round with the plans made so far.

        When at least ``GROUPED_SYNC_MIN_LOGS`` new logs of one log dir await their first flush
        (a topic of many partitions was just created), their plans share one ``syncfs`` of that
        dir's file system (log_flush.FileSystemSync: one descriptor for all of them) instead of
        six descriptors and fsyncs each."""
        out: list[tuple[PartitionLog, FlushPlan]] = []
        logs = list(self._logs.values())
        if not logs:
            return out
        groups = self._open_creation_groups()
        try:
            return self._prepare_round(out, logs, groups, now_ms, max_descriptors)
        finally:
            for group in groups.values():
                group.release_if_unused()

    def _open_creation_groups(self) -> dict[Path, FileSystemSync]:
        """Forget created logs that were flushed or deleted since; open one FileSystemSync per
        log dir holding at least ``GROUPED_SYNC_MIN_LOGS`` of the rest (none without syncfs)."""
        created = self._created
        if not created:
            return {}
        for tp, lg in list(created.items()):
            if not lg.created_unsynced or self._logs.get(tp) is not lg:
                del created[tp]
        if len(created) < GROUPED_SYNC_MIN_LOGS or not syncfs_available():
            return {}
        counts = Counter(self._dir_of[tp] for tp in created)
        groups: dict[Path, FileSystemSync] = {}
        for log_dir, n in counts.items():
            if n >= GROUPED_SYNC_MIN_LOGS:
                try:
                    groups[log_dir] = FileSystemSync(log_dir)
                except OSError as e:  # e.g. EMFILE: the logs get plans of their own
                    log_.warning("grouped sync of %s not opened: %s", log_dir, e)
        return groups

    def _prepare_round(
        self,
        out: list[tuple[PartitionLog, FlushPlan]],
        logs: list[PartitionLog],
        groups: dict[Path, FileSystemSync],
        now_ms: int,
        max_descriptors: int,
    ) -> list[tuple[PartitionLog, FlushPlan]]:
        start = self._flush_cursor % len(logs)
        held = len(groups)
        for n, log in enumerate(itertools.chain(logs[start:], logs[:start])):
            if held >= max_descriptors:
                self._flush_cursor = start + n
                return out
            if not log.needs_flush:
                continue
            group = groups.get(log.directory.parent) if groups and log.created_unsynced else None
            try:
                if now_ms - log.last_flush_ms >= log.config.flush_ms:
                    plan = log.prepare_flush(now_ms=now_ms, group=group)
                elif log.recovery_point < log.active_segment.base_offset:
                    plan = log.prepare_flush(log.active_segment.base_offset, group=group)
                elif log.directory_sync_pending:
                    plan = log.prepare_flush(log.recovery_point, group=group)
                else:
                    continue
            except OSError as e:
                if not out:
                    raise
                log_.warning("flush round stopped after %d logs: %s", len(out), e)
                self._flush_cursor = start + n
                return out
            if group is None:  # a shared group's descriptor was counted once, above
                held += plan.descriptor_count
            out.append((log, plan))
        self._flush_cursor = start
        return out

    def complete_flushes(self, prepared: Sequence[tuple[PartitionLog, FlushPlan]]) -> int:
        """Apply the plans of ``prepare_flush_dirty`` that ran; return how many did."""
        n = 0
        for log, plan in prepared:
            if plan.synced:
                log.complete_flush(plan)
                n += 1
        return n

    def flush_dirty(self, now_ms: int) -> int:
        """``prepare_flush_dirty``, the fsyncs and ``complete_flushes``, all on the calling
        thread. Returns the number of logs flushed."""
        prepared = self.prepare_flush_dirty(now_ms)
        try:
            for _log, plan in prepared:
                plan.run()
        finally:
            for _log, plan in prepared:
                plan.discard()  # only those a failure left unrun
        return self.complete_flushes(prepared)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int = 86_400_000) -> int:
        """Forget, in every log, the producers idle for ``producer.id.expiration.ms`` that have
        no ongoing transaction (Kafka's rule); the next producer snapshots omit them."""
        return sum(log.remove_expired_producers(now_ms, expiration_ms) for log in self._logs.values())

    def close(self) -> None:
        """Close every log (producer snapshots, fsync), write checkpoints and the clean marker.
        A manager that never loaded its logs writes nothing: its checkpoints and the clean marker
        on disk stay as the previous run left them."""
        if self.closed:
            return
        if not self.loaded:
            self.closed = True
            return
        for log in self._logs.values():
            log.close()
        self.checkpoint()
        marker = json.dumps({"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": self.broker_epoch}).encode()
        for log_dir in self.log_dirs:
            atomic_write(log_dir / CLEAN_SHUTDOWN_FILE, marker)
        self.closed = True
