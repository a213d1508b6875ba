"""The active controller's liveness watch (zurau.metadata.broker_liveness_watch) over real
sockets on 127.0.0.1: which endings of a broker's port count as a dead process, and which never do.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from zurau.metadata.broker_liveness_watch import BrokerLivenessWatch, WatchTarget, process_gone


class FakeListener:
    """An asyncio server standing in for a broker's listener; it can drop every connection it
    accepted (as a killed process's kernel does) and stop listening."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []
        self.accepted = 0

    async def start(self, port: int = 0) -> int:
        async def on_client(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            self.accepted += 1
            self.writers.append(w)

        self.server = await asyncio.start_server(on_client, "127.0.0.1", port, reuse_address=True)
        return int(self.server.sockets[0].getsockname()[1])

    def drop_connections(self) -> None:
        for w in self.writers:
            w.transport.abort()
        self.writers.clear()

    async def die(self) -> None:
        """Stop listening and drop every connection (what kill -9 leaves behind)."""
        assert self.server is not None
        self.server.close()
        self.drop_connections()
        await self.server.wait_closed()


class Deaths:
    def __init__(self) -> None:
        self.reported: list[tuple[int, int]] = []
        self.event = asyncio.Event()

    async def __call__(self, broker_id: int, epoch: int) -> None:
        self.reported.append((broker_id, epoch))
        self.event.set()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.fixture
def deaths() -> Deaths:
    return Deaths()


async def test_a_dead_process_is_reported_once_with_its_epoch(deaths: Deaths) -> None:
    listener = FakeListener()
    port = await listener.start()
    watch = BrokerLivenessWatch(deaths, retry_s=0.2)
    try:
        watch.sync({7: WatchTarget(42, "127.0.0.1", port)})
        await wait_until(lambda: listener.accepted == 1)
        await listener.die()
        await asyncio.wait_for(deaths.event.wait(), 5)
        await asyncio.sleep(0.3)
        assert deaths.reported == [(7, 42)]
        assert watch.watched == {}  # nothing left to watch for that epoch
    finally:
        await watch.close()


async def test_a_closed_connection_on_a_live_listener_is_not_death(deaths: Deaths) -> None:
    """connections.max.idle.ms or a TLS handshake timeout ends the watch's connection while the
    broker lives: the watch connects again and keeps watching."""
    listener = FakeListener()
    port = await listener.start()
    watch = BrokerLivenessWatch(deaths, retry_s=0.2)
    try:
        watch.sync({1: WatchTarget(5, "127.0.0.1", port)})
        await wait_until(lambda: listener.accepted == 1)
        listener.drop_connections()
        await wait_until(lambda: listener.accepted == 2)
        listener.drop_connections()
        await wait_until(lambda: listener.accepted >= 3)
        assert deaths.reported == []
        await listener.die()  # and it still sees the real death afterwards
        await asyncio.wait_for(deaths.event.wait(), 5)
        assert deaths.reported == [(1, 5)]
    finally:
        await watch.close()


async def test_a_paused_process_is_never_reported(deaths: Deaths) -> None:
    """A SIGSTOPped or hung process accepts nothing, but its kernel still completes connections
    into the listen backlog: no refusal, no end of file, so the session timeout decides."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)  # never accept()ed: a process that does not run
    port = int(s.getsockname()[1])
    watch = BrokerLivenessWatch(deaths, retry_s=0.1, connect_timeout_s=0.2)
    try:
        watch.sync({3: WatchTarget(1, "127.0.0.1", port)})
        await asyncio.sleep(1.0)
        assert deaths.reported == []
        assert 3 in watch.watched
    finally:
        await watch.close()
        s.close()


async def test_a_listener_not_open_yet_is_not_death_unless_trusted(deaths: Deaths) -> None:
    """A broker opens its listeners only after it learns it was unfenced: refusals before the
    watch ever reached the port are not evidence, unless the broker was already unfenced when
    this controller became active (``trusted``, same epoch)."""
    port = free_port()
    watch = BrokerLivenessWatch(deaths, retry_s=0.1)
    try:
        watch.sync({2: WatchTarget(9, "127.0.0.1", port)}, trusted={2: 8})  # another epoch
        await asyncio.sleep(0.6)
        assert deaths.reported == []
        listener = FakeListener()
        await listener.start(port)  # it opens: watched from now on
        await wait_until(lambda: listener.accepted >= 1)
        await listener.die()
        await asyncio.wait_for(deaths.event.wait(), 5)
        assert deaths.reported == [(2, 9)]

        deaths.event.clear()
        watch.sync({4: WatchTarget(3, "127.0.0.1", free_port())}, trusted={4: 3})
        await asyncio.wait_for(deaths.event.wait(), 5)
        assert deaths.reported[-1] == (4, 3)
    finally:
        await watch.close()


async def test_sync_follows_the_image(deaths: Deaths) -> None:
    """A broker that left the targets (fenced, unregistered) stops being watched; a new epoch
    starts a new watch; clear() (no longer the active controller) stops all."""
    a, b = FakeListener(), FakeListener()
    pa, pb = await a.start(), await b.start()
    watch = BrokerLivenessWatch(deaths, retry_s=0.2)
    try:
        watch.sync({1: WatchTarget(1, "127.0.0.1", pa), 2: WatchTarget(1, "127.0.0.1", pb)})
        await wait_until(lambda: a.accepted == 1 and b.accepted == 1)
        watch.sync({1: WatchTarget(1, "127.0.0.1", pa)})
        assert set(watch.watched) == {1}
        await b.die()  # not watched any more: no report
        watch.sync({1: WatchTarget(2, "127.0.0.1", pa)})  # re-registered: a new watch
        await wait_until(lambda: a.accepted == 2)
        watch.clear()
        assert watch.watched == {}
        await a.die()
        await asyncio.sleep(0.5)
        assert deaths.reported == []
    finally:
        await watch.close()


async def test_process_gone_needs_a_refusal_and_looks_past_a_dying_listener() -> None:
    """The Raft shell's probe of a leader whose Fetch failed: a port nothing listens on is gone;
    a live listener is not; a listener that still completes connections but ends them at once
    (a process being torn down) is looked at again until it refuses."""
    assert await process_gone("127.0.0.1", free_port())
    live = FakeListener()
    port = await live.start()
    try:
        assert not await process_gone("127.0.0.1", port)
    finally:
        await live.die()

    dying_port = free_port()
    ended = 0

    async def end_at_once(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal ended
        ended += 1
        w.transport.abort()
        if ended == 2:
            server.close()  # then the port refuses

    server = await asyncio.start_server(end_at_once, "127.0.0.1", dying_port, reuse_address=True)
    assert await process_gone("127.0.0.1", dying_port)
    assert ended == 2
