"""The set of voters of a KRaft quorum (KIP-853 dynamic quorums) and its control records.

A quorum is either **static** -- its voters are fixed by ``controller.quorum.voters``, known by id
only, and never written to the log (``kraft.version`` 0) -- or **dynamic** (``kraft.version`` 1):
its voter set lives in the metadata log itself, as ``VotersRecord`` control records, and changes
one voter at a time through AddRaftVoter / RemoveRaftVoter (and UpdateRaftVoter for a voter's
endpoints). Each voter is then a :class:`ReplicaKey` -- node id *and* the directory id of its
metadata log directory, so that a controller whose disk was wiped (same id, new directory) is not
mistaken for the voter it replaced -- with the endpoints other nodes reach it on.

Control record values (Kafka's, flexible encoding; record key = control key with the type):

* ``KRaftVersionRecord`` (type 5), version 0: ``Version int16, KRaftVersion int16`` + tags;
* ``VotersRecord`` (type 6), version 0: ``Version int16, Voters [ VoterId int32, VoterUuid uuid,
  Endpoints [Name string, Host string, Port uint16], KRaftVersionFeature {MinSupportedVersion
  int16, MaxSupportedVersion int16} ]`` + tags.

Invariants: a :class:`VoterSet` is immutable, never empty when it comes from a record, holds each
node id once, and keeps its voters sorted by id (so encoding is deterministic). The *effective*
voter set of a node is the one written last in its log, committed or not (Kafka's rule); because
changes go one voter at a time and only once the previous change is committed, any two consecutive
voter sets have intersecting majorities.

Pure: the standard library and ``zurau.protocol``; no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from zurau.protocol.primitives import (
    I16,
    I32,
    U16,
    DecodeError,
    read_uvarint,
    skip_tagged_fields,
    write_uvarint,
)

__all__ = [
    "KRAFT_VERSION_0",
    "KRAFT_VERSION_1",
    "NO_DIRECTORY",
    "Endpoint",
    "ReplicaKey",
    "Voter",
    "VoterSet",
    "decode_kraft_version",
    "encode_kraft_version",
]

KRAFT_VERSION_0 = 0  # static voters (controller.quorum.voters)
KRAFT_VERSION_1 = 1  # dynamic voters in the log (KIP-853)
NO_DIRECTORY = uuid.UUID(int=0)
"""The directory id of a voter known by node id only (a static quorum): Kafka's ``Uuid.ZERO_UUID``."""


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A node id and the directory id of its metadata log (``NO_DIRECTORY`` if unknown)."""

    node_id: int
    directory_id: uuid.UUID = NO_DIRECTORY

    def matches(self, other: ReplicaKey) -> bool:
        """Same node, and the same directory wherever both know theirs."""
        return self.node_id == other.node_id and (
            NO_DIRECTORY in (self.directory_id, other.directory_id) or self.directory_id == other.directory_id
        )

    def __str__(self) -> str:
        if self.directory_id == NO_DIRECTORY:
            return str(self.node_id)
        return f"{self.node_id}@{self.directory_id}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A named listener of a voter (``CONTROLLER``, host, port)."""

    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter: its key, its endpoints and the ``kraft.version`` range it supports."""

    key: ReplicaKey
    endpoints: tuple[Endpoint, ...] = ()
    min_kraft_version: int = KRAFT_VERSION_0
    max_kraft_version: int = KRAFT_VERSION_1

    @property
    def node_id(self) -> int:
        return self.key.node_id

    def endpoint(self, listener: str | None = None) -> Endpoint | None:
        """The endpoint named ``listener`` (the first one when None), or None."""
        for e in self.endpoints:
            if listener is None or e.name == listener:
                return e
        return None


# Flexible encoding by hand (this package stays free of the schema codec's I/O imports): compact
# arrays and strings carry length + 1 as an unsigned varint, every struct ends with an empty
# tagged-field section (a zero byte) on write and skips any tagged fields on read.


def _write_string(out: bytearray, value: str) -> None:
    raw = value.encode()
    write_uvarint(out, len(raw) + 1)
    out += raw


def _read_string(buf: bytes, pos: int, what: str) -> tuple[str, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError(f"VotersRecord: null {what}")
    end = pos + n - 1
    if end > len(buf):
        raise DecodeError(f"VotersRecord: truncated {what}")
    return buf[pos:end].decode(), end


def _need(buf: bytes, pos: int, n: int) -> None:
    if pos + n > len(buf):
        raise DecodeError("VotersRecord is truncated")


class VoterSet(Mapping[int, Voter]):
    """An immutable set of voters keyed by node id (see the module docstring)."""

    __slots__ = ("_voters",)

    def __init__(self, voters: Iterable[Voter] = ()) -> None:
        by_id: dict[int, Voter] = {}
        for v in voters:
            if v.node_id in by_id:
                raise ValueError(f"voter {v.node_id} is listed twice")
            if v.node_id < 0:
                raise ValueError(f"voter id {v.node_id} is negative")
            by_id[v.node_id] = v
        self._voters = {k: by_id[k] for k in sorted(by_id)}

    @classmethod
    def of_ids(cls, ids: Iterable[int]) -> VoterSet:
        """A static voter set: ids only, no directory ids or endpoints."""
        return cls(Voter(ReplicaKey(i)) for i in ids)

    # Mapping
    def __getitem__(self, node_id: int) -> Voter:
        return self._voters[node_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._voters)

    def __len__(self) -> int:
        return len(self._voters)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and self._voters == other._voters

    def __hash__(self) -> int:
        return hash(tuple(self._voters.values()))

    def __repr__(self) -> str:
        return f"VoterSet({', '.join(str(v.key) for v in self._voters.values())})"

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(self._voters)

    @property
    def majority(self) -> int:
        return len(self._voters) // 2 + 1

    def is_voter(self, key: ReplicaKey) -> bool:
        v = self._voters.get(key.node_id)
        return v is not None and v.key.matches(key)

    def with_voter(self, voter: Voter) -> VoterSet:
        """This set plus ``voter`` (which replaces a voter with the same id)."""
        rest = [v for i, v in self._voters.items() if i != voter.node_id]
        return VoterSet([*rest, voter])

    def without(self, node_id: int) -> VoterSet:
        return VoterSet(v for i, v in self._voters.items() if i != node_id)

    def updated(self, voter: Voter) -> VoterSet:
        """The same voters with ``voter``'s endpoints and version range replaced (same key)."""
        old = self._voters[voter.node_id]
        return self.with_voter(
            replace(
                old,
                endpoints=voter.endpoints,
                min_kraft_version=voter.min_kraft_version,
                max_kraft_version=voter.max_kraft_version,
            )
        )

    # ------------------------------------------------------------------ VotersRecord

    def encode(self) -> bytes:
        """The ``VotersRecord`` v0 value; ValueError for an empty set (a record never is)."""
        if not self._voters:
            raise ValueError("an empty voter set has no VotersRecord")
        out = bytearray(I16.pack(0))
        write_uvarint(out, len(self._voters) + 1)
        for v in self._voters.values():
            out += I32.pack(v.node_id)
            out += v.key.directory_id.bytes
            write_uvarint(out, len(v.endpoints) + 1)
            for e in v.endpoints:
                _write_string(out, e.name)
                _write_string(out, e.host)
                out += U16.pack(e.port)
                out.append(0)
            out += I16.pack(v.min_kraft_version)
            out += I16.pack(v.max_kraft_version)
            out.append(0)  # KRaftVersionFeature's tags
            out.append(0)  # the voter's tags
        out.append(0)  # the record's tags
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> VoterSet:
        """A ``VotersRecord`` value; DecodeError if malformed, empty or listing an id twice."""
        buf = bytes(data)
        try:
            _need(buf, 0, 2)
            (version,) = I16.unpack_from(buf, 0)
            if version < 0:
                raise DecodeError(f"VotersRecord has negative version {version}")
            count, pos = read_uvarint(buf, 2)
            voters = []
            for _ in range(max(0, count - 1)):
                _need(buf, pos, 20)
                (node_id,) = I32.unpack_from(buf, pos)
                directory = uuid.UUID(bytes=buf[pos + 4 : pos + 20])
                n_endpoints, pos = read_uvarint(buf, pos + 20)
                endpoints = []
                for _ in range(max(0, n_endpoints - 1)):
                    name, pos = _read_string(buf, pos, "endpoint name")
                    host, pos = _read_string(buf, pos, "endpoint host")
                    _need(buf, pos, 2)
                    (port,) = U16.unpack_from(buf, pos)
                    pos = skip_tagged_fields(buf, pos + 2)
                    endpoints.append(Endpoint(name, host, port))
                _need(buf, pos, 4)
                low, high = I16.unpack_from(buf, pos)[0], I16.unpack_from(buf, pos + 2)[0]
                pos = skip_tagged_fields(buf, pos + 4)
                pos = skip_tagged_fields(buf, pos)
                voters.append(Voter(ReplicaKey(node_id, directory), tuple(endpoints), low, high))
            pos = skip_tagged_fields(buf, pos)
        except (IndexError, ValueError, UnicodeDecodeError) as e:
            if isinstance(e, DecodeError):
                raise
            raise DecodeError(f"malformed VotersRecord: {e}") from None
        if pos != len(buf):
            raise DecodeError(f"VotersRecord has {len(buf) - pos} trailing bytes")
        if not voters:
            raise DecodeError("VotersRecord lists no voter")
        try:
            return cls(voters)
        except ValueError as e:
            raise DecodeError(f"VotersRecord: {e}") from None


def encode_kraft_version(version: int) -> bytes:
    """The ``KRaftVersionRecord`` v0 value."""
    return I16.pack(0) + I16.pack(version) + b"\x00"


def decode_kraft_version(data: bytes | bytearray | memoryview) -> int:
    buf = bytes(data)
    if len(buf) < 5:
        raise DecodeError("KRaftVersionRecord is truncated")
    (version,) = I16.unpack_from(buf, 2)
    if skip_tagged_fields(buf, 4) != len(buf):
        raise DecodeError("KRaftVersionRecord has trailing bytes")
    return version
