"""VoterSet and its control records (KIP-853): Kafka's VotersRecord / KRaftVersionRecord bytes,
round trips, refusal of damaged input, and the set operations voter changes use."""

from __future__ import annotations

import uuid

import pytest

from zurau.protocol.primitives import DecodeError
from zurau.raft.voter_set import (
    NO_DIRECTORY,
    Endpoint,
    ReplicaKey,
    Voter,
    VoterSet,
    decode_kraft_version,
    encode_kraft_version,
)

DIR = uuid.UUID("0123456789abcdef0123456789abcdef")


def test_voters_record_layout_is_kafkas() -> None:
    vs = VoterSet([Voter(ReplicaKey(1, DIR), (Endpoint("CONTROLLER", "h", 9093),), 0, 1)])
    expected = (
        bytes.fromhex("0000")  # version
        + bytes([2])  # one voter (compact array: n + 1)
        + bytes.fromhex("00000001")
        + DIR.bytes
        + bytes([2])  # one endpoint
        + bytes([11]) + b"CONTROLLER"
        + bytes([2]) + b"h"
        + bytes.fromhex("2385")  # port 9093
        + bytes([0])  # endpoint tags
        + bytes.fromhex("00000001")  # kraft.version 0..1
        + bytes([0, 0, 0])  # feature, voter and record tags
    )
    assert vs.encode() == expected
    assert VoterSet.decode(expected) == vs
    assert encode_kraft_version(1) == bytes.fromhex("0000000100")
    assert decode_kraft_version(encode_kraft_version(1)) == 1


def test_damaged_records_are_refused() -> None:
    vs = VoterSet(
        [Voter(ReplicaKey(1, DIR), (Endpoint("CONTROLLER", "a", 1), Endpoint("X", "b", 2))), Voter(ReplicaKey(2))]
    )
    data = vs.encode()
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            VoterSet.decode(data[:cut])
    with pytest.raises(DecodeError, match="trailing"):
        VoterSet.decode(data + b"\x00")
    with pytest.raises(DecodeError, match="no voter"):
        VoterSet.decode(bytes.fromhex("0000") + bytes([1, 0]))
    twice = bytes.fromhex("0000") + bytes([3]) + (bytes.fromhex("00000001") + NO_DIRECTORY.bytes + bytes([1, 0, 0, 0, 1, 0, 0])) * 2 + bytes([0])
    with pytest.raises(DecodeError, match="twice"):
        VoterSet.decode(twice)
    with pytest.raises(ValueError):
        VoterSet().encode()


def test_set_operations_and_keys() -> None:
    a, b = Voter(ReplicaKey(1, DIR)), Voter(ReplicaKey(2, uuid.uuid4()))
    vs = VoterSet([b, a])
    assert list(vs) == [1, 2] and vs.majority == 2
    assert vs.with_voter(Voter(ReplicaKey(3))).ids == {1, 2, 3}
    assert vs.without(1).ids == {2}
    moved = vs.updated(Voter(ReplicaKey(1, DIR), (Endpoint("CONTROLLER", "new", 1),)))
    assert moved[1].endpoints == (Endpoint("CONTROLLER", "new", 1),) and moved[2] == b
    # A static voter (no directory) matches any directory; known directories must agree.
    assert vs.is_voter(ReplicaKey(1, DIR)) and vs.is_voter(ReplicaKey(1))
    assert not vs.is_voter(ReplicaKey(1, uuid.uuid4())) and not vs.is_voter(ReplicaKey(9))
