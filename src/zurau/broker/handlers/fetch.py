"""Fetch: whole stored batches from the requested offsets, waiting for data when asked.

The handler parses the request once into a :class:`~zurau.replication.fetch_params.FetchParams`,
resolves and authorises its topics, applies fetch sessions and quotas and shapes the response;
the reads, the idle fast path, the long poll and the file regions sent with ``sendfile`` are the
replica manager's (:meth:`ReplicaManager.fetch`, :mod:`zurau.replication.delayed_fetch`). What a
fetch does, end to end:

* Readers see data up to the high watermark (read_uncommitted) or the last stable offset
  (read_committed); a batch that starts below the limit is sent whole. read_committed readers
  also get the aborted transactions overlapping what they read, so they can drop those records.
  A follower replica (``replica_id`` >= 0, or v15+ ``replica_state``) reads up to the log end
  offset; its fetch offset tells the leader how far it has replicated (and may advance the high
  watermark and the ISR). Its ``last_fetched_epoch`` (v12+) is checked against the leader's epochs:
  where its log diverges the answer carries ``diverging_epoch`` and no records (KIP-320), and the
  fetch is answered at once.
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
  (:mod:`zurau.replication.idle_fetch`), so its cost does not grow with idle partitions
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

from collections.abc import Awaitable, Coroutine
from typing import Any, TypedDict

from zurau.broker.handlers import _fetch_sessions as fetch_sessions
from zurau.broker.handlers._authz import TOPIC, Op, allowed_names, cluster_allowed
from zurau.broker.handlers._common import resolve_topic
from zurau.broker.handlers._quorum import ask_raft
from zurau.broker.quotas.throttling import fetch_bytes_bound, fetch_throttle_ms
from zurau.broker.request_context import RequestContext
from zurau.client.typed_api import FETCH
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, TopicAuthorizationFailedError
from zurau.protocol.messages import FetchRequest, FetchResponse, FetchResponseNodeEndpoints
from zurau.raft.wire import METADATA_TOPIC, METADATA_TOPIC_ID
from zurau.replication.delayed_fetch import FetchedTopic, FetchResult
from zurau.replication.fetch_params import FetchParams, FetchTopic, replica_id_of
from zurau.replication.purgatory import request_wait

API_KEY = ApiKey.FETCH


class FetchAnswer(TypedDict, total=False):
    """A :class:`~zurau.protocol.messages.FetchResponse` as the replica manager's reads give it:
    an idle partition's entry may be pre-encoded (:class:`~zurau.replication.delayed_fetch.FetchedTopic`)."""

    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchedTopic]
    node_endpoints: list[FetchResponseNodeEndpoints]


def _is_metadata_fetch(req: FetchRequest) -> bool:
    """A quorum member's Fetch of ``__cluster_metadata`` (by name, or by Kafka's fixed topic id)."""
    topics = req["topics"]
    return bool(topics) and (
        topics[0].get("topic") == METADATA_TOPIC or topics[0].get("topic_id") == METADATA_TOPIC_ID
    )


def handle(ctx: RequestContext, req: FetchRequest) -> FetchAnswer | Awaitable[FetchAnswer | FetchResponse]:
    """The answer, or (when the fetch must wait for data) a coroutine producing it.

    A fetch that the first read settles (enough bytes, an error, no wait asked) is answered
    here, synchronously: the connection then needs no task for it.
    """
    if _is_metadata_fetch(req) and replica_id_of(req) >= 0:  # a consumer gets UNKNOWN_TOPIC_OR_PARTITION
        return ask_raft(ctx, FETCH, req)
    follower = replica_id_of(req) >= 0
    fc = fetch_sessions.new_context(ctx, req, follower)
    if fc.error_code:
        return {"throttle_time_ms": 0, "error_code": fc.error_code, "session_id": 0, "responses": []}
    params = FetchParams.from_request(
        req,
        ctx.api_version,
        fetch_max_bytes=ctx.config.get("fetch.max.bytes"),
        sessionless=fc.kind == fetch_sessions.SESSIONLESS,
    )
    # Planning an incremental session records an idle follower's fetch, which may move a high
    # watermark and so make a coordinator append: the fetch must not wait for that append.
    mark = ctx.replica_manager.fetch_mark()
    topics = _plan(ctx, params, fetch_sessions.topics_to_read(ctx, req, fc, params))
    session = fc.session
    result = ctx.replica_manager.fetch(
        params,
        topics,
        wait_keys=session.wait_keys if session is not None else None,
        replan=(lambda: _plan(ctx, params, fetch_sessions.topics_to_read(ctx, req, fc, params))) if fc.incremental else None,
        bytes_bound=None if follower else (lambda: fetch_bytes_bound(ctx)),
        running=lambda: ctx.running,
        mark=mark,
    )
    if isinstance(result, FetchResult):
        return _answer(ctx, req, fc, result, follower)
    return _answer_when_read(ctx, req, fc, result, follower)


async def _answer_when_read(
    ctx: RequestContext,
    req: FetchRequest,
    fc: fetch_sessions.FetchContext,
    reading: Coroutine[Any, Any, FetchResult],
    follower: bool,
) -> FetchAnswer:
    """The answer to a fetch that waits for data (the replica manager's long poll)."""
    return _answer(ctx, req, fc, await reading, follower)


def _answer(
    ctx: RequestContext,
    req: FetchRequest,
    fc: fetch_sessions.FetchContext,
    result: FetchResult,
    follower: bool,
) -> FetchAnswer:
    """The response to a fetch from its last read (quota throttling, session bookkeeping,
    metrics)."""
    topics, responses, total = result
    if not follower and (throttle := fetch_throttle_ms(ctx, total)):
        sid = fc.session.id if fc.session is not None else 0  # a throttled full fetch gets no session
        return {"throttle_time_ms": throttle, "error_code": 0, "session_id": sid, "responses": []}
    session_id = fetch_sessions.finish(ctx, req, fc, topics, responses, follower)
    if ctx.services.metrics is not None:
        _record(ctx, topics, responses, follower)
        timer = request_wait.get()
        if timer is not None:
            timer.variant = "FetchFollower" if follower else "FetchConsumer"
    if fc.incremental:
        responses = [t for t in responses if t["partitions"]]
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": session_id, "responses": responses}


def _plan(ctx: RequestContext, params: FetchParams, raw: list[fetch_sessions.RawTopic]) -> list[FetchTopic]:
    """The topics to read, resolved (and authorised)."""
    topics: list[FetchTopic] = []
    for name, topic_id, parts in raw:
        try:
            topics.append(FetchTopic(name, topic_id, None, resolve_topic(ctx, name, topic_id), parts))
        except KafkaError as e:
            topics.append(FetchTopic(name, topic_id, e, None, parts))
    if ctx.services.authorizer is not None:
        topics = _authorized(ctx, params, topics)
    return topics


def _authorized(ctx: RequestContext, params: FetchParams, topics: list[FetchTopic]) -> list[FetchTopic]:
    """``topics`` with the refused ones turned into TOPIC_AUTHORIZATION_FAILED."""
    ok_names: set[str] | None
    if params.is_from_follower:
        ok_names = None if cluster_allowed(ctx, Op.CLUSTER_ACTION) else set()
    else:
        names = (t.topic.name if t.topic is not None else t.name for t in topics)
        ok_names = allowed_names(ctx, Op.READ, TOPIC, (n for n in names if n))
    if ok_names is None:
        return topics
    out = []
    for t in topics:
        key = t.topic.name if t.topic is not None else t.name
        if key not in ok_names and not (t.topic is None and t.name is None):  # an unknown id stays UNKNOWN_TOPIC_ID
            t = t._replace(error=TopicAuthorizationFailedError("Topic authorization failed."), topic=None)
        out.append(t)
    return out


def _record(ctx: RequestContext, topics: list[FetchTopic], responses: list[FetchedTopic], follower: bool) -> None:
    """Bytes out (and failed fetches) per topic, for the metrics."""
    metrics = ctx.services.metrics
    assert metrics is not None
    for t, r in zip(topics, responses, strict=True):
        if t.topic is None:
            continue
        for entry in r["partitions"]:
            if isinstance(entry, bytes):  # an idle partition
                continue
            records = entry["records"]
            if records is not None and (size := len(records)):  # records read (bytes or a file region)
                metrics.fetched(t.topic.name, size, follower)
            elif entry["error_code"]:
                metrics.fetch_failed(t.topic.name)
