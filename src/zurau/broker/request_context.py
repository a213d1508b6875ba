"""What a handler knows about the request it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from zurau.protocol.frame import RequestHeader

if TYPE_CHECKING:
    from zurau.broker.server import Broker


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection instead of answering.

    Kafka does this for a failed ``acks=0`` produce: the client gets no response, so a closed
    connection is its only signal to refresh metadata.
    """


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    broker: Broker
    peer: str

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id
