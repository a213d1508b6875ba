"""Fetch: whole stored batches from the requested offsets, waiting for data when asked.

* Readers see data up to the high watermark (read_uncommitted) or the last stable offset
  (read_committed); a batch that starts below the limit is sent whole. read_committed readers
  also get the aborted transactions overlapping what they read, so they can drop those records.
  A follower replica (``replica_id`` >= 0, or v15+ ``replica_state``) reads up to the log end
  offset; its fetch offset tells the leader how far it has replicated (and may advance the high
  watermark and the ISR). Its ``last_fetched_epoch`` (v12+) is checked against the leader's epochs:
  where its log diverges the answer carries ``diverging_epoch`` and no records (KIP-320), and the
  fetch is answered at once. Reads go through the replica manager (``read``).
* ``max_bytes`` (at most the broker's ``fetch.max.bytes``) bounds the response and
  ``partition_max_bytes`` each partition, except that the first batch of the first partition
  with data is always sent whole (KIP-74) so that consumers make progress past a batch larger
  than their limits.
* Long polling: with fewer than ``min_bytes`` ready, the fetch waits in the purgatory until an
  append to one of its partitions or ``max_wait_ms``, then reads again. A fetch the first read
  settles is answered synchronously (``handle`` returns the response, the connection starts no
  task); only a waiting one is a coroutine.
* Fetch from follower (KIP-392): with ``replica.selector.class`` set, a leader answering a
  consumer's Fetch v11+ may name a ``preferred_read_replica`` (e.g. a follower in the consumer's
  ``rack_id``) instead of reading: that partition's entry carries the offsets and no records, and
  the fetch is answered at once. A follower serves such consumers below its own high watermark
  (OFFSET_OUT_OF_RANGE beyond its log end, after which the consumer returns to the leader);
  consumers of older versions and followers still get NOT_LEADER_OR_FOLLOWER from a follower.
* Sessionless consumer fetches (librdkafka's, which name every assigned partition each time):
  an idle partition (fetched at its high watermark / last stable offset, nothing to read) is
  answered with precomputed bytes instead of a read and an encoded dict
  (:mod:`zurau.broker.handlers._idle_fetch`), so its cost does not grow with idle partitions
  beyond a lookup and one ``struct.pack``; a delayed fetch waits on each topic's partition set
  rather than on every (topic, partition) key.
* Fetch sessions (KIP-227, v7+, :mod:`zurau.broker.handlers._fetch_sessions`): a full fetch with
  session epoch 0 creates a session; an incremental fetch reads only the session's partitions
  that may have something to send and answers only those that must be sent.
* Client quotas (``consumer_byte_rate``, :mod:`zurau.broker.quotas.throttling`): a consumer's
  fetch reads at most what its quota allows in one window span; a response over the quota is
  answered empty with ``throttle_time_ms`` (as Kafka does), its bytes taken back off the rate.
* Authorisation (only with an authorizer configured): a consumer needs READ on each topic, a
  follower CLUSTER_ACTION on the cluster; a partition refused gets TOPIC_AUTHORIZATION_FAILED and
  is not read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable
from typing import Any

from zurau.broker.connection import FileRegion
from zurau.broker.handlers import _fetch_sessions as fetch_sessions
from zurau.broker.handlers._authz import TOPIC, Op, allowed_names, cluster_allowed
from zurau.broker.handlers._common import error_of, resolve_topic
from zurau.broker.handlers._idle_fetch import idle_encoder
from zurau.broker.handlers._quorum import to_raft
from zurau.broker.quotas.throttling import fetch_bytes_bound, fetch_throttle_ms
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    KafkaError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.raft.wire import METADATA_TOPIC, METADATA_TOPIC_ID
from zurau.replication.purgatory import request_wait
from zurau.replication.replica_manager import LogReadSlice

API_KEY = ApiKey.FETCH
READ_COMMITTED = 1


def _replica_id(req: dict[str, Any]) -> int:
    """The fetching replica's broker id (-1 for a consumer): v0-14 ``replica_id``, v15+ the
    tagged ``replica_state``."""
    state = req.get("replica_state")  # decoded with its default (-1) below v15
    if state and state.get("replica_id", -1) >= 0:
        return int(state["replica_id"])
    return int(req.get("replica_id", -1))


def _replica_epoch(req: dict[str, Any]) -> int:
    """The fetching replica's broker epoch (v15+ ``replica_state``), -1 when not sent."""
    state = req.get("replica_state")
    return int(state.get("replica_epoch", -1)) if state else -1


def _read_all(
    ctx: RequestContext, req: dict[str, Any], topics: list[Any], idle_ok: bool = False
) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over every requested partition: (responses, bytes read, any error or diverging
    epoch, either of which answers at once). With ``idle_ok`` (a sessionless consumer fetch and
    no replica selector) an idle partition's entry is its precomputed bytes (see the module
    docstring), not a dict."""
    rm = ctx.replica_manager
    replica_id = _replica_id(req)
    replica_epoch = _replica_epoch(req)
    isolation_level = req.get("isolation_level", 0)
    # A follower reads up to the log end offset and never gets aborted transactions.
    read_committed = isolation_level == READ_COMMITTED and replica_id < 0
    # KIP-392: a consumer's Fetch v11+ carries its rack; such a consumer may be sent to a
    # preferred read replica by a leader, and may read from a follower.
    client_metadata = replica_id < 0 and ctx.api_version >= 11
    client_rack = req.get("rack_id") or ""
    remaining = req.get("max_bytes", 2**31 - 1)
    if remaining <= 0:
        remaining = 2**31 - 1
    remaining = min(remaining, ctx.config.get("fetch.max.bytes"))
    if replica_id < 0 and (bound := fetch_bytes_bound(ctx)) is not None:
        remaining = min(remaining, bound)
    total = 0
    any_error = False
    first_data = True
    out = []
    idle = idle_encoder(ctx.api_version, read_committed) if idle_ok and replica_id < 0 else None
    hosted = rm.hosted_partitions if idle is not None else {}
    node_id = rm.node_id if idle is not None else -1
    for (name, topic_id, terr, topic), parts in topics:
        parts_out: list[Any] = []
        tname = topic.name if terr is None and topic is not None else None
        for fp in parts:
            index = fp["partition"]
            if idle is not None and tname is not None:
                p = hosted.get((tname, index))
                if p is not None and p.leader_id == node_id:
                    cle = fp.get("current_leader_epoch", -1)
                    if cle < 0 or cle == p.leader_epoch:
                        plog = p.log
                        hw = plog.high_watermark
                        lso = plog.last_stable_offset
                        log_start = plog.log_start_offset
                        offset = fp["fetch_offset"]
                        if offset == (lso if read_committed else hw) and offset >= log_start:
                            parts_out.append(idle(index, hw, lso, log_start))
                            continue
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": 0,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [] if read_committed else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            try:
                if terr is not None:
                    raise terr
                if not 0 <= index < topic.num_partitions:
                    raise UnknownTopicOrPartitionError(f"{topic.name} has no partition {index}")
                limit = min(fp["partition_max_bytes"], remaining)
                if client_metadata:
                    preferred = rm.preferred_read_replica(topic.name, index, fp["fetch_offset"], client_rack)
                    if preferred >= 0:
                        # Nothing is read here: the consumer goes to the preferred replica, at once.
                        r = rm.read(
                            topic.name,
                            index,
                            fp["fetch_offset"],
                            0,
                            isolation_level=isolation_level,
                            min_one_batch=False,
                            current_leader_epoch=fp.get("current_leader_epoch", -1),
                        )
                        entry["high_watermark"] = r.high_watermark
                        entry["last_stable_offset"] = r.last_stable_offset
                        entry["log_start_offset"] = r.log_start_offset
                        if r.error is not None:
                            raise r.error
                        entry["preferred_read_replica"] = preferred
                        any_error = True
                        parts_out.append(entry)
                        continue
                r = rm.read(
                    topic.name,
                    index,
                    fp["fetch_offset"],
                    limit,
                    replica_id=replica_id,
                    isolation_level=isolation_level,
                    min_one_batch=first_data,
                    current_leader_epoch=fp.get("current_leader_epoch", -1),
                    last_fetched_epoch=fp.get("last_fetched_epoch", -1) if replica_id >= 0 else -1,
                    replica_epoch=replica_epoch,
                    allow_follower=client_metadata,
                )
                entry["high_watermark"] = r.high_watermark
                entry["last_stable_offset"] = r.last_stable_offset
                entry["log_start_offset"] = r.log_start_offset
                if r.error is not None:
                    raise r.error
                if r.diverging_epoch is not None:
                    epoch, end_offset = r.diverging_epoch
                    entry["diverging_epoch"] = {"epoch": epoch, "end_offset": end_offset}
                    any_error = True
                data = r.records
                if data is not None:
                    first_data = False
                    remaining -= data.size
                    total += data.size
                    entry["records"] = data
                    if r.aborted_transactions:
                        entry["aborted_transactions"] = [
                            {"producer_id": a.producer_id, "first_offset": a.first_offset}
                            for a in r.aborted_transactions
                        ]
            except Exception as e:
                code, _ = error_of(e)
                entry["error_code"] = code
                any_error = True
            parts_out.append(entry)
        out.append({"topic": name, "topic_id": topic_id, "partitions": parts_out})
    return out, total, any_error


def _is_metadata_fetch(req: dict[str, Any]) -> bool:
    """A quorum member's Fetch of ``__cluster_metadata`` (by name, or by Kafka's fixed topic id)."""
    topics = req["topics"]
    return bool(topics) and (
        topics[0].get("topic") == METADATA_TOPIC or topics[0].get("topic_id") == METADATA_TOPIC_ID
    )


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    """The answer, or (when the fetch must wait for data) a coroutine producing it.

    A fetch that the first read settles (enough bytes, an error, no wait asked) is answered
    here, synchronously: the connection then needs no task for it.
    """
    if _is_metadata_fetch(req) and _replica_id(req) >= 0:  # a consumer gets UNKNOWN_TOPIC_OR_PARTITION
        return to_raft(ctx, API_KEY, req)
    replica_id = _replica_id(req)
    follower = replica_id >= 0
    fc = fetch_sessions.new_context(ctx, req, follower)
    if fc.error_code:
        return {"throttle_time_ms": 0, "error_code": fc.error_code, "session_id": 0, "responses": []}
    replica_epoch = _replica_epoch(req)
    topics = _plan(ctx, req, fetch_sessions.topics_to_read(ctx, req, fc, replica_id, replica_epoch))
    # Idle partitions as precomputed bytes: consumers without a session (whose answer is not
    # filtered per partition afterwards) and without a replica selector (KIP-392).
    idle_ok = fc.kind == fetch_sessions.SESSIONLESS and not follower and ctx.replica_manager.replica_selector is None
    min_bytes = max(req.get("min_bytes", 1), 1)
    max_wait_s = max(req.get("max_wait_ms", 0), 0) / 1000
    deadline = time.monotonic() + max_wait_s
    responses, total, any_error = _read_all(ctx, req, topics, idle_ok)
    if total >= min_bytes or any_error or max_wait_s <= 0 or not ctx.running:
        return _answer(ctx, req, fc, topics, responses, total, follower)
    return _wait_and_answer(ctx, req, fc, topics, idle_ok, min_bytes, deadline)


async def _wait_and_answer(
    ctx: RequestContext,
    req: dict[str, Any],
    fc: fetch_sessions.FetchContext,
    topics: list[Any],
    idle_ok: bool,
    min_bytes: int,
    deadline: float,
) -> dict[str, Any]:
    """Long polling: wait in the purgatory for appends to the fetched partitions (or the
    deadline), reading again after each wake-up, then answer."""
    replica_id = _replica_id(req)
    follower = replica_id >= 0
    wait_keys = fetch_sessions.wait_keys(fc, _wait_keys(topics))
    purgatory = ctx.replica_manager.purgatory
    while True:
        left = deadline - time.monotonic()
        if wait_keys and left > 0 and ctx.running:
            await purgatory.wait(wait_keys, left)
            if fc.incremental:  # any partition of the session may have data now
                topics = _plan(ctx, req, fetch_sessions.topics_to_read(ctx, req, fc, replica_id, _replica_epoch(req)))
        # Read after every wait: slices read before an await may be stale (a segment deleted).
        responses, total, any_error = _read_all(ctx, req, topics, idle_ok)
        done = total >= min_bytes or any_error or not wait_keys or not ctx.running
        if done or deadline - time.monotonic() <= 0:
            return _answer(ctx, req, fc, topics, responses, total, follower)


def _answer(
    ctx: RequestContext,
    req: dict[str, Any],
    fc: fetch_sessions.FetchContext,
    topics: list[Any],
    responses: list[dict[str, Any]],
    total: int,
    follower: bool,
) -> dict[str, Any]:
    """The response to a fetch from its last read (quota throttling, session bookkeeping,
    metrics, file regions). Runs with no await after that read, so its slices are still valid."""
    if not follower and (throttle := fetch_throttle_ms(ctx, total)):
        sid = fc.session.id if fc.session is not None else 0  # a throttled full fetch gets no session
        return {"throttle_time_ms": throttle, "error_code": 0, "session_id": sid, "responses": []}
    session_id = fetch_sessions.finish(ctx, req, fc, topics, responses, follower)
    if ctx.services.metrics is not None:
        _record(ctx, topics, responses, follower)
        timer = request_wait.get()
        if timer is not None:
            timer.variant = "FetchFollower" if follower else "FetchConsumer"
    _to_file_regions(responses)
    if fc.incremental:
        responses = [t for t in responses if t["partitions"]]
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": session_id, "responses": responses}


def _plan(ctx: RequestContext, req: dict[str, Any], raw: list[fetch_sessions.RawTopic]) -> list[Any]:
    """The topics to read, resolved (and authorised)."""
    topics: list[Any] = []
    for name, topic_id, parts in raw:
        try:
            topic, terr = resolve_topic(ctx, name, topic_id), None
        except KafkaError as e:
            topic, terr = None, e
        topics.append(((name, topic_id, terr, topic), parts))
    if ctx.services.authorizer is not None:
        topics = _authorized(ctx, req, topics)
    return topics


def _wait_keys(topics: list[Any]) -> dict[str, set[int]]:
    """What a delayed sessionless fetch waits on: topic name -> the partitions it reads (of the
    topics that resolved and were authorised)."""
    keys: dict[str, set[int]] = {}
    for (_name, _topic_id, _terr, topic), parts in topics:
        if topic is not None:
            keys.setdefault(topic.name, set()).update([fp["partition"] for fp in parts])
    return keys


def _authorized(ctx: RequestContext, req: dict[str, Any], topics: list[Any]) -> list[Any]:
    """``topics`` with the refused ones turned into TOPIC_AUTHORIZATION_FAILED."""
    ok_names: set[str] | None
    if _replica_id(req) >= 0:
        ok_names = None if cluster_allowed(ctx, Op.CLUSTER_ACTION) else set()
    else:
        names = (topic.name if topic is not None else name for (name, _, _, topic), _ in topics)
        ok_names = allowed_names(ctx, Op.READ, TOPIC, (n for n in names if n))
    if ok_names is None:
        return topics
    out = []
    for (name, topic_id, terr, topic), parts in topics:
        key = topic.name if topic is not None else name
        if key not in ok_names and not (topic is None and name is None):  # an unknown id stays UNKNOWN_TOPIC_ID
            terr, topic = TopicAuthorizationFailedError("Topic authorization failed."), None
        out.append(((name, topic_id, terr, topic), parts))
    return out


def _record(ctx: RequestContext, topics: list[Any], responses: list[dict[str, Any]], follower: bool) -> None:
    """Bytes out (and failed fetches) per topic, for the metrics."""
    metrics = ctx.services.metrics
    assert metrics is not None
    for ((_name, _topic_id, _terr, topic), _parts), t in zip(topics, responses, strict=True):
        if topic is None:
            continue
        for entry in t["partitions"]:
            if type(entry) is bytes:  # an idle partition
                continue
            data = entry["records"]
            if type(data) is LogReadSlice:
                metrics.fetched(topic.name, data.size, follower)
            elif entry["error_code"]:
                metrics.fetch_failed(topic.name)


#: Slices up to this size are read into the response (one ``pread``) rather than sent as a
#: file region: a region costs a ``dup``, a ``sendfile`` and a ``close`` and splits the response
#: into two writes, which at low rates (a record or a few per fetch) is most of a fetch's cost.
SMALL_SLICE_BYTES = 16 * 1024


def _to_file_regions(responses: list[dict[str, Any]]) -> None:
    """Turn the log slices read into file regions the connection sends with ``os.sendfile``, or
    into bytes for small ones (:data:`SMALL_SLICE_BYTES`).

    Runs right after the last read, with no await in between, so every slice's descriptor is
    still open; each region keeps its own duplicate of it until the response is written.
    """
    for t in responses:
        for entry in t["partitions"]:
            if type(entry) is bytes:  # an idle partition
                continue
            data = entry["records"]
            if type(data) is LogReadSlice:
                if data.size <= SMALL_SLICE_BYTES:
                    chunk = os.pread(data.fd, data.size, data.position)
                    if len(chunk) == data.size:
                        entry["records"] = chunk
                        continue
                entry["records"] = FileRegion(data.fd, data.position, data.size)
