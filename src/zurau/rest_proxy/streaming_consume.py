"""Streaming consume: a topic's records sent to an HTTP client as they arrive (Zurau's own
endpoint; Confluent's proxy has none), one JSON document per line.

``GET /v3/clusters/{cluster_id}/topics/{topic_name}/records:stream`` answers ``200`` with
``Content-Type: application/x-ndjson`` over chunked transfer encoding, and keeps the response
open: each record is one line::

    {"topic": "t", "partition": 0, "offset": 42, "timestamp": 1718000000000,
     "timestamp_type": "CREATE_TIME", "key": ..., "value": ...,
     "headers": [{"name": "h", "value": "<base64>"}]}

``key`` and ``value`` are in the query's ``format`` as in the v2 consumer API
(:mod:`.record_deserialization`: ``binary`` (default, base64), ``json``, ``avro``,
``jsonschema``, ``protobuf``). Where to start:

* ``group=<id>``: the stream is one member of consumer group ``<id>`` subscribed to the topic,
  starting at the group's committed offsets (else ``auto.offset.reset=earliest|latest``,
  default ``latest``); it **commits as it goes**: the offsets of the records of each fetched
  batch are committed once all of the batch's lines were handed to the connection (so a client
  that drops the connection mid-batch gets that batch again from the group: at-least-once;
  lines already in the TCP buffers when the client vanished are committed all the same);
* otherwise no group and no commits: ``partition=<n>`` (default: every partition) with
  ``offset=<n>`` (one partition only; at most the partition's end offset; below its start the
  stream begins at the start), or ``from=beginning|end|timestamp`` (default ``end``: only new
  records) with ``timestamp=<ms since the epoch>`` (the first record at or after it; the end
  when there is none).

``limit=<n>`` ends the stream (the response completes) after ``n`` records. Mistakes answer
before streaming, with Confluent's error body: an unknown cluster, topic (40401) or partition
(40402) 404, a bad parameter 400, a format needing a schema registry when none is configured
422/42206. A record that cannot be decoded in the asked format, or a cluster failure after the
stream began, ends the stream with one last line ``{"error_code": ..., "message": ...}``.

Why NDJSON rather than Server-Sent Events: records are already JSON documents, and NDJSON is just
them with newlines, readable by ``curl | jq``, ``requests.iter_lines()`` or any streaming JSON
reader with no framing code; SSE wraps each line in ``data:`` fields meant for browsers'
``EventSource``, which can only send GET with no custom headers (so no ``Authorization`` for the
proxy's basic authentication) and reconnects by itself, re-reading records from a position the
proxy does not control. Streams here end by design (``limit``, errors), which SSE clients treat
as a failure to retry.

Flow control and memory: the stream fetches only when the previous batch was written to the
connection, and a write blocks while the client is not reading (the TCP window is full and the
server's write buffer is past its high-water mark), so a slow reader slows the fetching: the
proxy holds at most one fetch answer (:data:`STREAM_FETCH_MAX_BYTES`, or one batch larger than
it) and one chunk of lines (:data:`CHUNK_BYTES`) per stream, never reading ahead further.

Invariants: when the client goes away (detected even while no record arrives) or the proxy
stops, the stream's consumer is closed (a group member leaves its group) and no task of the
stream is left; every open stream is in the ``record_streams`` service, whose ``close()`` closes
them all.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from zurau.client.config import ClientConfig
from zurau.client.consumer import Consumer
from zurau.client.errors import ClientError
from zurau.client.types import ConsumerRecord, TopicPartition
from zurau.protocol.errors import KafkaError, for_code
from zurau.rest_proxy.errors import (
    PARTITION_NOT_FOUND,
    TOPIC_NOT_FOUND,
    RestProxyError,
    bad_request,
    endpoint,
    from_kafka_error,
    not_found,
    to_rest_error,
)
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.record_deserialization import RecordDeserializer, deserializer, parse_format
from zurau.rest_proxy.request_bodies import query_int

log = logging.getLogger("zurau.rest_proxy.streams")

SERVICE = "record_streams"
STREAM_PATH = "/v3/clusters/{cluster_id}/topics/{topic_name}/records:stream"
NDJSON = "application/x-ndjson"
STREAM_FETCH_MAX_BYTES = 1_048_576
"""Most bytes one fetch of a stream asks for (per partition and in all)."""
CHUNK_BYTES = 65_536
"""Lines are sent in chunks of about this many bytes."""
POLL_MS = 1_000
_TIMESTAMP_TYPES = ("CREATE_TIME", "LOG_APPEND_TIME")


class RecordStream:
    """One open stream: its consumer, what it sent, and how it ends (see the module docstring)."""

    def __init__(
        self, consumer: Consumer, topic: str, fmt: str, formats: RecordDeserializer, *, commits: bool, limit: int | None
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.format = fmt
        self.formats = formats
        self.commits = commits
        self.limit = limit
        self.records_fetched = 0
        self.records_sent = 0
        self.bytes_sent = 0
        self.closed = False
        self._close_lock = asyncio.Lock()

    async def lines(self) -> AsyncGenerator[bytes, None]:
        """The response body. Never awaits in a ``finally``: cleanup is :meth:`close`'s."""
        while not self.closed:
            try:
                batch = await self.consumer.getmany(timeout_ms=POLL_MS)
            except Exception as e:  # noqa: BLE001 - the stream ends with the error's line
                if not self.closed:
                    yield _error_line(to_rest_error(e))
                return
            records = [r for recs in batch.values() for r in recs]
            self.records_fetched += len(records)
            chunk = bytearray()
            in_chunk = 0
            sent: dict[TopicPartition, int] = {}  # next offsets after the records written
            for rec in records:
                try:
                    line = await self._line(rec)
                except RestProxyError as e:
                    if chunk:
                        yield bytes(chunk)
                        self._count(len(chunk), in_chunk)
                    await self._commit(sent)
                    yield _error_line(e)
                    return
                chunk += line
                in_chunk += 1
                sent[TopicPartition(rec.topic, rec.partition)] = rec.offset + 1
                done = self.limit is not None and self.records_sent + in_chunk >= self.limit
                if len(chunk) >= CHUNK_BYTES or done:
                    yield bytes(chunk)  # resumes once the chunk was written to the connection
                    self._count(len(chunk), in_chunk)
                    chunk = bytearray()
                    in_chunk = 0
                    if done:
                        await self._commit(sent)
                        return
            if chunk:
                yield bytes(chunk)
                self._count(len(chunk), in_chunk)
            await self._commit(sent)

    def _count(self, size: int, records: int) -> None:
        self.records_sent += records
        self.bytes_sent += size

    async def _line(self, rec: ConsumerRecord) -> bytes:
        where = f"{rec.topic}-{rec.partition}@{rec.offset}"
        key, _ = await self.formats.to_json(rec.key, self.format, f"the key of {where}")
        value, _ = await self.formats.to_json(rec.value, self.format, f"the value of {where}")
        doc: dict[str, Any] = {
            "topic": rec.topic,
            "partition": rec.partition,
            "offset": rec.offset,
            "timestamp": rec.timestamp,
            "timestamp_type": _TIMESTAMP_TYPES[1 if rec.timestamp_type == 1 else 0],
            "key": key,
            "value": value,
            "headers": [
                {"name": name, "value": None if v is None else base64.b64encode(v).decode("ascii")}
                for name, v in rec.headers
            ],
        }
        return json.dumps(doc, separators=(",", ":")).encode() + b"\n"

    async def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        """Commit what was written; a failed commit (a rebalance) is retried by the next batch's
        commit, and the group re-delivers what stayed uncommitted."""
        if self.commits and offsets and not self.closed:
            try:
                await self.consumer.commit(offsets)
            except (ClientError, KafkaError, OSError) as e:
                log.info("stream commit of group %s failed: %s", self.consumer.group_id, e)

    async def close(self) -> None:
        """Close the consumer (leaving the group); idempotent."""
        async with self._close_lock:
            if self.closed:
                return
            self.closed = True
            try:
                await self.consumer.close()
            except Exception as e:  # noqa: BLE001 - closing must go on
                log.debug("closing the stream's consumer: %s", e)


def _error_line(e: RestProxyError) -> bytes:
    return json.dumps(e.body()).encode() + b"\n"


class RecordStreams:
    """Every open stream (the ``record_streams`` service)."""

    def __init__(self) -> None:
        self.active: set[RecordStream] = set()

    async def close(self) -> None:
        streams, self.active = list(self.active), set()
        await asyncio.gather(*(s.close() for s in streams), return_exceptions=True)


class RecordStreamResponse(StreamingResponse):
    """Streams ``stream``'s lines; however the response ends (done, error, client gone,
    cancelled), the stream is closed under a shield, so cancellation cannot skip it."""

    def __init__(self, stream: RecordStream, streams: RecordStreams) -> None:
        self.stream = stream
        self.streams = streams
        self._lines = stream.lines()
        super().__init__(
            self._lines,
            media_type=NDJSON,
            headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):
                    await self._lines.aclose()
                await self.stream.close()
                self.streams.active.discard(self.stream)


async def _open(api: ProxyApi, request: Request, formats: RecordDeserializer) -> RecordStream:
    """A stream positioned as the query asks (see the module docstring); 4xx before anything opens."""
    await api.check_cluster(request)
    topic = request.path_params["topic_name"]
    q = request.query_params
    fmt = parse_format(q.get("format", "binary"))
    formats.check_format(fmt)
    group = q.get("group")
    limit = query_int(request, "limit", minimum=1)
    partition = query_int(request, "partition", "int32", minimum=0)
    offset = query_int(request, "offset", minimum=0)
    start = q.get("from")
    timestamp = query_int(request, "timestamp", minimum=0)
    reset = q.get("auto.offset.reset", "latest").lower()
    if group is not None:
        if not group:
            raise bad_request("group must not be empty")
        if partition is not None or offset is not None or start is not None or timestamp is not None:
            raise bad_request("a group stream starts at the group's offsets: partition, offset, from and timestamp are not allowed")
        if reset not in ("earliest", "latest"):
            raise bad_request("auto.offset.reset must be earliest or latest")
    else:
        if offset is not None and (partition is None or start is not None):
            raise bad_request("offset needs partition, and excludes from")
        if start is not None and start not in ("beginning", "end", "timestamp"):
            raise bad_request("from must be beginning, end or timestamp")
        if (start == "timestamp") != (timestamp is not None):
            raise bad_request("from=timestamp goes with timestamp=<ms since the epoch>")
    clients = await api.clients(request)
    meta = (await clients.admin.topic_metadata([topic]))[topic]
    if meta.error_code in (29, 31):
        raise from_kafka_error(for_code(meta.error_code)(f"not authorized to read topic {topic}"))
    if meta.error_code:
        raise not_found("Topic not found.", TOPIC_NOT_FOUND)
    partitions = sorted(p.partition for p in meta.partitions)
    if partition is not None and partition not in partitions:
        raise not_found("Partition not found.", PARTITION_NOT_FOUND)
    consumer = _consumer(clients.consumer_config, group, reset)
    stream = RecordStream(consumer, topic, fmt, formats, commits=group is not None, limit=limit)
    try:
        await consumer.start()
        if group is not None:
            await consumer.subscribe([topic])
        else:
            await _position(consumer, topic, partitions if partition is None else [partition], offset, start, timestamp)
    except BaseException:
        await stream.close()
        raise
    return stream


def _consumer(config: ClientConfig, group: str | None, reset: str) -> Consumer:
    return Consumer(
        config,
        group_id=group,
        auto_offset_reset=reset if group is not None else "earliest",
        fetch_max_bytes=STREAM_FETCH_MAX_BYTES,
        max_partition_fetch_bytes=STREAM_FETCH_MAX_BYTES,
    )


async def _position(
    consumer: Consumer, topic: str, partitions: list[int], offset: int | None, start: str | None, timestamp: int | None
) -> None:
    tps = [TopicPartition(topic, p) for p in partitions]
    consumer.assign(tps)
    if offset is not None:
        tp = tps[0]
        end = (await consumer.admin.list_offsets({tp: -1}))[tp]
        if isinstance(end, KafkaError):
            raise end
        if offset > end.offset:
            raise bad_request(f"offset {offset} is beyond the end of {topic}-{tp.partition} ({end.offset})")
        consumer.seek(tp, offset)  # below the log start: the fetch resets to the start (earliest)
    elif start == "beginning":
        await consumer.seek_to_beginning(*tps)
    elif start == "timestamp":
        assert timestamp is not None
        found = await consumer.offsets_for_times({tp: timestamp for tp in tps})
        late = [tp for tp, info in found.items() if info is None]
        if late:
            await consumer.seek_to_end(*late)
        for tp, info in found.items():
            if info is not None:
                consumer.seek(tp, info.offset)
    else:
        await consumer.seek_to_end(*tps)


def routes(api: ProxyApi) -> list[BaseRoute]:
    found = api.services.get(SERVICE)
    streams = found if isinstance(found, RecordStreams) else RecordStreams()
    api.services[SERVICE] = streams
    formats = deserializer(api.services, api.config.schema_registry_url)

    @endpoint
    async def stream_records(request: Request) -> StreamingResponse:
        stream = await _open(api, request, formats)
        streams.active.add(stream)
        return RecordStreamResponse(stream, streams)

    return [Route(STREAM_PATH, stream_records, methods=["GET"])]
