"""Connections from a coordinator to another broker's inter-broker listener.

The transaction coordinator talks to other brokers in two ways: WriteTxnMarkers to partition
leaders (marker_channel.py) and, as a partition leader, AddPartitionsToTxn ``verify_only`` to a
producer's transaction coordinator (txn_verification_channel.py). Both open one connection per
broker on demand, to the address the current metadata gives for the inter-broker listener.
"""

from __future__ import annotations

from collections.abc import Callable

from zurau.client.connection import BrokerConnection
from zurau.client.security import ClientSecurity
from zurau.protocol.errors import KafkaError


def inter_broker_connection(
    endpoint: Callable[[int], tuple[str, int] | None],
    broker_id: int,
    *,
    client_id: str,
    request_timeout_ms: int,
    unreachable: type[KafkaError],
    security: ClientSecurity | None = None,
) -> BrokerConnection:
    """An (unconnected) connection to ``broker_id``; ``unreachable`` is raised when the metadata
    names no inter-broker endpoint for it (the caller's retriable error). ``security``: the
    inter-broker listener's TLS/SASL as this broker's own login (None: PLAINTEXT)."""
    address = endpoint(broker_id)
    if address is None:
        raise unreachable(f"broker {broker_id} has no inter-broker endpoint")
    return BrokerConnection(
        address[0], address[1], client_id=client_id, request_timeout=request_timeout_ms / 1000, node_id=broker_id,
        security=security,
    )
