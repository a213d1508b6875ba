"""Distributed workers' group membership: protocol type ``connect``, Kafka Connect's ``default``
(eager) protocol, with its metadata and assignment bytes (Kafka's ``ConnectProtocol`` v0)::

    Metadata   = version int16 (0) | url string | config_offset int64
    Assignment = version int16 (0) | error int16 | leader string | leader_url string
                 | config_offset int64 | [connector string | [task int32]]

A task id of -1 stands for the connector itself. Strings are int16-length-prefixed UTF-8, arrays
int32-count-prefixed.

The leader assigns connectors, then tasks, round-robin over the members sorted by member id
(Kafka's eager assignor): connector ``i`` of the sorted connector names goes to member
``i % n``, and the tasks, ordered by connector then task number, continue around the same circle.
``error`` is 1 (CONFIG_MISMATCH) when the leader's config is behind a member's: members then
refresh their config and rejoin.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zurau.client.cluster import Cluster
from zurau.client.group import GroupMember
from zurau.client.types import TopicPartition
from zurau.protocol.messages import (
    JoinGroupRequestProtocols,
    JoinGroupResponseMembers,
    SyncGroupRequestAssignments,
)

log = logging.getLogger("zurau.connect.group")

CONNECTOR_TASK = -1
NO_ERROR, CONFIG_MISMATCH = 0, 1


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def int64(self, v: int) -> None:
        self.parts.append(struct.pack(">q", v))

    def string(self, s: str) -> None:
        b = s.encode("utf-8")
        self.int16(len(b))
        self.parts.append(b)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("truncated Connect protocol message")
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v

    def int16(self) -> int:
        return int(self._take(">h"))

    def int32(self) -> int:
        return int(self._take(">i"))

    def int64(self) -> int:
        return int(self._take(">q"))

    def string(self) -> str:
        n = self.int16()
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated Connect protocol string")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s


@dataclass(frozen=True)
class WorkerMetadata:
    url: str
    config_offset: int


def encode_metadata(m: WorkerMetadata) -> bytes:
    w = _Writer()
    w.int16(0)
    w.string(m.url)
    w.int64(m.config_offset)
    return w.bytes()


def decode_metadata(data: bytes) -> WorkerMetadata:
    r = _Reader(data)
    r.int16()
    return WorkerMetadata(r.string(), r.int64())


@dataclass
class Assignment:
    error: int = NO_ERROR
    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1
    connectors: list[str] = field(default_factory=list)
    tasks: list[tuple[str, int]] = field(default_factory=list)


def encode_assignment(a: Assignment) -> bytes:
    by_connector: dict[str, list[int]] = {}
    for c in a.connectors:
        by_connector.setdefault(c, []).append(CONNECTOR_TASK)
    for c, t in a.tasks:
        by_connector.setdefault(c, []).append(t)
    w = _Writer()
    w.int16(0)
    w.int16(a.error)
    w.string(a.leader)
    w.string(a.leader_url)
    w.int64(a.config_offset)
    w.int32(len(by_connector))
    for c, ids in by_connector.items():
        w.string(c)
        w.int32(len(ids))
        for i in ids:
            w.int32(i)
    return w.bytes()


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data)
    r.int16()
    a = Assignment(r.int16(), r.string(), r.string(), r.int64())
    for _ in range(r.int32()):
        c = r.string()
        for _ in range(r.int32()):
            t = r.int32()
            if t == CONNECTOR_TASK:
                a.connectors.append(c)
            else:
                a.tasks.append((c, t))
    return a


def round_robin(members: list[str], connectors: list[str], tasks: list[tuple[str, int]]) -> dict[str, Assignment]:
    """Kafka's eager assignment: connectors then tasks dealt round-robin over sorted members."""
    order = sorted(members)
    out = {m: Assignment() for m in order}
    if not order:
        return out
    i = 0
    for c in sorted(connectors):
        out[order[i % len(order)]].connectors.append(c)
        i += 1
    for t in sorted(tasks):
        out[order[i % len(order)]].tasks.append(t)
        i += 1
    return out


class ConnectGroupMember(GroupMember):
    """A worker in the ``connect`` group. ``snapshot()`` gives the leader ``(config offset,
    connectors, tasks)`` to assign; after :meth:`join`, :attr:`connect_assignment` holds ours."""

    PROTOCOL_TYPE = "connect"

    def __init__(self, cluster: Cluster, group_id: str, url: str,
                 snapshot: Callable[[], tuple[int, list[str], list[tuple[str, int]]]], **kw: Any) -> None:
        super().__init__(cluster, group_id, **kw)
        self.url = url
        self.snapshot = snapshot
        self.connect_assignment = Assignment()

    def _protocols(self) -> list[JoinGroupRequestProtocols]:
        offset, _, _ = self.snapshot()
        return [{"name": "default", "metadata": encode_metadata(WorkerMetadata(self.url, offset))}]

    async def _assign(self, members: list[JoinGroupResponseMembers]) -> list[SyncGroupRequestAssignments]:
        offset, connectors, tasks = self.snapshot()
        urls: dict[str, str] = {}
        max_offset = offset
        for m in members:
            try:
                md = decode_metadata(bytes(m["metadata"]))
            except (ValueError, UnicodeDecodeError):
                log.warning("member %s sent unreadable Connect metadata", m["member_id"])
                md = WorkerMetadata("", -1)
            urls[m["member_id"]] = md.url
            max_offset = max(max_offset, md.config_offset)
        if max_offset > offset:
            plan = {m: Assignment(error=CONFIG_MISMATCH) for m in urls}
        else:
            plan = round_robin(list(urls), connectors, tasks)
        for a in plan.values():
            a.leader, a.leader_url, a.config_offset = self.member_id, urls.get(self.member_id, self.url), offset
        return [{"member_id": m, "assignment": encode_assignment(a)} for m, a in plan.items()]

    def _decode_assignment(self, data: bytes) -> list[TopicPartition]:
        self.connect_assignment = decode_assignment(data) if data else Assignment()
        return []
