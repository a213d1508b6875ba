"""The message browser: a bounded scan of a topic's records with an optional filter.

A browse reads forward from a start position chosen per partition and never past the log end
offsets listed when it began (or the high watermark of its first fetch from a partition, when a
broker's ListOffsets answers less: records produced during the scan are not chased), and stops at
the first of:

* ``end``: every partition reached that end;
* ``limit``: ``limit`` records matched (at most :data:`MAX_LIMIT`);
* ``max_scan``: ``max_scan`` records were read (at most :data:`MAX_SCAN`);
* ``time_budget``: ``time_budget_ms`` passed (at most :data:`MAX_TIME_BUDGET_MS`).

The answer says which one, how many records were scanned, and for each partition the offset to
resume from, so the page can offer "continue". It never loads a whole topic: memory is bounded by
the consumer's fetch sizes plus ``limit`` decoded records.

Start positions (``start``):

* ``beginning``: each partition's log start offset;
* ``end``: the newest records: ``limit`` before each partition's end (not before its start);
* ``offset``: the given offset; on one partition an offset outside [log start, log end] is an
  error (:class:`BrowseError`, HTTP 400, naming the partition's range); over all partitions it
  is raised to each log start, partitions whose end is at or before it are skipped, and it is an
  error only when that leaves none;
* ``timestamp``: the first offset whose timestamp is at or after ``timestamp_ms`` (ListOffsets);
  a partition with no such record contributes nothing.

Matches over several partitions are returned in timestamp order (then partition, offset).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from zurau.client.admin import EARLIEST, LATEST, AdminClient, OffsetInfo
from zurau.client.consumer import Consumer
from zurau.client.types import ConsumerRecord, TopicPartition
from zurau.console.filter_expr import CompiledFilter, compile_filter
from zurau.protocol.errors import KafkaError, UnknownTopicOrPartitionError
from zurau.schema_formats.record_decoding import MODES, RecordDecoder, header_text

MAX_LIMIT = 500
MAX_SCAN = 5_000_000
MAX_TIME_BUDGET_MS = 120_000
STARTS = ("beginning", "end", "offset", "timestamp")


class BrowseError(ValueError):
    """A request the browser refuses (HTTP 400 unless ``status`` says otherwise)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class BrowseRequest:
    topic: str
    partition: int | None = None  # None: every partition
    start: str = "beginning"
    offset: int | None = None
    timestamp_ms: int | None = None
    limit: int = 50
    max_scan: int = 100_000
    time_budget_ms: int = 10_000
    key_mode: str = "auto"
    value_mode: str = "auto"
    filter: str | None = None

    def check(self) -> None:
        if self.start not in STARTS:
            raise BrowseError(f"start must be one of {', '.join(STARTS)}, not {self.start!r}")
        if self.start == "offset" and self.offset is None:
            raise BrowseError("start=offset needs an offset")
        if self.start == "timestamp" and self.timestamp_ms is None:
            raise BrowseError("start=timestamp needs a timestamp")
        if self.offset is not None and self.offset < 0:
            raise BrowseError(f"the offset must not be negative, got {self.offset}")
        if self.partition is not None and self.partition < 0:
            raise BrowseError(f"the partition must not be negative, got {self.partition}")
        for name, value, cap in (
            ("limit", self.limit, MAX_LIMIT),
            ("max_scan", self.max_scan, MAX_SCAN),
            ("time_budget_ms", self.time_budget_ms, MAX_TIME_BUDGET_MS),
        ):
            if not 1 <= value <= cap:
                raise BrowseError(f"{name} must be between 1 and {cap}, got {value}")
        for name, mode in (("key", self.key_mode), ("value", self.value_mode)):
            if mode not in MODES:
                raise BrowseError(f"the {name} decoding must be one of {', '.join(MODES)}, not {mode!r}")


def _offset(result: OffsetInfo | KafkaError | None, tp: TopicPartition) -> int:
    if isinstance(result, KafkaError):
        raise result
    if result is None:
        raise UnknownTopicOrPartitionError(f"no offsets for {tp.topic}-{tp.partition}")
    return result.offset


class MessageBrowser:
    """Runs browses over a shared :class:`AdminClient`'s cluster connections."""

    def __init__(self, admin: AdminClient, decoder: RecordDecoder) -> None:
        self.admin = admin
        self.decoder = decoder

    async def _ranges(
        self, req: BrowseRequest
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(start, scan-from, end) offsets of each partition to read."""
        meta = await self.admin.cluster.topic(req.topic, refresh=True)
        known = sorted(p.partition for p in meta.partitions)
        if req.partition is not None and req.partition not in known:
            raise UnknownTopicOrPartitionError(
                f"topic '{req.topic}' has no partition {req.partition} (it has {len(known)})"
            )
        parts = [req.partition] if req.partition is not None else known
        tps = [TopicPartition(req.topic, p) for p in parts]
        starts_r = await self.admin.list_offsets(dict.fromkeys(tps, EARLIEST))
        ends_r = await self.admin.list_offsets(dict.fromkeys(tps, LATEST))
        starts = {tp: _offset(starts_r.get(tp), tp) for tp in tps}
        ends = {tp: _offset(ends_r.get(tp), tp) for tp in tps}
        begin: dict[TopicPartition, int] = {}
        if req.start == "beginning":
            begin = dict(starts)
        elif req.start == "end":
            begin = {tp: max(starts[tp], ends[tp] - req.limit) for tp in tps}
        elif req.start == "offset":
            assert req.offset is not None
            if req.partition is not None:
                tp = tps[0]
                if not starts[tp] <= req.offset <= ends[tp]:
                    raise BrowseError(
                        f"offset {req.offset} is beyond the log of {tp.topic}-{tp.partition}, which holds "
                        f"offsets {starts[tp]} to {ends[tp] - 1}"
                        + (" (empty)" if starts[tp] == ends[tp] else "")
                        + f"; its next offset is {ends[tp]}"
                    )
                begin = {tp: req.offset}
            else:
                begin = {tp: max(req.offset, starts[tp]) for tp in tps if ends[tp] > req.offset}
                if not begin:
                    top = max(ends.values(), default=0)
                    raise BrowseError(
                        f"offset {req.offset} is beyond the log of every partition of '{req.topic}' "
                        f"(the highest log end offset is {top})"
                    )
        else:
            assert req.timestamp_ms is not None
            found = await self.admin.list_offsets(dict.fromkeys(tps, req.timestamp_ms))
            for tp in tps:
                off = _offset(found.get(tp), tp)
                begin[tp] = off if off >= 0 else ends[tp]
        return starts, begin, ends

    async def browse(self, req: BrowseRequest) -> dict[str, Any]:
        req.check()
        flt: CompiledFilter | None = compile_filter(req.filter) if req.filter and req.filter.strip() else None
        started = time.monotonic()
        deadline = started + req.time_budget_ms / 1000
        starts, begin, ends = await self._ranges(req)
        positions = dict(begin)
        todo = [tp for tp, off in begin.items() if off < ends[tp]]
        matches: list[ConsumerRecord] = []
        scanned = 0
        reason = "end"
        needs = flt.names if flt is not None else frozenset()
        env: dict[str, Any] = {}
        if todo:
            consumer = Consumer(
                self.admin.cluster,
                auto_offset_reset="none",
                fetch_max_wait_ms=100,
                max_partition_fetch_bytes=4 * 1024 * 1024,
                fetch_max_bytes=16 * 1024 * 1024,
            )
            try:
                consumer.assign(todo)
                for tp in todo:
                    consumer.seek(tp, begin[tp])
                active = set(todo)
                seen_hw: set[TopicPartition] = set()
                while active:
                    now = time.monotonic()
                    if now >= deadline:
                        reason = "time_budget"
                        break
                    if scanned >= req.max_scan:
                        reason = "max_scan"
                        break
                    if len(matches) >= req.limit:
                        reason = "limit"
                        break
                    batch = await consumer.getmany(
                        timeout_ms=min(500.0, (deadline - now) * 1000), max_records=req.max_scan - scanned
                    )
                    finished: list[TopicPartition] = []
                    for tp in batch:
                        if tp not in seen_hw:
                            # A broker whose ListOffsets lags its log (Tansu 0.6 answers with the
                            # last batch's base offset) is read up to its first fetch's high watermark.
                            seen_hw.add(tp)
                            hw = consumer.high_watermark(tp)
                            if hw is not None and hw > ends[tp]:
                                ends[tp] = hw
                    for tp, records in batch.items():
                        end = ends[tp]
                        for r in records:
                            if r.offset >= end:
                                finished.append(tp)
                                break
                            if len(matches) >= req.limit:
                                break  # the rest of the batch is not scanned: resume_at stays here
                            positions[tp] = r.offset + 1
                            scanned += 1
                            if flt is None:
                                matches.append(r)
                                continue
                            if self._needs_schema(r, needs, req):
                                await self.decoder.prepare(r.key, req.key_mode)
                                await self.decoder.prepare(r.value, req.value_mode)
                            if flt.matches(self._env(env, r, needs, req)):
                                matches.append(r)
                        else:
                            if positions[tp] >= end:
                                finished.append(tp)
                    if len(matches) >= req.limit:
                        if any(positions[tp] < ends[tp] for tp in begin):
                            reason = "limit"
                        break
                    for tp in active.difference(finished):
                        # offsets missing at the end (compaction, transaction markers) end a partition
                        if await consumer.position(tp) >= ends[tp]:
                            positions[tp] = ends[tp]
                            finished.append(tp)
                    if finished:
                        active -= set(finished)
                        consumer.assign(sorted(active))
            finally:
                await consumer.close()
        if len(begin) > 1:
            matches.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
        else:
            matches.sort(key=lambda r: r.offset)
        shown = [await self.record_json(r, req.key_mode, req.value_mode) for r in matches]
        return {
            "topic": req.topic,
            "records": shown,
            "scanned": scanned,
            "matched": len(matches),
            "stopped": reason,
            "elapsed_ms": round((time.monotonic() - started) * 1000),
            "limits": {"limit": req.limit, "max_scan": req.max_scan, "time_budget_ms": req.time_budget_ms},
            "filter": flt.source if flt is not None else None,
            "filter_errors": flt.errors if flt is not None else 0,
            "filter_first_error": flt.first_error if flt is not None else None,
            "partitions": [
                {
                    "partition": tp.partition,
                    "log_start": starts[tp],
                    "log_end": ends[tp],
                    "from": begin.get(tp, ends[tp]),
                    "resume_at": positions.get(tp, ends[tp]),
                }
                for tp in sorted(starts)
            ],
        }

    def _needs_schema(self, r: ConsumerRecord, needs: frozenset[str], req: BrowseRequest) -> bool:
        """Whether the filter reads a key or value in the registry's wire format (whose schema
        :meth:`RecordDecoder.prepare` may have to fetch first)."""
        if self.decoder.registry is None:
            return False
        return ("key" in needs and r.key is not None and r.key[:1] == b"\x00") or (
            "value" in needs and r.value is not None and r.value[:1] == b"\x00"
        )

    def _env(self, env: dict[str, Any], r: ConsumerRecord, needs: frozenset[str], req: BrowseRequest) -> dict[str, Any]:
        """``env`` (one dict reused for every record) filled with the fields the filter reads."""
        decode = self.decoder.decode
        for name in needs:
            if name == "key":
                env["key"] = decode(r.key, req.key_mode).data
            elif name == "value":
                env["value"] = decode(r.value, req.value_mode).data
            elif name == "headers":
                env["headers"] = {k: header_text(v) for k, v in r.headers}
            elif name == "offset":
                env["offset"] = r.offset
            elif name == "partition":
                env["partition"] = r.partition
            elif name == "timestamp":
                env["timestamp"] = r.timestamp
            else:
                env["topic"] = r.topic
        return env

    async def record_json(self, r: ConsumerRecord, key_mode: str, value_mode: str) -> dict[str, Any]:
        await self.decoder.prepare(r.key, key_mode)
        await self.decoder.prepare(r.value, value_mode)
        return {
            "partition": r.partition,
            "offset": r.offset,
            "timestamp": r.timestamp,
            "timestamp_type": "LogAppendTime" if r.timestamp_type == 1 else "CreateTime",
            "key": self.decoder.decode(r.key, key_mode).to_json(),
            "value": self.decoder.decode(r.value, value_mode).to_json(),
            "headers": [{"key": k, "value": header_text(v)} for k, v in r.headers],
            "size": len(r.key or b"") + len(r.value or b""),
        }


__all__ = ["MAX_LIMIT", "MAX_SCAN", "MAX_TIME_BUDGET_MS", "STARTS", "BrowseError", "BrowseRequest", "MessageBrowser"]
