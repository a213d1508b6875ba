"""An asyncio consumer: assign or subscribe, seek, and fetch records from partition leaders.

Positions: for each assigned partition the consumer keeps the *fetch offset* (the next offset to
ask the leader for) and a buffer of decoded records not yet handed out. The *position* (the next
record the application will see) is the first buffered record's offset, or the fetch offset when
nothing is buffered. A partition with no fetch offset is reset before fetching: to the group's
committed offset when in a group, else by ``auto_offset_reset`` (``earliest``, ``latest`` or
``none``, which raises).

Fetch decoding, per partition answer:

* whole batches are read with :func:`~zurau.protocol.records.batch.iter_batches` (a partial batch
  at the end of an answer is ignored and fetched again next time);
* batches that end before the fetch offset are skipped, and records before it inside a batch (a
  compressed batch is always sent whole) are dropped, so each offset is returned at most once;
* control batches (transaction markers) and, with ``isolation_level=1`` (read_committed), batches
  of aborted transactions are skipped; the fetch offset still moves past them;
* OFFSET_OUT_OF_RANGE resets the partition by ``auto_offset_reset``; leadership errors refresh
  metadata and the partition is fetched again.

Subscriptions: the consumer watches the partition counts of its subscribed topics as Kafka's
consumer coordinator does, and rejoins its group when one changes (a topic created after
``subscribe``, partitions added, a topic deleted): every ``metadata.max.age.ms``, and every
second while a subscribed topic does not exist yet (Java's consumer, too, keeps asking for the
metadata of a missing subscribed topic rather than waiting for the next periodic refresh).

Invariants: records of one partition are returned in offset order, each once per position (a
:meth:`seek` may go back); a :meth:`getmany` never returns more than ``max_records``; after
:meth:`close` no task of the consumer is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from zurau.client import typed_api
from zurau.client.admin import EARLIEST, LATEST, AdminClient, OffsetInfo
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.errors import ClientError
from zurau.client.group import GroupMember
from zurau.client.types import ConsumerRecord, TopicPartition
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, OffsetOutOfRangeError, for_code
from zurau.protocol.messages import (
    FetchRequestTopicsPartitions,
    FetchResponseResponsesPartitionsAbortedTransactions,
)
from zurau.protocol.records import batch as _batch
from zurau.protocol.records.control import ABORT, parse_control_key
from zurau.protocol.records.record import decode_batch_records

log = logging.getLogger("zurau.client.consumer")

FETCH_MAX_VERSION = 12  # v13 names topics by id
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_REFRESH_CODES = {3, 5, 6, 74, 75, 100}  # unknown topic, no leader, not leader, fenced/unknown epoch


class Consumer:
    """Consume from a Kafka-compatible cluster. Use as ``async with Consumer(cfg) as c``."""

    def __init__(
        self,
        config: ClientConfig | Cluster,
        *,
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        isolation_level: int = READ_UNCOMMITTED,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        check_crcs: bool = True,
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(f"auto_offset_reset must be earliest, latest or none, not {auto_offset_reset!r}")
        self.cluster, self._owns_cluster = Cluster.of(config)
        self.admin = AdminClient(self.cluster)
        self.group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self.isolation_level = isolation_level
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.check_crcs = check_crcs
        self.group: GroupMember | None = None
        if group_id is not None:
            self.group = GroupMember(
                self.cluster,
                group_id,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
            )
        self._assignment: list[TopicPartition] = []
        self._subscription: list[str] = []
        self._subscribed_counts: dict[str, int] = {}  # partitions per subscribed topic at the last join
        self._next_subscription_check = 0.0
        self._fetch_offsets: dict[TopicPartition, int | None] = {}
        self._buffers: dict[TopicPartition, deque[ConsumerRecord]] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._started = False
        self._closed = False

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if not self._started:
            await self.cluster.bootstrap()
            self._started = True

    async def close(self) -> None:
        """Leave the group (if any) and close the connections this consumer opened."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.group is not None and self._started:
                await self.group.leave()
        finally:
            if self._owns_cluster:
                await self.cluster.close()

    # ------------------------------------------------------------------ assignment
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions`` (no group management)."""
        if self._subscription:
            raise ClientError("assign() cannot be combined with subscribe()")
        self._set_assignment(list(partitions))

    def _set_assignment(self, partitions: list[TopicPartition]) -> None:
        self._assignment = sorted(set(partitions))
        keep = set(self._assignment)
        self._fetch_offsets = {tp: self._fetch_offsets.get(tp) for tp in self._assignment}
        self._buffers = {tp: b for tp, b in self._buffers.items() if tp in keep}

    def assignment(self) -> list[TopicPartition]:
        return list(self._assignment)

    async def subscribe(self, topics: Sequence[str]) -> list[TopicPartition]:
        """Join the consumer group for ``topics``; returns the partitions assigned to us."""
        if self.group is None:
            raise ClientError("subscribe() needs a group_id")
        await self.start()
        await self.group.check_apis()
        self._subscription = sorted(set(topics))
        return await self._rejoin()

    async def _rejoin(self) -> list[TopicPartition]:
        assert self.group is not None
        assigned = await self.group.join(self._subscription)
        self._subscribed_counts = await self._partition_counts()
        self._next_subscription_check = self._subscription_check_after()
        self._fetch_offsets = {}
        self._buffers = {}
        self._set_assignment(assigned)
        return assigned

    async def _partition_counts(self) -> dict[str, int]:
        """Partitions per subscribed topic that exists, from fresh metadata."""
        md = await self.cluster.refresh_metadata(self._subscription)
        return {
            t: len(md.topics[t].partitions)
            for t in self._subscription
            if t in md.topics and not md.topics[t].error_code and md.topics[t].partitions
        }

    def _subscription_check_after(self) -> float:
        missing = len(self._subscribed_counts) < len(self._subscription)
        interval = 1.0 if missing else self.cluster.config.metadata_max_age_ms / 1000
        return time.monotonic() + interval

    async def _check_subscription(self) -> None:
        """Rejoin when a subscribed topic's partition count changed since the last join."""
        assert self.group is not None
        try:
            counts = await self._partition_counts()
        except (ClientError, KafkaError, OSError) as e:  # try again at the next check
            log.debug("subscription metadata check failed: %s", e)
            counts = self._subscribed_counts
        if counts != self._subscribed_counts:
            log.info("subscribed topics changed (%s -> %s): rejoining", self._subscribed_counts, counts)
            self.group.needs_rejoin = True
        self._next_subscription_check = self._subscription_check_after()

    # ------------------------------------------------------------------ positions
    def seek(self, tp: TopicPartition, offset: int) -> None:
        if tp not in self._fetch_offsets:
            raise ClientError(f"{tp} is not assigned")
        self._fetch_offsets[tp] = offset
        self._buffers.pop(tp, None)

    async def seek_to_beginning(self, *tps: TopicPartition) -> None:
        await self._seek_by(tps or tuple(self._assignment), EARLIEST)

    async def seek_to_end(self, *tps: TopicPartition) -> None:
        await self._seek_by(tps or tuple(self._assignment), LATEST)

    async def _seek_by(self, tps: Sequence[TopicPartition], spec: int) -> None:
        found = await self.admin.list_offsets({tp: spec for tp in tps}, isolation_level=self.isolation_level)
        for tp in tps:
            r = found[tp]
            if isinstance(r, KafkaError):
                raise r
            self.seek(tp, r.offset)

    async def offsets_for_times(
        self, times: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetInfo | None]:
        found = await self.admin.list_offsets(dict(times), isolation_level=self.isolation_level)
        out: dict[TopicPartition, OffsetInfo | None] = {}
        for tp, r in found.items():
            if isinstance(r, KafkaError):
                raise r
            out[tp] = r if r.offset >= 0 else None
        return out

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record :meth:`getmany` will return for ``tp``."""
        buf = self._buffers.get(tp)
        if buf:
            return buf[0].offset
        if self._fetch_offsets.get(tp) is None:
            await self._reset([tp])
        off = self._fetch_offsets[tp]
        assert off is not None
        return off

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The partition's high watermark as of the last fetch answer (None before one)."""
        return self._high_watermarks.get(tp)

    async def _reset(self, tps: list[TopicPartition], *, out_of_range: bool = False) -> None:
        if self.group is not None and not out_of_range:
            committed = await self.group.committed(tps)
            for tp, off in committed.items():
                self._fetch_offsets[tp] = off
            tps = [tp for tp in tps if tp not in committed]
        if not tps:
            return
        if self.auto_offset_reset == "none":
            raise OffsetOutOfRangeError(
                f"no valid offset for {', '.join(map(str, tps))} and auto.offset.reset=none"
            )
        await self._seek_by(tps, EARLIEST if self.auto_offset_reset == "earliest" else LATEST)

    # ------------------------------------------------------------------ commits
    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (default: the current positions of every assigned partition)."""
        if self.group is None:
            raise ClientError("commit() needs a group_id")
        if offsets is None:
            offsets = {}
            for tp in self._assignment:
                buf = self._buffers.get(tp)
                off = buf[0].offset if buf else self._fetch_offsets.get(tp)
                if off is not None:
                    offsets[tp] = off
        await self.group.commit(offsets)

    async def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        if self.group is None:
            raise ClientError("committed() needs a group_id")
        return await self.group.committed(tps)

    # ------------------------------------------------------------------ fetching
    async def getmany(
        self, timeout_ms: float = 1000, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records available within ``timeout_ms``, by partition (empty if none arrived)."""
        await self.start()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self.group is not None and self._subscription:
                if time.monotonic() >= self._next_subscription_check:
                    await self._check_subscription()
                if self.group.needs_rejoin:
                    await self._rejoin()
            out = self._drain(max_records)
            if out:
                return out
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._assignment:
                if not self._assignment and remaining > 0:
                    await asyncio.sleep(min(remaining, 0.1))
                    continue
                return {}
            await self._fetch_round(max(0, min(remaining * 1000, self.fetch_max_wait_ms)))

    def _drain(self, max_records: int | None) -> dict[TopicPartition, list[ConsumerRecord]]:
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        budget = max_records if max_records is not None else 1 << 62
        for tp in self._assignment:
            buf = self._buffers.get(tp)
            if not buf or budget <= 0:
                continue
            take = min(budget, len(buf))
            out[tp] = [buf.popleft() for _ in range(take)]
            budget -= take
        return out

    async def _fetch_round(self, max_wait_ms: float) -> None:
        need_reset = [tp for tp in self._assignment if self._fetch_offsets.get(tp) is None]
        if need_reset:
            await self._reset(need_reset)
        by_leader: dict[int, list[TopicPartition]] = {}
        refresh = False
        for tp in self._assignment:
            if self._buffers.get(tp):
                continue
            try:
                leader = await self.cluster.leader_for(tp.topic, tp.partition)
            except KafkaError as e:
                if e.code in _REFRESH_CODES:
                    refresh = True
                    continue
                raise
            by_leader.setdefault(leader, []).append(tp)
        if refresh:
            await asyncio.sleep(0.05)
            with contextlib.suppress(ClientError, KafkaError):
                await self.cluster.refresh_metadata(sorted({tp.topic for tp in self._assignment}))
        if not by_leader:
            return
        results = await asyncio.gather(
            *(self._fetch_from(node, tps, int(max_wait_ms)) for node, tps in by_leader.items()),
            return_exceptions=True,
        )
        for r in results:
            if isinstance(r, (ClientError, OSError)):
                log.debug("fetch failed: %s", r)
                with contextlib.suppress(ClientError, KafkaError):
                    await self.cluster.refresh_metadata(sorted({tp.topic for tp in self._assignment}))
            elif isinstance(r, BaseException):
                raise r

    async def _fetch_from(self, node: int, tps: list[TopicPartition], max_wait_ms: int) -> None:
        conn = await self.cluster.connection(node)
        version = conn.version(ApiKey.FETCH, FETCH_MAX_VERSION, min_version=4)
        topics: dict[str, list[FetchRequestTopicsPartitions]] = {}
        for tp in tps:
            fetch_offset = self._fetch_offsets[tp]
            assert fetch_offset is not None  # _fetch_round reset every partition without one
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": fetch_offset,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": self.max_partition_fetch_bytes,
                }
            )
        call = typed_api.FETCH(
            {
                "replica_id": -1,
                "max_wait_ms": max_wait_ms,
                "min_bytes": self.fetch_min_bytes,
                "max_bytes": self.fetch_max_bytes,
                "isolation_level": self.isolation_level,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": n, "partitions": ps} for n, ps in topics.items()],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
        )
        timeout = self.cluster.config.request_timeout + max_wait_ms / 1000
        resp = await conn.call(call, version=version, timeout=timeout)
        if resp.get("error_code"):
            raise for_code(resp["error_code"])(
                f"fetch from broker {node} failed (error {resp['error_code']})"
            )
        out_of_range: list[TopicPartition] = []
        refresh = False
        for t in resp["responses"]:
            for p in t["partitions"]:
                tp = TopicPartition(t["topic"], p["partition_index"])
                if tp not in self._fetch_offsets or self._fetch_offsets[tp] is None:
                    continue  # unassigned or reset meanwhile
                code = p["error_code"]
                if code == OffsetOutOfRangeError.code:
                    out_of_range.append(tp)
                    continue
                if code in _REFRESH_CODES:
                    refresh = True
                    continue
                if code:
                    raise for_code(code)(f"fetch of {tp} failed (error {code})")
                self._high_watermarks[tp] = p["high_watermark"]
                records = p["records"]
                if records:
                    self._decode(tp, records, p.get("aborted_transactions") or [])
        if out_of_range:
            for tp in out_of_range:
                self._fetch_offsets[tp] = None
            if self.auto_offset_reset == "none":
                raise OffsetOutOfRangeError(f"offset out of range for {', '.join(map(str, out_of_range))}")
            await self._reset(out_of_range, out_of_range=True)
        if refresh:
            await self.cluster.refresh_metadata(sorted({tp.topic for tp in tps}))

    def _decode(
        self,
        tp: TopicPartition,
        data: Any,
        aborted_list: list[FetchResponseResponsesPartitionsAbortedTransactions],
    ) -> None:
        mv = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else memoryview(data)
        offset = self._fetch_offsets[tp]
        assert offset is not None
        aborted = sorted((a["first_offset"], a["producer_id"]) for a in aborted_list)
        aborting: set[int] = set()
        buf = self._buffers.setdefault(tp, deque())
        for pos, h in _batch.iter_batches(mv):
            if h.next_offset <= offset:
                continue
            if self.isolation_level == READ_COMMITTED:
                while aborted and aborted[0][0] <= h.last_offset:
                    aborting.add(aborted.pop(0)[1])
            chunk = mv[pos : pos + h.size]
            if h.is_control:
                if h.producer_id in aborting:
                    with contextlib.suppress(KafkaError, ValueError):
                        recs = decode_batch_records(chunk, check_crc=False)
                        if recs and recs[0].key is not None and parse_control_key(recs[0].key) == ABORT:
                            aborting.discard(h.producer_id)
                offset = h.next_offset
                continue
            if h.is_transactional and h.producer_id in aborting:
                offset = h.next_offset
                continue
            ts_type = h.timestamp_type
            for r in decode_batch_records(chunk, check_crc=self.check_crcs):
                if r.offset >= offset:
                    buf.append(
                        ConsumerRecord(
                            tp.topic,
                            tp.partition,
                            r.offset,
                            r.timestamp,
                            ts_type,
                            r.key,
                            r.value,
                            r.headers,
                            h.partition_leader_epoch,
                        )  # fmt: skip
                    )
            offset = h.next_offset
        self._fetch_offsets[tp] = offset
