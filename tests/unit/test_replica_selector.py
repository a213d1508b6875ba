"""KIP-392 replica selectors: which replica a consumer in a rack is sent to."""

from __future__ import annotations

import pytest

from zurau.replication.replica_selector import (
    LEADER,
    RACK_AWARE,
    ReplicaView,
    leader_only,
    rack_aware,
    selector_for,
)


def _views() -> list[ReplicaView]:
    return [
        ReplicaView(1, "a", 100, 0, True),
        ReplicaView(2, "b", 90, 0, False),
        ReplicaView(3, "b", 100, 500, False),
        ReplicaView(4, "b", 100, 20, False),
        ReplicaView(5, None, 100, 0, False),
    ]


def test_rack_aware_prefers_the_most_caught_up_replica_in_the_rack() -> None:
    assert rack_aware(_views(), "b") == 4  # highest log end offset, then most recently caught up
    assert rack_aware(_views(), "a") == 1  # the leader is in the rack
    assert rack_aware(_views(), "z") == 1  # nobody in the rack: the leader
    assert rack_aware(_views(), "") == 1  # no rack: the leader
    assert leader_only(_views(), "b") == 1


def test_selector_names() -> None:
    assert selector_for(RACK_AWARE) is rack_aware
    assert selector_for(LEADER) is leader_only
    assert selector_for(None) is None
    with pytest.raises(ValueError):
        selector_for("com.example.Nope")
