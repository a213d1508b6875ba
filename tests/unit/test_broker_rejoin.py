"""zurau.broker.broker_rejoin: which brokers joined between two images, and which connections a
sweep closes (idle ones that were not told the brokers since), with fake connections."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from zurau.broker import broker_rejoin
from zurau.broker.broker_rejoin import STALE_IDLE_S, BrokerRejoinRefresh, joined_brokers
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    FENCING_FENCE,
    FENCING_UNFENCE,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    RegisterBrokerRecord,
)

EMPTY = MetadataImage("test-cluster")


def _register(broker_id: int, epoch: int, fenced: bool) -> RegisterBrokerRecord:
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id, 0)
    return RegisterBrokerRecord(broker_id, uuid.UUID(int=broker_id), epoch, (endpoint,), fenced=fenced)


def _three_live() -> MetadataImage:
    return EMPTY.apply([_register(b, 10 + b, fenced=False) for b in (1, 2, 3)], last_offset=10)


def test_joined_brokers_are_those_live_now_and_not_before() -> None:
    live = _three_live()
    assert joined_brokers(EMPTY, live) == {1, 2, 3}
    assert joined_brokers(live, live.apply([], last_offset=11)) == set(), "same registrations"
    down = live.apply([BrokerRegistrationChangeRecord(1, 11, fenced=FENCING_FENCE)], last_offset=11)
    assert joined_brokers(live, down) == set(), "a broker leaving joins nothing"
    # The restarted broker registers again (fenced), then is unfenced: it joins at the unfence.
    again = down.apply([_register(1, 20, fenced=True)], last_offset=12)
    assert joined_brokers(down, again) == set()
    back = again.apply([BrokerRegistrationChangeRecord(1, 20, fenced=FENCING_UNFENCE)], last_offset=13)
    assert joined_brokers(again, back) == {1}


class FakeConnection:
    def __init__(self, listener: str = "PLAINTEXT", idle: float = 60.0) -> None:
        self.listener = listener
        self.metadata_requests = 0
        self.idle = idle
        self.closed = False
        self.reasons: list[str] = []

    def idle_for(self, now: float) -> float:
        return self.idle

    def close(self, reason: str, level: int = logging.WARNING) -> None:
        self.closed = True
        self.reasons.append(reason)


async def test_idle_connections_not_told_the_brokers_are_closed() -> None:
    idle, busy, told, controller = FakeConnection(), FakeConnection(idle=0.0), FakeConnection(), FakeConnection("CONTROLLER")  # fmt: skip
    conns = [idle, busy, told, controller]
    refresh = BrokerRejoinRefresh(lambda: conns, exempt={"CONTROLLER"})
    try:
        refresh.on_image(EMPTY.apply([], last_offset=1), EMPTY.apply([], last_offset=2))
        assert refresh.stale == {}, "no broker joined: nothing is stale"
        refresh.mark_stale({1})
        assert set(refresh.stale) == {idle, busy, told}, "controller listeners are exempt"
        late = FakeConnection()  # accepted after the change: its client reads Metadata when it connects
        conns.append(late)
        told.metadata_requests += 1  # a Metadata request arrived: its client is told the brokers
        refresh.check(0.0)
        assert idle.closed and idle.reasons and not busy.closed and not told.closed and not late.closed
        assert set(refresh.stale) == {busy}
        busy.idle = STALE_IDLE_S  # idle long enough at the next look
        refresh.check(0.0)
        assert busy.closed and refresh.stale == {}
    finally:
        await refresh.close()


async def test_the_sweep_runs_on_the_loop_and_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_rejoin, "CHECK_S", 0.01)
    monkeypatch.setattr(broker_rejoin, "SWEEP_S", 0.2)
    idle, busy = FakeConnection(), FakeConnection(idle=0.0)
    refresh = BrokerRejoinRefresh(lambda: [idle, busy])
    refresh.on_image(EMPTY, _three_live())
    assert set(refresh.stale) == {idle, busy}
    for _ in range(100):
        await asyncio.sleep(0.01)
        if not refresh.stale:
            break
    assert idle.closed and not busy.closed, "a connection that stays busy is kept"
    assert refresh.stale == {}, "the sweep ends after SWEEP_S"
    await refresh.close()
