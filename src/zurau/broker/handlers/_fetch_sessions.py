"""Fetch sessions (KIP-227) in the Fetch handler: which partitions a fetch reads, which it
answers, and the session id it returns (the cache itself is :mod:`zurau.broker.fetch_session`).

* Fetch v4-6, or ``session_epoch`` -1 (:data:`FINAL_EPOCH`): *sessionless*, the request's
  partitions are read and answered, session id 0 (a named session is closed first).
* Epoch 0 (:data:`INITIAL_EPOCH`): *full*, as sessionless, then a session is created from the
  request and its answer (when the cache has or can free a slot; else session id 0).
* Any other epoch: *incremental* on the named session (or the error the cache's rules give).
  Only the session's partitions that may have something to send are read: those the request
  names, and those :meth:`ReplicaManager.fetch_idle` does not vouch for (records readable, an
  offset moved, an error, another leader). Of what was read, only what
  :meth:`CachedPartition.must_respond` keeps is answered; a delayed fetch waits on every partition
  of the session. So an idle partition costs a few attribute reads per fetch and no encoding.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from zurau.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchSession,
    cache_of,
    next_epoch,
    records_size,
)
from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import (
    FetchSessionIdNotFoundError,
    FetchSessionTopicIdError,
    InvalidFetchSessionEpochError,
)
from zurau.protocol.messages import (
    FetchRequest,
    FetchRequestForgottenTopicsData,
    FetchRequestTopics,
    FetchResponseResponsesPartitions,
)
from zurau.replication.delayed_fetch import FetchedTopic
from zurau.replication.fetch_params import FetchParams, FetchTopic, PartitionFetch

SESSIONLESS, FULL, INCREMENTAL = 0, 1, 2
#: A fetch with a session is read without the idle fast path (``FetchParams.sessionless`` is
#: False), so its partition entries are dicts, never pre-encoded bytes.
NOT_PRE_ENCODED = "a fetch with a session has no pre-encoded partition entries"

#: A topic to read as the handler takes it: (name, topic id, partitions in the request's form).
RawTopic = tuple[str | None, uuid.UUID | None, list[PartitionFetch]]


def _topic_id(t: FetchRequestTopics | FetchRequestForgottenTopicsData) -> uuid.UUID | None:
    tid = t.get("topic_id")
    return tid if isinstance(tid, uuid.UUID) and tid.int else None


class FetchContext:
    """How one Fetch request uses sessions (see the module docstring)."""

    __slots__ = ("kind", "error_code", "session", "named", "uses_topic_ids")

    def __init__(self, kind: int, session: FetchSession | None = None, error_code: int = 0) -> None:
        self.kind = kind
        self.error_code = error_code
        self.session = session
        self.named: set[int] = set()  # id() of the cached partitions the request named
        self.uses_topic_ids = False

    @property
    def incremental(self) -> bool:
        return self.kind == INCREMENTAL


def new_context(ctx: RequestContext, req: FetchRequest, follower: bool) -> FetchContext:
    """The request's kind, updating the session of an incremental fetch (its partitions and
    epoch); a context with ``error_code`` set is answered with that error and nothing else."""
    session_id = req.get("session_id", INVALID_SESSION_ID)
    epoch = req.get("session_epoch", FINAL_EPOCH)
    if session_id == INVALID_SESSION_ID and epoch == FINAL_EPOCH:
        return FetchContext(SESSIONLESS)  # no session asked for (also every request before v7)
    version = ctx.api_version
    if version < 7:
        return FetchContext(SESSIONLESS)
    cache = cache_of(ctx.services)
    uses_ids = version >= 13
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        fc = FetchContext(FULL if epoch == INITIAL_EPOCH else SESSIONLESS)
        fc.uses_topic_ids = uses_ids
        return fc
    session = cache.get(session_id)
    if session is None:
        return FetchContext(SESSIONLESS, error_code=FetchSessionIdNotFoundError.code)
    if session.epoch != epoch:
        return FetchContext(SESSIONLESS, error_code=InvalidFetchSessionEpochError.code)
    if session.uses_topic_ids != uses_ids:
        return FetchContext(SESSIONLESS, error_code=FetchSessionTopicIdError.code)
    image = ctx.image
    topics: list[RawTopic] = []
    for t in req["topics"]:
        tid = _topic_id(t) if uses_ids else None
        name = t.get("topic")
        if tid is not None:
            ti = image.by_id(tid)
            name = ti.name if ti is not None else None
        topics.append((name, tid, t["partitions"]))
    forgotten = [
        (f.get("topic"), _topic_id(f) if uses_ids else None, f["partitions"])
        for f in req.get("forgotten_topics_data") or ()
    ]
    named = session.update(topics, forgotten)
    if not session.partitions:
        cache.remove(session.id)
        return FetchContext(SESSIONLESS)
    cache.touch(session, ctx.services.clock.now_ms())
    session.epoch = next_epoch(session.epoch)
    fc = FetchContext(INCREMENTAL, session)
    fc.uses_topic_ids = uses_ids
    fc.named = {id(cp) for cp in named}
    return fc


def topics_to_read(ctx: RequestContext, req: FetchRequest, fc: FetchContext, params: FetchParams) -> list[RawTopic]:
    """The partitions to read: the request's, or for an incremental fetch the session's that
    may have something to send, grouped by topic in session order."""
    session = fc.session
    if session is None:
        return [(t.get("topic"), _topic_id(t), t["partitions"]) for t in req["topics"]]
    rm = ctx.replica_manager
    replica_id = params.replica_id
    replica_epoch = params.replica_epoch
    read_committed = params.read_committed
    named = fc.named
    uses_ids = session.uses_topic_ids
    groups: dict[uuid.UUID | str | None, RawTopic] = {}  # by topic id, or by name
    for cp in session.partitions.values():
        topic = cp.topic
        if (
            topic is not None
            and id(cp) not in named
            and rm.fetch_idle(
                topic,
                cp.partition,
                cp.fetch_offset,
                cp.current_leader_epoch,
                (cp.high_watermark, cp.last_stable_offset, cp.log_start_offset),
                replica_id=replica_id,
                read_committed=read_committed,
                replica_epoch=replica_epoch,
            )
        ):
            continue
        ident = cp.topic_id if uses_ids else topic
        group = groups.get(ident)
        if group is None:
            group = groups[ident] = (None if uses_ids else topic, cp.topic_id if uses_ids else None, [])
        group[2].append(cp.request_data())
    return list(groups.values())


def finish(
    ctx: RequestContext,
    req: FetchRequest,
    fc: FetchContext,
    topics: list[FetchTopic],
    responses: list[FetchedTopic],
    follower: bool,
) -> int:
    """After the last read: create the session of a full fetch, or keep in an incremental
    answer only the partitions that must be sent (topics left empty stay, for the caller to
    drop). Returns the session id to answer with."""
    if fc.kind == SESSIONLESS:
        return INVALID_SESSION_ID
    if fc.kind == FULL:
        cache = cache_of(ctx.services)
        size = sum(len(t["partitions"]) for t in responses)
        now = ctx.services.clock.now_ms()
        session = cache.maybe_create(now, follower, size, fc.uses_topic_ids)
        if session is None:
            return INVALID_SESSION_ID
        named_topics = _raw_names(topics)
        for t, (name, tid, fps) in zip(responses, named_topics, strict=True):
            tid = tid if fc.uses_topic_ids else None
            session.update([(name, tid, fps)], ())
            for entry in t["partitions"]:
                assert not isinstance(entry, bytes), NOT_PRE_ENCODED
                session.partitions[session.key(name, tid, entry["partition_index"])].must_respond(entry)
        cache.touch(session, now)
        return session.id
    session = fc.session
    assert session is not None
    uses_ids = session.uses_topic_ids
    parts = session.partitions
    for t in responses:
        ident = t.get("topic_id") if uses_ids else t.get("topic")
        kept: list[FetchResponseResponsesPartitions | bytes] = []
        for entry in t["partitions"]:
            assert not isinstance(entry, bytes), NOT_PRE_ENCODED
            cp = parts.get((ident, entry["partition_index"]))
            if cp is None or cp.must_respond(entry):
                kept.append(entry)
                records = entry.get("records")
                if cp is not None and records is not None and records_size(records) > 0:
                    session.moved_to_end(cp)
        t["partitions"] = kept
    return session.id


def _raw_names(topics: Iterable[FetchTopic]) -> list[RawTopic]:
    """(topic name or None, topic id, request partitions) of the handler's planned topics."""
    return [(t.topic.name if t.topic is not None else t.name, t.topic_id, t.partitions) for t in topics]
