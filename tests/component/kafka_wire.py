"""A tiny Kafka wire client for component tests: one connection, one request at a time.

Requests are framed by :func:`zurau.protocol.frame.encode_request` (header v1, or v2 for flexible
versions) and sent over a real socket; responses are read back, their correlation id checked, and
decoded by :func:`zurau.protocol.frame.decode_response`.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from zurau.protocol.frame import decode_response, encode_request

_I32 = struct.Struct(">i")


class KafkaWireClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self._correlation_id = 0

    @classmethod
    async def connect(cls, host: str, port: int, client_id: str = "zurau-test") -> KafkaWireClient:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, client_id)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def __aenter__(self) -> KafkaWireClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def frame(self, api_key: int, version: int, body: dict[str, Any]) -> tuple[int, bytes]:
        """The full request frame (size prefix included) and its correlation id."""
        self._correlation_id += 1
        cid = self._correlation_id
        return cid, encode_request(api_key, version, cid, self.client_id, body)

    async def read_response(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        size = _I32.unpack(await self.reader.readexactly(4))[0]
        data = await self.reader.readexactly(size)
        got, body = decode_response(api_key, version, data)
        assert got == correlation_id, f"correlation id {got} != {correlation_id}"
        return body

    async def request(
        self, api_key: int, version: int, body: dict[str, Any], timeout: float = 5.0
    ) -> dict[str, Any]:
        cid, frame = self.frame(api_key, version, body)
        self.writer.write(frame)
        await self.writer.drain()
        return await asyncio.wait_for(self.read_response(api_key, version, cid), timeout)

    async def send_only(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        _cid, frame = self.frame(api_key, version, body)
        self.writer.write(frame)
        await self.writer.drain()
