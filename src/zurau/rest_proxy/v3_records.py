"""Producing records with the v3 API (Confluent's ``ProduceAction`` and ``ProduceBatchAction``).

* ``POST /v3/clusters/{cluster_id}/topics/{topic_name}/records``: the body is one
  ``ProduceRequest`` (``partition_id``, ``headers`` of ``name`` and base64 ``value``, ``key``,
  ``value``, ``timestamp``) or several concatenated. Each gets a delivery report, in order:
  ``{"error_code": 200, "cluster_id", "topic_name", "partition_id", "offset", "timestamp",
  "key": {"type", "size", ...}, "value": {...}}`` or ``{"error_code", "message"}``.

  - A request with a ``Content-Length`` holding one record is answered like any request: its
    report with 200, or its error with the error's HTTP status (400, 404 40401/40402, 413, 422).
  - Streaming mode (``Transfer-Encoding: chunked``, or several records): the answer is 200 and a
    stream of concatenated reports, each written as soon as its record is acknowledged (or
    refused), in the order the records came. The request body is split incrementally
    (:class:`ConcatenatedJson`): a record that is valid JSON but not a valid ``ProduceRequest``
    gets an error report and the stream goes on, as Confluent's does; text that is not JSON ends
    the stream with a 400 report (the parser cannot tell where the next record would start), as
    Confluent's does. A record's JSON text longer than twice ``producer.max.request.size`` is
    never buffered: it is skipped and answered 413, and the stream goes on; the serialized record
    itself is held to ``producer.max.request.size`` by the producer (413).

* ``POST .../records:batch``: ``{"entries": [{"id", ...ProduceRequest}]}``, at most
  ``produce.batch.maximum.entries`` (10; 1-50) entries with distinct ids (1-80 characters of
  ``[0-9a-zA-Z-_]``), else 422/42208; answered 207 with ``successes`` and ``failures``.

Invariants: records are serialized and handed to the producer one after the other in request
order (so records for one partition are written in that order) and only their acknowledgements
are awaited concurrently (at most :data:`MAX_IN_FLIGHT` per stream, which bounds the memory a
stream holds); a client that goes away stops the reading, and records already handed to the
producer are still delivered; no task outlives its request. Unknown topics are refused (404
40401) before anything is read; the cluster id is checked (404).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from zurau.client.producer import Producer
from zurau.client.types import RecordMetadata
from zurau.edge_requests import BadInput, parse_json, read_body
from zurau.rest_proxy.errors import RestProxyError, bad_request, endpoint, to_rest_error
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.record_serialization import (
    INVALID_PAYLOAD,
    PRODUCE_BATCH,
    RecordSerializer,
    Serialized,
    format_timestamp,
    parse_timestamp,
    partition_param,
    serializer_for,
    unprocessable,
)
from zurau.rest_proxy.request_bodies import read_json

MAX_IN_FLIGHT = 512
"""Records of one stream handed to the producer and not yet reported, at most."""
BATCH_ID = re.compile(r"^[0-9a-zA-Z_-]{1,80}$")
UNSUPPORTED_MEDIA_TYPE = RestProxyError(415, 415, "HTTP 415 Unsupported Media Type")

Item = Any  # a parsed JSON value, or a RestProxyError for text that could not be one


# ---------------------------------------------------------------------------- concatenated JSON

_NOT_SPACE = re.compile(r"[^ \t\r\n]")
_IN_STRING = re.compile(r'["\\]')
_STRUCTURE = re.compile(r'[{}\[\]"]')


class ConcatenatedJson:
    """Splits a byte stream of concatenated JSON objects/arrays into values, chunk by chunk.

    A scanner follows strings and brackets over the text received so far (regular expressions
    jump over string contents at C speed) to find where each value ends; only then is the value
    parsed (:func:`~zurau.edge_requests.parse_json`, with its nesting limit). A value longer than
    ``limit`` characters is not kept: the scanner goes on through it and it comes out as a 413
    error. Text that cannot start a value, a value that is not valid JSON, invalid UTF-8 or a body
    that ends inside a value come out as a 400 error after which :attr:`failed` is set and
    nothing more is read."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.failed = False
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._buf = ""
        self._start = 0  # where the current value starts in _buf
        self._pos = 0  # how far the scanner got
        self._depth = 0
        self._in_string = False
        self._skipping = False  # the current value is over the limit and is being dropped

    def feed(self, chunk: bytes) -> list[Item]:
        if self.failed:
            return []
        try:
            text = self._utf8.decode(chunk)
        except UnicodeDecodeError as e:
            return [self._fail(f"the request body is not UTF-8: {e}")]
        self._buf += text
        out = self._scan()
        if self._start:
            self._buf = self._buf[self._start :]
            self._pos -= self._start
            self._start = 0
        return out

    def finish(self) -> list[Item]:
        """The body ended: what is left is an error, if anything."""
        if self.failed:
            return []
        try:
            tail = self._utf8.decode(b"", final=True)
        except UnicodeDecodeError as e:
            return [self._fail(f"the request body is not UTF-8: {e}")]
        out = []
        if tail:
            self._buf += tail
            out = self._scan()
        if self._depth or self._in_string or _NOT_SPACE.search(self._buf, self._pos):
            if self._skipping:
                self.failed = True
                out.append(_too_large(self.limit))
            else:
                out.append(self._fail("the request body ends inside a record (unexpected end of input)"))
        return out

    def _fail(self, message: str) -> RestProxyError:
        self.failed = True
        self._buf = ""
        return bad_request(f"Error processing JSON: {message}")

    def _scan(self) -> list[Item]:
        out: list[Item] = []
        buf = self._buf
        while not self.failed:
            if self._depth == 0:
                m = _NOT_SPACE.search(buf, self._pos)
                if m is None:
                    self._start = self._pos = len(buf)
                    return out
                c = m.group()
                if c not in "{[":
                    out.append(self._fail(f"a record must be a JSON object, found {buf[m.start():m.start() + 20]!r}"))
                    return out
                self._start, self._pos, self._depth = m.start(), m.end(), 1
            if not self._walk(buf):
                if len(buf) - self._start > self.limit or self._skipping:
                    self._skipping = True  # drop what is buffered of this value; keep scanning
                    self._buf = buf = buf[self._pos :]
                    self._start = self._pos = 0
                return out
            if self._skipping or self._pos - self._start > self.limit:
                self._skipping = False
                out.append(_too_large(self.limit))
            else:
                try:
                    out.append(parse_json(buf[self._start : self._pos].encode("utf-8", "surrogatepass")))
                except BadInput as e:
                    out.append(self._fail(e.message))
                    return out
            self._start = self._pos
        return out

    def _walk(self, buf: str) -> bool:
        """Scan on from ``_pos``; True when the current value ends (``_pos`` just after it)."""
        pos, depth, in_string = self._pos, self._depth, self._in_string
        try:
            while depth:
                if in_string:
                    m = _IN_STRING.search(buf, pos)
                    if m is None:
                        pos = len(buf)
                        return False
                    if m.group() == "\\":
                        if m.end() >= len(buf):
                            pos = m.start()
                            return False
                        pos = m.end() + 1
                        continue
                    in_string, pos = False, m.end()
                    continue
                m = _STRUCTURE.search(buf, pos)
                if m is None:
                    pos = len(buf)
                    return False
                c, pos = m.group(), m.end()
                if c == '"':
                    in_string = True
                elif c in "{[":
                    depth += 1
                else:
                    depth -= 1
            return True
        finally:
            self._pos, self._depth, self._in_string = pos, depth, in_string


def _too_large(limit: int) -> RestProxyError:
    return RestProxyError(413, 413, f"The record is larger than {limit} bytes of JSON, which this proxy does not take in one record.")


# ---------------------------------------------------------------------------- one record


@dataclass
class _Outgoing:
    partition: int | None
    headers: list[tuple[str, bytes | None]]
    timestamp_ms: int | None
    key: Serialized
    value: Serialized


def parse_headers(raw: Any) -> list[tuple[str, bytes | None]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("'headers' must be an array of {\"name\": ..., \"value\": <base64>}")
    out: list[tuple[str, bytes | None]] = []
    for i, h in enumerate(raw):
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise bad_request(f"headers[{i}] must be an object with a string 'name'")
        value = h.get("value")
        if value is None:
            out.append((h["name"], None))
            continue
        if not isinstance(value, str):
            raise bad_request(f"headers[{i}].value must be a base64 string")
        try:
            out.append((h["name"], base64.b64decode(value, validate=True)))
        except (binascii.Error, ValueError):
            raise bad_request(f"headers[{i}].value is not valid base64: {value[:40]!r}") from None
    return out


class _Producing:
    """Producing to one topic for one request."""

    def __init__(self, cluster_id: str, topic: str, partitions: int, producer: Producer, serializer: RecordSerializer) -> None:
        self.cluster_id = cluster_id
        self.topic = topic
        self.partitions = partitions
        self.producer = producer
        self.serializer = serializer

    async def prepare(self, obj: Any) -> _Outgoing:
        if not isinstance(obj, dict):
            raise bad_request(f"a record must be a JSON object, not {type(obj).__name__}")
        partition = partition_param(obj.get("partition_id"))
        if partition is not None and partition >= self.partitions:
            raise RestProxyError(404, 40402, f"Partition not found: topic {self.topic} has no partition {partition}.")
        headers = parse_headers(obj.get("headers"))
        timestamp = parse_timestamp(obj.get("timestamp"))
        key = await self.serializer.serialize(self.topic, obj.get("key"), True)
        value = await self.serializer.serialize(self.topic, obj.get("value"), False)
        return _Outgoing(partition, headers, timestamp, key, value)

    async def send(self, out: _Outgoing) -> asyncio.Future[RecordMetadata]:
        fut = await self.producer.send(
            self.topic, out.value.data, out.key.data, headers=out.headers, partition=out.partition, timestamp_ms=out.timestamp_ms
        )
        fut.add_done_callback(_observe)
        return fut

    def report(self, out: _Outgoing, md: RecordMetadata) -> dict[str, Any]:
        body: dict[str, Any] = {
            "error_code": 200,
            "cluster_id": self.cluster_id,
            "topic_name": self.topic,
            "partition_id": md.partition,
            "offset": md.offset,
            "timestamp": format_timestamp(md.timestamp),
        }
        for name, side in (("key", out.key), ("value", out.value)):
            part = side.report()
            if part is not None:
                body[name] = part
        return body

    async def produce(self, obj: Any) -> dict[str, Any]:
        out = await self.prepare(obj)
        fut = await self.send(out)
        return self.report(out, await fut)

    async def reports(self, items: AsyncIterator[Item]) -> AsyncIterator[bytes]:
        """The stream of delivery reports for ``items`` (see the module docstring)."""
        queue: asyncio.Queue[tuple[_Outgoing, asyncio.Future[RecordMetadata]] | dict[str, Any] | None] = asyncio.Queue(MAX_IN_FLIGHT)

        async def hand_over() -> None:
            try:
                async for item in items:
                    if isinstance(item, RestProxyError):
                        await queue.put(item.body())
                        continue
                    try:
                        out = await self.prepare(item)
                        await queue.put((out, await self.send(out)))
                    except Exception as e:  # noqa: BLE001 - each record gets its own report
                        await queue.put(to_rest_error(e).body())
            finally:
                await queue.put(None)

        feeder = asyncio.get_running_loop().create_task(hand_over(), name="zurau-rest-produce-reader")
        try:
            while True:
                entry = await queue.get()
                if entry is None:
                    break
                if isinstance(entry, dict):
                    report = entry
                else:
                    out, fut = entry
                    try:
                        report = self.report(out, await fut)
                    except Exception as e:  # noqa: BLE001 - a failed delivery is a report
                        report = to_rest_error(e).body()
                yield json.dumps(report).encode()
            await feeder
        finally:
            if not feeder.done():
                feeder.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await feeder


def _observe(fut: asyncio.Future[Any]) -> None:
    """Mark a delivery's outcome as seen (a stream cut short never awaits it)."""
    if not fut.cancelled():
        fut.exception()


class ReportStream(Response):
    """A 200 answer whose body is written chunk by chunk while the request body is still being
    read. Starlette's StreamingResponse cannot be used: under ASGI 2.3 it listens for the
    disconnect by calling ``receive``, which would take request body chunks from the reader."""

    media_type = "application/json"

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.chunks = chunks
        self.status_code = 200
        self.background = None
        self.init_headers(None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks = self.chunks
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()


async def _body_items(request: Request, splitter: ConcatenatedJson) -> AsyncIterator[Item]:
    try:
        async for chunk in request.stream():
            for item in splitter.feed(chunk):
                yield item
            if splitter.failed:
                return
    except ClientDisconnect:
        return
    for item in splitter.finish():
        yield item


async def _listed(items: Iterable[Item]) -> AsyncIterator[Item]:
    for item in items:
        yield item


# ---------------------------------------------------------------------------- handlers


def check_json_content_type(request: Request) -> None:
    """v3 bodies are ``application/json`` (415 otherwise; a request without one is taken as JSON)."""
    raw = request.headers.get("content-type")
    if raw is not None and raw.split(";")[0].strip().lower() != "application/json":
        raise UNSUPPORTED_MEDIA_TYPE


def routes(api: ProxyApi) -> list[BaseRoute]:
    serializer = serializer_for(api)

    async def producing(request: Request) -> _Producing:
        cluster_id = await api.check_cluster(request)
        check_json_content_type(request)
        topic = request.path_params["topic_name"]
        clients = await api.clients(request)
        metadata = await clients.admin.cluster.topic(topic)  # UnknownTopicOrPartition: 404 40401
        producer = await clients.producer()
        return _Producing(cluster_id, topic, len(metadata.partitions), producer, serializer)

    @endpoint
    async def produce(request: Request) -> Response:
        p = await producing(request)
        if "chunked" in request.headers.get("transfer-encoding", "").lower():  # streaming mode
            limit = max(2 * p.producer.max_request_size, 65_536)
            return ReportStream(p.reports(_body_items(request, ConcatenatedJson(limit))))
        body = await read_body(request, api.config.max_request_bytes)
        splitter = ConcatenatedJson(api.config.max_request_bytes)
        items = splitter.feed(body) + splitter.finish()
        if not items:
            raise unprocessable(INVALID_PAYLOAD, "Payload error. Request body is empty. Data is required.")
        if len(items) == 1:
            if isinstance(items[0], RestProxyError):
                raise items[0]
            return JSONResponse(await p.produce(items[0]))
        return ReportStream(p.reports(_listed(items)))

    @endpoint
    async def produce_batch(request: Request) -> Response:
        p = await producing(request)
        doc = await read_json(
            api, request, if_empty=lambda: unprocessable(PRODUCE_BATCH, "Request body is empty. Data is required.")
        )
        entries = doc.get("entries") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise bad_request("the body must be an object with an array 'entries'")
        ids: list[str] = []
        for entry in entries:
            entry_id = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(entry_id, str) or not BATCH_ID.match(entry_id):
                raise unprocessable(PRODUCE_BATCH, "Batch entry identifier is not a valid string.")
            ids.append(entry_id)
        if len(set(ids)) != len(ids):
            raise unprocessable(PRODUCE_BATCH, "Batch entry IDs are not distinct.")
        if not ids:
            raise unprocessable(PRODUCE_BATCH, "Empty batch.")
        if len(ids) > _max_batch_entries(api):
            raise unprocessable(PRODUCE_BATCH, "Too many entries in batch.")
        sent: list[tuple[str, _Outgoing, asyncio.Future[RecordMetadata]]] = []
        failures: list[dict[str, Any]] = []
        for entry_id, entry in zip(ids, entries, strict=True):
            try:
                out = await p.prepare(entry)
                sent.append((entry_id, out, await p.send(out)))
            except Exception as e:  # noqa: BLE001 - each entry gets its own result
                failures.append({"id": entry_id, **to_rest_error(e).body()})
        successes: list[dict[str, Any]] = []
        for entry_id, out, fut in sent:
            try:
                report = p.report(out, await fut)
            except Exception as e:  # noqa: BLE001 - a failed delivery is a failure entry
                failures.append({"id": entry_id, **to_rest_error(e).body()})
                continue
            del report["error_code"]
            successes.append({"id": entry_id, **report})
        return JSONResponse({"successes": successes, "failures": failures}, status_code=207)

    base = "/v3/clusters/{cluster_id}/topics/{topic_name}/records"
    return [
        Route(base, produce, methods=["POST"]),
        Route(base + ":batch", produce_batch, methods=["POST"]),
    ]


def _max_batch_entries(api: ProxyApi) -> int:
    raw = api.config.extra.get("produce.batch.maximum.entries", "10")
    try:
        return min(max(int(raw), 1), 50)
    except ValueError:
        return 10
