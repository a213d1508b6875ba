"""Edge services answer without waiting on Nagle's algorithm: a response written in pieces (the
head, then the body) reaches a client that sends its request in pieces (httpx, many HTTP
libraries) at once, not after the client's delayed ACK (~40 ms on Linux). The listener sets
TCP_NODELAY, which every accepted connection inherits (measured against a REST proxy process:
48 ms per small request without it, 1-7 ms with it; bench/rest_proxy.py)."""

from __future__ import annotations

import socket

from zurau.edge_service import HttpListener


def test_the_listener_and_its_connections_have_nodelay() -> None:
    listener = HttpListener("127.0.0.1", 0, "test")
    try:
        assert listener._sock is not None
        assert listener._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        client = socket.create_connection(("127.0.0.1", listener.port))
        try:
            listener._sock.setblocking(True)
            accepted, _ = listener._sock.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            client.close()
    finally:
        listener._sock.close()

