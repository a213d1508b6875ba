"""The throttle of partition moves (zurau/config/replication_throttle.py), which both
``zurau reassign-partitions --throttle`` and the balancer set."""

from __future__ import annotations

from zurau.config.replication_throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    Move,
    throttle_of,
)


def test_the_throttle_of_moves_names_senders_receivers_and_every_broker_involved() -> None:
    moves = {
        "b": {10: Move.between([1, 2], [2, 3]), 2: Move.between([3, 1], [4, 1])},
        "a": {0: Move.between([5], [5, 6])},
        "empty": {},
    }
    throttle = throttle_of(moves, 1000)
    assert list(throttle.replicas) == ["a", "b"]
    # pairs sorted by partition, then broker (numerically: partition 2 before 10)
    assert throttle.topic_configs("b") == [
        (LEADER_REPLICAS, "2:1,2:3,10:1,10:2"),
        (FOLLOWER_REPLICAS, "2:4,10:3"),
    ]
    assert throttle.topic_configs("a") == [(LEADER_REPLICAS, "0:5"), (FOLLOWER_REPLICAS, "0:6")]
    assert throttle.brokers == {1, 2, 3, 4, 5, 6}
    assert throttle.broker_configs() == [(LEADER_RATE, "1000"), (FOLLOWER_RATE, "1000")]


def test_a_move_gains_only_the_replicas_it_did_not_have() -> None:
    assert Move.between([1, 2, 3], [3, 2, 1]) == Move((1, 2, 3), ())
    assert Move.between([1], [2, 1, 3]) == Move((1,), (2, 3))
