"""A tiny Kafka wire client for component tests: one connection, one request at a time.

Requests are framed with Zurau's own codec (header v1, or v2 for flexible versions) and sent over
a real socket; responses are read back and decoded, after checking the correlation id and
skipping the response header's tagged fields when the version is flexible.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from zurau.protocol import codec
from zurau.protocol.primitives import skip_tagged_fields, write_nullable_string16

_I16 = struct.Struct(">h")
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
        schema = codec.schema_for(api_key)
        self._correlation_id += 1
        cid = self._correlation_id
        head = bytearray(_I16.pack(api_key) + _I16.pack(version) + _I32.pack(cid))
        write_nullable_string16(head, self.client_id)
        if schema.is_flexible(version):
            head.append(0)  # no tagged fields in header v2
        payload = bytes(head) + codec.encode(api_key, version, "request", body)
        return cid, _I32.pack(len(payload)) + payload

    async def read_response(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        size = _I32.unpack(await self.reader.readexactly(4))[0]
        data = await self.reader.readexactly(size)
        (got,) = _I32.unpack_from(data, 0)
        assert got == correlation_id, f"correlation id {got} != {correlation_id}"
        pos = 4
        if codec.schema_for(api_key).response_header_version(version) == 1:
            pos = skip_tagged_fields(data, pos)
        return codec.decode(api_key, version, "response", memoryview(data)[pos:])

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
