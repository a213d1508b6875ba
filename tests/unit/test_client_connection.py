"""BrokerConnection against a scripted fake broker on loopback: negotiation, pipelining, timeouts."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from zurau.client.connection import BrokerConnection
from zurau.client.errors import (
    BrokerUnreachableError,
    ConnectionLostError,
    RequestTimeoutError,
    UnsupportedApiError,
)
from zurau.protocol import codec
from zurau.protocol.frame import parse_request_header

_I32 = struct.Struct(">i")
FULL = [
    {"api_key": 18, "min_version": 0, "max_version": 4},
    {"api_key": 3, "min_version": 0, "max_version": 13},
]

Handler = Callable[[int, int, int, dict[str, Any]], Awaitable[dict[str, Any] | None]]


class FakeBroker:
    """Answers each request with ``handler(api_key, version, correlation_id, body)`` (None: no answer)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[int, int]] = []
        self.server: asyncio.base_events.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> FakeBroker:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:
            w.close()
        await self.server.wait_closed()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        tasks = []
        try:
            while True:
                size = _I32.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version = struct.unpack_from(">hh", frame)
                schema = codec.schema_for(api_key)
                header, pos = parse_request_header(frame, schema.is_flexible(version))
                body = codec.decode(api_key, version, "request", memoryview(frame)[pos:])
                self.requests.append((api_key, version))
                tasks.append(
                    asyncio.create_task(self._answer(writer, api_key, version, header.correlation_id, body))
                )
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for t in tasks:
                t.cancel()

    async def _answer(
        self, writer: asyncio.StreamWriter, api_key: int, version: int, cid: int, body: dict[str, Any]
    ) -> None:
        resp = await self.handler(api_key, version, cid, body)
        if resp is None:
            return
        if api_key == 18 and resp.get("error_code") == 35:
            version = 0
        head = _I32.pack(cid)
        if codec.schema_for(api_key).response_header_version(version) == 1:
            head += b"\x00"
        payload = head + codec.encode(api_key, version, "response", resp)
        writer.write(_I32.pack(len(payload)) + payload)


def api_versions(keys: list[dict[str, int]] = FULL) -> dict[str, Any]:
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}


def metadata(tag: int) -> dict[str, Any]:
    return {
        "brokers": [{"node_id": tag, "host": "h", "port": 1, "rack": None}],
        "topics": [],
        "cluster_id": "c",
    }


async def test_negotiates_down_when_the_broker_is_older() -> None:
    old = [
        {"api_key": 18, "min_version": 0, "max_version": 2},
        {"api_key": 3, "min_version": 0, "max_version": 8},
    ]

    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any]:
        if key == 18 and version > 2:
            return {"error_code": 35, "api_keys": old}  # Kafka answers in v0 form
        return api_versions(old)

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        try:
            assert fb.requests == [(18, 3), (18, 2)]
            assert conn.version(3) == 8
            assert conn.version(3, max_version=5) == 5
            with pytest.raises(UnsupportedApiError, match="does not serve Produce"):
                conn.version(0)
            with pytest.raises(UnsupportedApiError, match="needs v9"):
                conn.version(3, min_version=9)
        finally:
            await conn.close()


async def test_pipelined_answers_are_matched_by_correlation_id() -> None:
    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any]:
        if key == 18:
            return api_versions()
        # Answer later requests first: the client must not rely on order alone.
        await asyncio.sleep(0.2 - 0.02 * cid)
        return metadata(cid)

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        try:
            results = await asyncio.gather(*(conn.request(3, {"topics": []}, version=12) for _ in range(5)))
            assert [r["brokers"][0]["node_id"] for r in results] == [1, 2, 3, 4, 5]
        finally:
            await conn.close()


async def test_a_timeout_fails_that_request_and_closes_the_connection() -> None:
    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if key == 18:
            return api_versions()
        await asyncio.sleep(10)
        return None

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port, request_timeout=0.2).connect()
        try:
            slow = asyncio.create_task(conn.request(3, {"topics": []}, version=12, timeout=5))
            await asyncio.sleep(0.05)
            with pytest.raises(
                RequestTimeoutError, match="Metadata to 127.0.0.1:.* got no answer within 200 ms"
            ):
                await conn.request(3, {"topics": []}, version=12)
            with pytest.raises(ConnectionLostError):
                await slow
            assert not conn.connected
            with pytest.raises(ConnectionLostError, match="is closed"):
                await conn.request(3, {"topics": []}, version=12)
        finally:
            await conn.close()


async def test_broker_closing_the_socket_fails_waiting_requests() -> None:
    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if key == 18:
            return api_versions()
        for w in fb.writers:
            w.close()
        return None

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        try:
            with pytest.raises(ConnectionLostError, match="lost during Metadata"):
                await conn.request(3, {"topics": []}, version=12)
        finally:
            await conn.close()


async def test_unreachable_broker_is_reported_with_its_address() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(BrokerUnreachableError, match=f"cannot connect to 127.0.0.1:{port}"):
        await BrokerConnection("127.0.0.1", port).connect(timeout=2)


async def test_close_leaves_no_task_behind() -> None:
    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any]:
        return api_versions()

    before = asyncio.all_tasks()
    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        await conn.close()
        leftover = {t for t in asyncio.all_tasks() - before if "zurau-client" in t.get_name()}
        assert leftover == set()


WITH_FETCH = [*FULL, {"api_key": 1, "min_version": 4, "max_version": 12}]


def fetch_answer(records: bytes) -> dict[str, Any]:
    partition = {"partition_index": 0, "error_code": 0, "high_watermark": 1, "records": records}
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [{"topic": "t", "partitions": [partition]}]}


async def test_small_and_large_answers_pipelined_arrive_intact() -> None:
    """Answers of a few bytes and of megabytes, interleaved on one socket: the large ones are
    received into buffers of their own and their records come back as read-only views."""
    payloads = {cid: bytes([cid % 251]) * (3_000_000 if cid % 3 == 0 else 50 * cid) for cid in range(1, 13)}

    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any]:
        if key == 18:
            return api_versions(WITH_FETCH)
        return fetch_answer(payloads[cid])

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        try:
            fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "topics": []}
            answers = await asyncio.gather(*(conn.request(1, fetch, version=12) for _ in payloads))
            for cid, answer in zip(payloads, answers, strict=True):
                records = answer["responses"][0]["partitions"][0]["records"]
                assert isinstance(records, memoryview) and records.readonly
                assert records == payloads[cid]
        finally:
            await conn.close()


@pytest.mark.parametrize("size", [-5, (1 << 30) + 1])
async def test_an_answer_with_a_bad_size_fails_the_connection(size: int) -> None:
    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if key == 18:
            return api_versions()
        for w in fb.writers:
            w.write(_I32.pack(size) + b"\x00" * 64)
        return None

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        try:
            with pytest.raises(ConnectionLostError, match="invalid response: frame of"):
                await conn.request(3, {"topics": []}, version=12)
            assert not conn.connected
        finally:
            await conn.close()


async def test_a_request_larger_than_the_socket_buffers_waits_for_the_broker_to_read() -> None:
    """Write flow control: a request of megabytes to a broker that reads it slowly goes out whole."""
    topics = [{"name": f"topic-{i:06d}-" + "x" * 200, "topic_id": None} for i in range(40_000)]  # ~9 MB

    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any]:
        if key == 18:
            return api_versions()
        return metadata(len(body["topics"]))

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port).connect()
        try:
            answer = await conn.request(3, {"topics": topics}, version=12)
            assert answer["brokers"][0]["node_id"] == len(topics)
        finally:
            await conn.close()


async def test_a_cancelled_request_leaves_the_connection_usable() -> None:
    async def handler(key: int, version: int, cid: int, body: dict[str, Any]) -> dict[str, Any]:
        if key == 18:
            return api_versions()
        await asyncio.sleep(0.3 if cid == 1 else 0)
        return metadata(cid)

    async with FakeBroker(handler) as fb:
        conn = await BrokerConnection("127.0.0.1", fb.port, request_timeout=0.2).connect()
        try:
            slow = asyncio.create_task(conn.request(3, {"topics": []}, version=12, timeout=5))
            await asyncio.sleep(0.05)
            slow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await slow
            answer = await conn.request(3, {"topics": []}, version=12, timeout=5)
            assert answer["brokers"][0]["node_id"] == 2 and conn.connected
            await asyncio.sleep(0.4)  # the cancelled request's answer arrives and is dropped
            assert (await conn.request(3, {"topics": []}, version=12))["brokers"][0]["node_id"] == 3
        finally:
            await conn.close()
