"""Many idle connections and repeated all-topic Metadata, through real clients (issue 18).

* Idle connections hold no receive buffer (broker/connection.py gives it back once every received
  byte was framed), keep answering, and do not stop active clients.
* Metadata answers come from per-topic encodings cached by topic image (handlers/metadata.py):
  a topic deleted and created again with another partition count, or grown, is listed as it is now.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.frame import decode_response, encode_request

IDLE = 100


def _api_versions(s: socket.socket, correlation_id: int) -> dict[str, object]:
    s.sendall(encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "idle", {}))
    (size,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
    cid, body = decode_response(ApiKey.API_VERSIONS, 0, s.recv(size, socket.MSG_WAITALL))
    assert cid == correlation_id
    return body


def test_idle_connections_hold_no_receive_buffer_and_keep_working() -> None:
    with EmbeddedBroker() as b:
        socks = [socket.create_connection(("127.0.0.1", b.port), timeout=10) for _ in range(IDLE)]
        try:
            for s in socks:
                assert _api_versions(s, 1)["error_code"] == 0
            conns = b.call(lambda: list(b.broker.server.connections))
            assert len(conns) >= IDLE
            assert b.call(lambda: [c for c in conns if c.frames.holds_buffer]) == []
            errors: list[object] = []
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
            for i in range(200):
                p.produce("idle-conns", b"v%d" % i, on_delivery=lambda err, _m: errors.append(err))
            assert p.flush(30) == 0 and errors == [None] * 200
            for s in socks:
                assert _api_versions(s, 2)["error_code"] == 0
        finally:
            for s in socks:
                s.close()


def _partition_counts(admin: AdminClient, name: str) -> int:
    return len(admin.list_topics(timeout=10).topics[name].partitions)


def _wait_for(admin: AdminClient, name: str, count: int | None) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=10).topics
        if (count is None and name not in topics) or (
            count is not None and name in topics and len(topics[name].partitions) == count
        ):
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} never listed with {count} partitions")


def test_all_topic_metadata_follows_topic_changes() -> None:
    with EmbeddedBroker() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        name = f"md-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(name, 3, 1)])[name].result(20)
        _wait_for(admin, name, 3)
        assert _partition_counts(admin, name) == 3  # answered from the cache this time
        admin.create_partitions([NewPartitions(name, 5)])[name].result(20)
        _wait_for(admin, name, 5)
        admin.delete_topics([name])[name].result(20)
        _wait_for(admin, name, None)
        admin.create_topics([NewTopic(name, 2, 1)])[name].result(20)
        _wait_for(admin, name, 2)
        md = admin.list_topics(name, timeout=10).topics[name]  # the requested-topics form too
        assert sorted(md.partitions) == [0, 1] and all(p.leader == b.broker.config.node_id for p in md.partitions.values())
