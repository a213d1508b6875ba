"""Incremental fetch sessions (KIP-227): the broker's cache of the partitions a fetcher reads.

A fetcher with a session sends its partitions once (a *full* fetch, session epoch 0); the broker
answers with a session id and remembers, per partition, the fetch parameters (offset, byte limit,
leader epochs) and what it last told the fetcher (high watermark, last stable offset, log start
offset). Later *incremental* fetches (the session id and the next epoch) name only the partitions
whose parameters changed, plus ``forgotten_topics_data`` for those that leave the session; every
other partition is read with its cached parameters. An incremental answer carries only the
partitions that must be sent (:meth:`CachedPartition.must_respond`): those with records, a changed
high watermark, last stable offset or log start offset, or an error (an error also resets the
cached high watermark, so the partition is sent again once the error is gone).

Epochs (``session_epoch`` in the request): 0 (:data:`INITIAL_EPOCH`) asks for a new session (a
session id in the same request is closed first); -1 (:data:`FINAL_EPOCH`) closes the named session
and the fetch is answered without one; any other value must equal the session's epoch, which
moves on by one with each incremental fetch (``INVALID_FETCH_SESSION_EPOCH`` otherwise); an
unknown id gets ``FETCH_SESSION_ID_NOT_FOUND``. A session created at Fetch v13+ names its topics
by id, an older one by name; the other kind of request gets ``FETCH_SESSION_TOPIC_ID_ERROR``. A
session whose last partition is forgotten is closed and that fetch answered sessionless.

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions. When it is full
a new session may evict (Kafka's ``FetchSessionCache.tryEvict``): the least recently used one if
unused for :data:`EVICTION_MS`; otherwise the least valuable one that is older than
:data:`EVICTION_MS`, valuing followers' (privileged) sessions above consumers' and then larger
sessions above smaller ones -- a consumer's session never evicts a follower's, and a new session
of the same kind evicts only one with fewer partitions. A follower's young session is never evicted
by another follower's; a consumer's young session may be evicted by a follower's.

The cache lives on the broker's event loop and is not thread-safe.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import Any

from zurau.protocol.messages import FetchResponseResponsesPartitions
from zurau.replication.fetch_params import PartitionFetch

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: A session unused this long may be evicted by any new one; a younger one only by a more
#: valuable one (Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``).
EVICTION_MS = 120_000

#: A cached partition's key: (topic id or topic name, partition index).
PartitionKey = tuple[Any, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: FINAL stays FINAL, the largest int32 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


class CachedPartition:
    """One partition of a session (Kafka's ``CachedPartition``): the fetcher's parameters and
    what the broker last sent for it. ``high_watermark`` is -1 until a first answer and after an
    error. ``topic`` is the topic's name (None while a topic id does not resolve)."""

    __slots__ = (
        "topic",
        "topic_id",
        "partition",
        "fetch_offset",
        "max_bytes",
        "current_leader_epoch",
        "last_fetched_epoch",
        "fetcher_log_start_offset",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
    )

    def __init__(self, topic: str | None, topic_id: uuid.UUID | None, fp: PartitionFetch) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.partition: int = fp["partition"]
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.update_request(fp)

    def update_request(self, fp: PartitionFetch) -> None:
        """Take the fetcher's new parameters for this partition."""
        self.fetch_offset: int = fp["fetch_offset"]
        self.max_bytes: int = fp["partition_max_bytes"]
        self.current_leader_epoch: int = fp.get("current_leader_epoch", -1)
        self.last_fetched_epoch: int = fp.get("last_fetched_epoch", -1)
        self.fetcher_log_start_offset: int = fp.get("log_start_offset", -1)

    def request_data(self) -> PartitionFetch:
        """The cached parameters in the request's form (what an incremental fetch reads)."""
        return {
            "partition": self.partition,
            "current_leader_epoch": self.current_leader_epoch,
            "fetch_offset": self.fetch_offset,
            "last_fetched_epoch": self.last_fetched_epoch,
            "log_start_offset": self.fetcher_log_start_offset,
            "partition_max_bytes": self.max_bytes,
        }

    def must_respond(self, entry: FetchResponseResponsesPartitions, update: bool = True) -> bool:
        """Whether the response ``entry`` read for this partition goes into an incremental
        answer (Kafka's ``maybeUpdateResponseData``); with ``update`` the cached values follow
        the entry's."""
        respond = False
        records = entry.get("records")
        if records is not None and records_size(records) > 0:
            respond = True
        if self.high_watermark != entry["high_watermark"]:
            respond = True
            if update:
                self.high_watermark = entry["high_watermark"]
        if self.last_stable_offset != entry["last_stable_offset"]:
            respond = True
            if update:
                self.last_stable_offset = entry["last_stable_offset"]
        if self.log_start_offset != entry["log_start_offset"]:
            respond = True
            if update:
                self.log_start_offset = entry["log_start_offset"]
        if entry.get("preferred_read_replica", -1) >= 0 or entry.get("diverging_epoch"):
            respond = True
        if entry["error_code"]:
            respond = True
            if update:
                self.high_watermark = -1
        return respond

    def __repr__(self) -> str:
        return (
            f"CachedPartition({self.topic or self.topic_id}-{self.partition}, offset={self.fetch_offset}, "
            f"hw={self.high_watermark})"
        )


def records_size(records: Any) -> int:
    size = getattr(records, "size", None)
    return int(size) if isinstance(size, int) else len(records)


class FetchSession:
    """One session: its id, epoch (the one the next request must carry), and its partitions in
    fetch order (a partition that got records moves to the end, so that a response size limit
    does not always favour the same partitions)."""

    __slots__ = (
        "id", "privileged", "uses_topic_ids", "partitions", "creation_ms", "last_used_ms", "epoch", "cached_size",
        "_wait_keys",
    )

    def __init__(self, session_id: int, privileged: bool, uses_topic_ids: bool, now_ms: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.uses_topic_ids = uses_topic_ids
        self.partitions: dict[PartitionKey, CachedPartition] = {}
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = 0  # the size the cache counts for this session
        self._wait_keys: list[tuple[str, int]] | None = None

    def wait_keys(self) -> list[tuple[str, int]]:
        """(topic name, partition) of every partition (what a delayed fetch waits on); kept
        until the partitions change."""
        keys = self._wait_keys
        if keys is None:
            keys = self._wait_keys = [(cp.topic, cp.partition) for cp in self.partitions.values() if cp.topic]
        return keys

    def key(self, topic: str | None, topic_id: uuid.UUID | None, partition: int) -> PartitionKey:
        return (topic_id if self.uses_topic_ids else topic), partition

    def update(
        self, topics: Iterable[tuple[str | None, uuid.UUID | None, list[PartitionFetch]]],
        forgotten: Iterable[tuple[str | None, uuid.UUID | None, list[int]]],
    ) -> list[CachedPartition]:
        """Add or update the request's partitions, then drop the forgotten ones; returns the
        partitions the request named (added or updated) that are still in the session."""
        named: list[CachedPartition] = []
        parts = self.partitions
        for name, topic_id, fps in topics:
            for fp in fps:
                k = self.key(name, topic_id, fp["partition"])
                cp = parts.get(k)
                if cp is None:
                    cp = parts[k] = CachedPartition(name, topic_id, fp)
                    self._wait_keys = None
                else:
                    cp.update_request(fp)
                    if name is not None and cp.topic != name:
                        cp.topic = name
                        self._wait_keys = None
                named.append(cp)
        dropped = False
        for name, topic_id, indexes in forgotten:
            for index in indexes:
                if parts.pop(self.key(name, topic_id, index), None) is not None:
                    dropped = True
        if dropped:
            self._wait_keys = None
            named = [cp for cp in named if parts.get(self.key(cp.topic, cp.topic_id, cp.partition)) is cp]
        return named

    def moved_to_end(self, cp: CachedPartition) -> None:
        """Move ``cp`` to the end of the fetch order (it just got records)."""
        k = self.key(cp.topic, cp.topic_id, cp.partition)
        if self.partitions.get(k) is cp:
            del self.partitions[k]
            self.partitions[k] = cp

    def __repr__(self) -> str:
        return (
            f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partitions)}, "
            f"epoch={self.epoch})"
        )


class FetchSessionCache:
    """The broker's sessions, at most ``max_entries`` (see the module docstring for eviction)."""

    def __init__(self, max_entries: int, eviction_ms: int = EVICTION_MS, rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self.total_partitions = 0  # partitions over all sessions, as last touched
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def _new_id(self) -> int:
        while True:
            sid = self._rng.randint(1, 2**31 - 1)
            if sid not in self.sessions:
                return sid

    def maybe_create(self, now_ms: int, privileged: bool, size: int, uses_topic_ids: bool) -> FetchSession | None:
        """A new session (its epoch 1, empty: the caller fills it), or None when the cache is
        full and nothing may be evicted for it (the fetch is then answered sessionless)."""
        if self.max_entries <= 0:
            return None
        if len(self.sessions) >= self.max_entries and not self.try_evict(privileged, size, now_ms):
            return None
        session = FetchSession(self._new_id(), privileged, uses_topic_ids, now_ms)
        self.sessions[session.id] = session
        return session

    def try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Evict one session for a new one (``privileged``, ``size`` partitions): True if done."""
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - lru.last_used_ms > self.eviction_ms:
            self.remove(lru.id)
            self.evictions += 1
            return True
        candidates = [s for s in self.sessions.values() if self._evictable(s, privileged, now_ms)]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size) <= (victim.privileged, victim.cached_size):
            return False
        self.remove(victim.id)
        self.evictions += 1
        return True

    def _evictable(self, s: FetchSession, by_privileged: bool, now_ms: int) -> bool:
        old = now_ms - s.creation_ms > self.eviction_ms
        if by_privileged:
            return old or not s.privileged
        return old

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.total_partitions -= session.cached_size
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark ``session`` used at ``now_ms`` and recount its partitions."""
        session.last_used_ms = now_ms
        size = len(session.partitions)
        self.total_partitions += size - session.cached_size
        session.cached_size = size


def cache_of(services: Any) -> FetchSessionCache:
    """The broker's session cache (made on first use, sized by
    ``max.incremental.fetch.session.cache.slots``)."""
    cache: FetchSessionCache | None = services.fetch_sessions
    if cache is None:
        cache = services.fetch_sessions = FetchSessionCache(
            services.config.get("max.incremental.fetch.session.cache.slots")
        )
    return cache
