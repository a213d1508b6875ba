"""Fetch on the replica manager: read every partition of a fetch, answer at once or wait for data
(Kafka's ``ReplicaManager.fetchMessages``, ``readFromLog`` and ``DelayedFetch``).

:func:`fetch` (behind :meth:`ReplicaManager.fetch <zurau.replication.replica_manager.ReplicaManager.fetch>`)
takes a :class:`~zurau.replication.fetch_params.FetchParams` and the topics the handler planned,
and gives a :class:`FetchResult`: the ``responses`` entries of a Fetch response (one per topic,
partitions in the request's order) and the bytes read. The handler keeps authorisation, fetch
sessions and the response's envelope.

* **Reads** (:func:`read_partitions`): one pass over the partitions through
  :meth:`ReplicaManager.read`, bounded by ``max_bytes`` (and a consumer quota's bound, asked
  before each pass) and each ``partition_max_bytes``, except that the first batch of the first
  partition with data is always sent whole (KIP-74). A KIP-392 consumer may be sent to a
  preferred read replica instead (nothing read, answered at once); an error or a diverging epoch
  also answers at once.
* **Remote reads** (tiered storage): the first partition whose records are in the remote tier
  only is read from there and answers the fetch at once (:func:`_complete_with_remote`), unless
  the remote fetch quota is exceeded (KIP-956, asked once per pass): then such partitions answer
  no records and the fetch goes on as one without data (it may wait; Kafka skips the remote read
  and the consumer fetches again).
* **Replication throttle** (:mod:`zurau.replication.replication_quota`): for a follower that is
  not in the ISR, a partition in ``leader.replication.throttled.replicas`` is read with no bytes
  (its offsets and the follower's fetch state still are) while the leader's quota is exceeded,
  and its bytes do not count toward ``min_bytes``; the records sent of throttled partitions are
  recorded in the quota when the answer is final.
* **Idle fast path**: for a sessionless consumer fetch and no replica selector, a partition led
  here and fetched exactly where reading stops is answered with precomputed bytes
  (:mod:`zurau.replication.idle_fetch`) instead of a read and a dict.
* **Long poll**: with fewer than ``min_bytes`` read, no error and ``max_wait_ms`` > 0, :func:`fetch`
  returns a coroutine that waits in the :class:`~zurau.replication.purgatory.FetchPurgatory` (one
  :class:`~zurau.replication.purgatory.FetchDeadline` on the replica manager's clock) and reads
  again after every wake-up (re-planning the topics first when the caller gives ``replan``: an
  incremental fetch session), until enough is read, an error, the deadline, or shutdown. A fetch
  the first read settles is returned as is, so the connection needs no task for it.
* **Transferable records**: after the last read, with no await in between (a segment may be
  deleted at any await), every slice read becomes bytes or a file region
  (:func:`zurau.storage.file_region.transferable`); slices of earlier reads are dropped unused.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from zurau.protocol.errors import (
    KafkaError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import FetchResponseResponsesPartitions
from zurau.replication.fetch_params import FetchParams, FetchTopic
from zurau.replication.idle_fetch import idle_encoder
from zurau.replication.replication_quota import ReplicationQuota
from zurau.storage.file_region import transferable
from zurau.storage.partition_log import LogReadSlice

if TYPE_CHECKING:
    from zurau.replication.replica_manager import RemoteRead, ReplicaManager

log = logging.getLogger("zurau.replication")

#: What a delayed fetch waits on: (topic, partition) keys, or topic -> partitions.
WaitKeys = Iterable[tuple[str, int]] | Mapping[str, AbstractSet[int]]


class FetchedTopic(TypedDict, total=False):
    """A :class:`~zurau.protocol.messages.FetchResponseResponses` as a fetch reads it: a partition
    entry may be given pre-encoded (``bytes``, see :mod:`zurau.protocol.codec`): an idle
    partition's is (:mod:`zurau.replication.idle_fetch`). ``topic`` and ``topic_id`` are as the
    fetch named the topic: the one the response's version lacks (None, or its default) is not
    encoded."""

    topic: str | None
    topic_id: uuid.UUID | None
    partitions: list[FetchResponseResponsesPartitions | bytes]


class FetchResult(NamedTuple):
    """The outcome of a fetch: the topics last read (as planned), their Fetch response entries
    (an idle partition's entry is its encoded bytes; records are bytes or a file region), and
    the record bytes read."""

    topics: list[FetchTopic]
    responses: list[FetchedTopic]
    bytes_read: int


def _running() -> bool:
    return True


def fetch(
    rm: ReplicaManager,
    params: FetchParams,
    topics: list[FetchTopic],
    *,
    wait_keys: Callable[[], WaitKeys] | None = None,
    replan: Callable[[], list[FetchTopic]] | None = None,
    bytes_bound: Callable[[], int | None] | None = None,
    running: Callable[[], bool] = _running,
    mark: int | None = None,
) -> FetchResult | Coroutine[Any, Any, FetchResult]:
    """Read ``topics``; the result, or (when the fetch must wait for data) a coroutine giving it.

    ``wait_keys``: what a delayed fetch waits on (default: the partitions of ``topics``);
    ``replan``: the topics to read after each wake-up (default: the same); ``bytes_bound``: a
    consumer quota's bound on the bytes one read may take (None: unbounded); ``running``: False
    once the broker shuts down (then nothing waits); ``mark``: the purgatory's
    :meth:`~zurau.replication.purgatory.FetchPurgatory.mark` taken before the caller planned
    ``topics`` (planning may record a follower's fetch, which may append; default: now).
    """
    if mark is None:
        mark = rm.purgatory.mark()
    remote: list[RemotePending] = []
    responses, total, settled = read_partitions(rm, params, topics, bytes_bound, remote)
    if remote:
        return _complete_with_remote(rm, params, topics, responses, total, remote[0])
    if total >= params.min_bytes or settled or params.max_wait_ms <= 0 or not running():
        return _complete(rm, params, topics, responses, total)
    keys = wait_keys() if wait_keys is not None else partitions_of(topics)
    return _delayed(rm, params, topics, keys, replan, bytes_bound, running, mark)


async def _delayed(
    rm: ReplicaManager,
    params: FetchParams,
    topics: list[FetchTopic],
    keys: WaitKeys,
    replan: Callable[[], list[FetchTopic]] | None,
    bytes_bound: Callable[[], int | None] | None,
    running: Callable[[], bool],
    mark: int,
) -> FetchResult:
    """The long poll (see the module docstring). ``mark``: the purgatory's mark taken before the
    last read: an append to a partition of ``keys`` since then (while reading, the follower's
    fetch recorded there moved a high watermark and a coordinator wrote; or before this task
    first ran) has notified nobody, so the fetch re-reads instead of waiting for the next one."""
    purgatory = rm.purgatory
    deadline = purgatory.deadline(params.max_wait_ms)
    follower = params.replica_id >= 0  # reads up to the log end: waits on appends only
    try:
        while True:
            if keys and not deadline.expired and running():
                if not purgatory.notified_since(mark, keys, data_only=follower):
                    await purgatory.wait(keys, deadline, data_only=follower)
                mark = purgatory.mark()
                if replan is not None:  # any partition of the session may have data now
                    topics = replan()
            # Read after every wait: slices read before an await may be stale (a segment deleted).
            remote: list[RemotePending] = []
            responses, total, settled = read_partitions(rm, params, topics, bytes_bound, remote)
            if remote:
                return await _complete_with_remote(rm, params, topics, responses, total, remote[0])
            if total >= params.min_bytes or settled or not keys or not running() or deadline.expired:
                return _complete(rm, params, topics, responses, total)
    finally:
        deadline.cancel()


def partitions_of(topics: list[FetchTopic]) -> dict[str, set[int]]:
    """What a delayed sessionless fetch waits on: topic name -> the partitions it reads (of the
    topics that resolved and were authorised)."""
    keys: dict[str, set[int]] = {}
    for t in topics:
        if t.topic is not None:
            keys.setdefault(t.topic.name, set()).update([fp["partition"] for fp in t.partitions])
    return keys


def _complete(
    rm: ReplicaManager,
    params: FetchParams,
    topics: list[FetchTopic],
    responses: list[FetchedTopic],
    total: int,
) -> FetchResult:
    """The result of the last read, its slices made transferable (no await since the read); a
    follower's throttled bytes are recorded in the leader's replication quota."""
    if total and params.replica_id >= 0 and rm.leader_quota is not None:
        _record_throttled(rm.leader_quota, topics, responses)
    if total:  # some slice was read (every slice holds at least one batch)
        for t in responses:
            for entry in t["partitions"]:
                if isinstance(entry, bytes):  # an idle partition
                    continue
                data = entry["records"]
                if type(data) is LogReadSlice:
                    entry["records"] = transferable(data)
    return FetchResult(topics, responses, total)


class RemotePending(NamedTuple):
    """A partition entry of a fetch answer waiting for its remote-tier read."""

    entry: FetchResponseResponsesPartitions
    read: RemoteRead


async def _complete_with_remote(
    rm: ReplicaManager,
    params: FetchParams,
    topics: list[FetchTopic],
    responses: list[FetchedTopic],
    total: int,
    pending: RemotePending,
) -> FetchResult:
    """The answer of a fetch one of whose partitions is read from the remote tier (Kafka's
    ``DelayedRemoteFetch``): the local slices are made transferable first (a segment may go at
    the await), then the remote read runs, for at most ``remote.fetch.max.wait.ms``. Only the
    first such partition is read per fetch, as Kafka does; the others answer no records and the
    consumer fetches them again. A remote read that fails answers KAFKA_STORAGE_ERROR (retriable:
    the client fetches again), one that times out answers no records; never other records."""
    result = _complete(rm, params, topics, responses, total)
    tiered = rm.tiered
    entry, rr = pending
    if tiered is None:
        entry["error_code"] = OffsetOutOfRangeError.code
        return result
    try:
        async with asyncio.timeout(tiered.fetch_max_wait_ms / 1000):
            data = await tiered.read(
                rr.topic,
                rr.partition,
                rr.log,
                rr.fetch_offset,
                rr.max_bytes,
                read_committed=rr.read_committed,
                min_one_message=rr.min_one_batch,
            )
    except TimeoutError:
        tiered.fetch_timeouts += 1
        return result
    except OffsetOutOfRangeError:
        entry["error_code"] = OffsetOutOfRangeError.code
        return result
    except Exception as e:  # RemoteStorageError, or a bug: a retriable error, never records
        log.warning("remote read of %s-%d at %d failed: %s", rr.topic, rr.partition, rr.fetch_offset, e)
        entry["error_code"] = KafkaStorageError.code
        return result
    entry["records"] = data.records
    if data.aborted_transactions:
        entry["aborted_transactions"] = [
            {"producer_id": a.producer_id, "first_offset": a.first_offset} for a in data.aborted_transactions
        ]
    return FetchResult(result.topics, result.responses, result.bytes_read + len(data.records))


def _record_throttled(
    quota: ReplicationQuota, topics: list[FetchTopic], responses: list[FetchedTopic]
) -> None:
    """Record the records bytes of the throttled partitions of a follower's answer (Kafka
    counts every throttled partition's bytes, in sync or not)."""
    for planned, t in zip(topics, responses, strict=True):
        if planned.topic is None:
            continue
        name = planned.topic.name
        for entry in t["partitions"]:
            if isinstance(entry, bytes):
                continue
            data = entry["records"]
            if type(data) is LogReadSlice and quota.is_throttled(name, entry["partition_index"]):
                quota.record(data.size)


def _error_code(e: Exception) -> int:
    if isinstance(e, KafkaError):
        return e.code
    log.exception("unexpected error in a fetch", exc_info=e)
    return UnknownServerError.code


def read_partitions(
    rm: ReplicaManager,
    params: FetchParams,
    topics: list[FetchTopic],
    bytes_bound: Callable[[], int | None] | None = None,
    remote: list[RemotePending] | None = None,
) -> tuple[list[FetchedTopic], int, bool]:
    """One pass over every partition of ``topics``: (response entries, bytes read, any error or
    diverging epoch or preferred replica, any of which answers at once). Records read are
    :class:`LogReadSlice` s, valid until the next await. Partitions whose records are in the
    remote tier only are appended to ``remote`` (their entries wait for that read; the first one
    read settles the fetch); without ``remote`` they answer OFFSET_OUT_OF_RANGE."""
    replica_id = params.replica_id
    replica_epoch = params.replica_epoch
    isolation_level = params.isolation_level
    follower = replica_id >= 0
    read_committed = params.read_committed
    client_metadata = params.client_metadata
    client_rack = client_metadata.rack_id if client_metadata is not None else ""
    remaining = params.max_bytes
    if bytes_bound is not None and (bound := bytes_bound()) is not None:
        remaining = min(remaining, bound)
    total = 0
    settled = False
    first_data = True
    remote_throttled: bool | None = None  # the remote fetch quota, asked at the first remote read
    out: list[FetchedTopic] = []
    idle = (
        idle_encoder(params.version, read_committed)
        if params.sessionless and not follower and rm.replica_selector is None
        else None
    )
    hosted = rm.hosted_partitions if idle is not None else {}
    node_id = rm.node_id
    for name, topic_id, terr, topic, parts in topics:
        parts_out: list[FetchResponseResponsesPartitions | bytes] = []
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
            entry: FetchResponseResponsesPartitions = {
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
                assert topic is not None
                if not 0 <= index < topic.num_partitions:
                    raise UnknownTopicOrPartitionError(f"{topic.name} has no partition {index}")
                limit = min(fp["partition_max_bytes"], remaining)
                if client_metadata is not None:
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
                        settled = True
                        parts_out.append(entry)
                        continue
                throttled = follower and rm.should_leader_throttle(topic.name, index, replica_id)
                r = rm.read(
                    topic.name,
                    index,
                    fp["fetch_offset"],
                    0 if throttled else limit,
                    replica_id=replica_id,
                    isolation_level=isolation_level,
                    min_one_batch=first_data and not throttled,
                    current_leader_epoch=fp.get("current_leader_epoch", -1),
                    last_fetched_epoch=fp.get("last_fetched_epoch", -1) if follower else -1,
                    replica_epoch=replica_epoch,
                    allow_follower=client_metadata is not None,
                )
                entry["high_watermark"] = r.high_watermark
                entry["last_stable_offset"] = r.last_stable_offset
                entry["log_start_offset"] = r.log_start_offset
                if r.error is not None:
                    raise r.error
                if r.remote is not None:
                    if remote is None:
                        raise OffsetOutOfRangeError(
                            f"{topic.name}-{index}: offset {fp['fetch_offset']} is remote"
                        )
                    if remote_throttled is None:
                        remote_throttled = rm.tiered is not None and rm.tiered.fetch_throttle_time_ms() > 0
                    if not remote_throttled:
                        if not remote:  # one remote read per fetch (Kafka); the others answer empty
                            remote.append(RemotePending(entry, r.remote))
                        settled = True
                        first_data = False
                if r.diverging_epoch is not None:
                    epoch, end_offset = r.diverging_epoch
                    entry["diverging_epoch"] = {"epoch": epoch, "end_offset": end_offset}
                    settled = True
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
                entry["error_code"] = _error_code(e)
                settled = True
            parts_out.append(entry)
        out.append({"topic": name, "topic_id": topic_id, "partitions": parts_out})
    return out, total, settled
