"""confluent-kafka (librdkafka) uses OffsetForLeaderEpoch to validate a position (KIP-320).

librdkafka validates a fetch position that carries a leader epoch (an ``assign`` or ``seek`` with
``leader_epoch``, a committed offset with its epoch, or a leader epoch change seen in metadata)
before it fetches: it asks the leader where that epoch ends, and a position beyond that end means
the log was truncated under the consumer, which then resumes from the epoch's end offset. It does
so only when the broker advertises OffsetForLeaderEpoch v2+; before Zurau had the handler the
consumer skipped validation.

The requests librdkafka sends are observed inside the embedded broker (same process) by wrapping
the handler's per-partition function.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import zurau.broker.handlers.offset_for_leader_epoch as ofle

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str, dict[str, Any], dict[str, Any]]]:
    """(api version, topic, requested partition, answered partition) per partition asked."""
    calls: list[tuple[int, str, dict[str, Any], dict[str, Any]]] = []
    real = ofle._partition

    def spy(ctx: Any, image: Any, topic: str, rp: dict[str, Any]) -> dict[str, Any]:
        out = real(ctx, image, topic, rp)
        calls.append((ctx.api_version, topic, dict(rp), dict(out)))
        return out

    monkeypatch.setattr(ofle, "_partition", spy)
    return calls


def _produce(bootstrap: str, topic: str, n: int, prefix: bytes = b"v") -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=prefix + b"%d" % i, partition=0)
    assert p.flush(30) == 0


def _consumer(bootstrap: str) -> Any:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ofle-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )


def _asked_for(seen: list, topic: str) -> list[tuple[int, str, dict[str, Any], dict[str, Any]]]:
    return [c for c in seen if c[1] == topic]


def test_a_position_with_an_epoch_is_validated_then_consumed(
    zurau_broker: EmbeddedBroker, zurau_topic: str, seen: list
) -> None:
    bootstrap, topic = zurau_broker.bootstrap_servers, zurau_topic
    _produce(bootstrap, topic, 10)
    c = _consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, 4, leader_epoch=0)])
        got: list[tuple[int, int | None]] = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            got.append((m.offset(), m.leader_epoch()))
    finally:
        c.close()
    assert got == [(o, 0) for o in range(4, 10)]
    asked = _asked_for(seen, topic)
    assert asked, "librdkafka did not send OffsetForLeaderEpoch"
    version, _, request, answer = asked[0]
    assert 2 <= version <= 4
    assert (request["partition"], request["leader_epoch"], request["current_leader_epoch"]) == (0, 0, 0)
    assert answer == {"partition": 0, "error_code": 0, "leader_epoch": 0, "end_offset": 10}


def test_a_position_beyond_the_end_of_its_epoch_is_truncation(
    zurau_broker: EmbeddedBroker, zurau_topic: str, seen: list
) -> None:
    """Offset 15 in epoch 0, which ends at 10: the consumer resumes at 10, not at the earliest
    offset (which a plain out-of-range fetch position would reset to with this config)."""
    bootstrap, topic = zurau_broker.bootstrap_servers, zurau_topic
    _produce(bootstrap, topic, 10)
    c = _consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, 15, leader_epoch=0)])
        deadline = time.monotonic() + 30
        while not _asked_for(seen, topic) and time.monotonic() < deadline:
            c.poll(0.1)
        assert _asked_for(seen, topic), "librdkafka did not send OffsetForLeaderEpoch"
        _produce(bootstrap, topic, 1, prefix=b"after-")
        first = None
        while first is None and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                first = m
    finally:
        c.close()
    assert first is not None, "nothing consumed after the truncation was detected"
    assert (first.offset(), first.value()) == (10, b"after-0")
    _, _, request, answer = _asked_for(seen, topic)[0]
    assert request["leader_epoch"] == 0
    assert (answer["error_code"], answer["leader_epoch"], answer["end_offset"]) == (0, 0, 10)
