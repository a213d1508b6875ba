"""The fault-injecting TCP proxy (zurau.testing.fault_proxy) against a small echo server on an
ephemeral port of 127.0.0.1: bytes pass through intact, a blackhole holds traffic (one direction or
both) and a heal delivers it, a reset closes every connection and refuses new ones until it ends,
a delay adds latency, and every fault ends by itself after its duration. Also the thread-hosted
form (ProxyThread, FaultNetwork) used with real processes."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.broker_process import free_port
from zurau.testing.cluster_process import CONTROLLER, REPLICATION, ClusterProcesses, replication_listener
from zurau.testing.fault_proxy import Direction, FaultKind, FaultNetwork, FaultProxy, ProxyThread

pytestmark = pytest.mark.timeout(60)


class Echo:
    """An echo server that also counts the bytes it received."""

    def __init__(self) -> None:
        self.received = 0
        self.port = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> Echo:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                self.received += len(data)
                w.write(data)
                await w.drain()
        except OSError:
            pass
        finally:
            w.close()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()


@pytest.fixture
async def echo() -> AsyncIterator[Echo]:
    e = await Echo().start()
    yield e
    await e.close()


@pytest.fixture
async def proxy(echo: Echo) -> AsyncIterator[FaultProxy]:
    p = await FaultProxy("127.0.0.1", echo.port, name="test").start()
    yield p
    await p.aclose()


async def _connect(p: FaultProxy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", p.port)


async def _roundtrip(
    r: asyncio.StreamReader, w: asyncio.StreamWriter, payload: bytes, timeout: float = 2
) -> bytes:
    w.write(payload)
    await w.drain()
    return await asyncio.wait_for(r.readexactly(len(payload)), timeout)


async def test_bytes_pass_through_intact(proxy: FaultProxy, echo: Echo) -> None:
    assert proxy.port not in (0, echo.port)
    r, w = await _connect(proxy)
    payload = os.urandom(3 * 1024 * 1024 + 17)  # several chunks and queue slots
    assert await _roundtrip(r, w, payload, timeout=10) == payload
    assert await _roundtrip(r, w, b"small") == b"small"
    assert proxy.stats.bytes_to_target == proxy.stats.bytes_from_target == len(payload) + 5
    assert proxy.connections == 1
    w.close()


async def test_blackhole_holds_traffic_and_heal_delivers_it(proxy: FaultProxy, echo: Echo) -> None:
    r, w = await _connect(proxy)
    assert await _roundtrip(r, w, b"before") == b"before"
    proxy.blackhole(duration=30)
    w.write(b"during")
    await w.drain()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(r.readexactly(6), 0.5)
    assert echo.received == 6, "nothing reached the target"
    # New connections are accepted but carry nothing either.
    r2, w2 = await _connect(proxy)
    w2.write(b"x")
    await w2.drain()
    await asyncio.sleep(0.2)
    assert echo.received == 6
    proxy.heal()
    assert await asyncio.wait_for(r.readexactly(6), 2) == b"during", (
        "held bytes flow after the heal, in order"
    )
    assert await asyncio.wait_for(r2.readexactly(1), 2) == b"x"
    assert await _roundtrip(r, w, b"after") == b"after"
    w.close()
    w2.close()


async def test_one_way_blackhole(proxy: FaultProxy, echo: Echo) -> None:
    r, w = await _connect(proxy)
    proxy.blackhole(duration=30, direction=Direction.FROM_TARGET)
    w.write(b"ping")
    await w.drain()
    for _ in range(100):
        if echo.received == 4:
            break
        await asyncio.sleep(0.01)
    assert echo.received == 4, "requests still reach the target"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(r.readexactly(4), 0.3)
    proxy.heal()
    assert await asyncio.wait_for(r.readexactly(4), 2) == b"ping"
    w.close()


async def test_a_fault_ends_by_itself_after_its_duration(proxy: FaultProxy) -> None:
    r, w = await _connect(proxy)
    started = time.monotonic()
    proxy.blackhole(duration=0.4)
    w.write(b"late")
    await w.drain()
    assert await asyncio.wait_for(r.readexactly(4), 3) == b"late"
    assert time.monotonic() - started >= 0.35
    assert proxy.fault.kind is FaultKind.PASS
    w.close()


async def test_reset_closes_connections_and_refuses_new_ones(proxy: FaultProxy) -> None:
    r, w = await _connect(proxy)
    assert await _roundtrip(r, w, b"hello") == b"hello"
    proxy.reset(duration=0.8)
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
        await asyncio.wait_for(r.readexactly(1), 2)
    # New connections are reset at once while the fault lasts.
    r2, w2 = await _connect(proxy)
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
        w2.write(b"x")
        await w2.drain()
        await asyncio.wait_for(r2.readexactly(1), 2)
    assert proxy.stats.reset >= 2
    await asyncio.sleep(0.9)  # the fault expired
    r3, w3 = await _connect(proxy)
    assert await _roundtrip(r3, w3, b"again") == b"again"
    w3.close()


async def test_delay_adds_latency(proxy: FaultProxy) -> None:
    r, w = await _connect(proxy)
    assert await _roundtrip(r, w, b"warm") == b"warm"
    proxy.delay(0.15, duration=10)
    t0 = time.monotonic()
    assert await _roundtrip(r, w, b"slow") == b"slow"
    rtt = time.monotonic() - t0
    assert 0.3 <= rtt < 2, f"both directions are delayed: {rtt:.3f} s"
    proxy.heal()
    t0 = time.monotonic()
    assert await _roundtrip(r, w, b"fast") == b"fast"
    assert time.monotonic() - t0 < 0.1
    w.close()


async def test_target_down_resets_the_client(echo: Echo) -> None:
    p = await FaultProxy("127.0.0.1", free_port()).start()
    try:
        r, w = await _connect(p)
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(r.readexactly(1), 2)
    finally:
        await p.aclose()


async def test_bad_durations_are_refused(proxy: FaultProxy) -> None:
    for bad in (0, -1, 10_000):
        with pytest.raises(ValueError):
            proxy.blackhole(duration=bad)
    assert proxy.fault.kind is FaultKind.PASS


def _blocking_roundtrip(port: int, payload: bytes, timeout: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_proxy_thread_and_network_from_synchronous_code() -> None:
    """The form used with real processes: proxies on a background loop, controlled from the test's
    thread; a network isolates a node by blackholing every link from and to it."""
    with ProxyThread() as host:
        echo = host.run(Echo().start())
        net = FaultNetwork()
        try:
            a_to_b = net.add(1, 2, "replication", echo.port)
            c_to_b = net.add(3, 2, "replication", echo.port)
            b_to_a = net.add(2, 1, "replication", echo.port)
            assert _blocking_roundtrip(a_to_b.port, b"abc", 2) == b"abc"
            net.isolate(1, duration=30)
            assert a_to_b.fault.kind is FaultKind.BLACKHOLE and b_to_a.fault.kind is FaultKind.BLACKHOLE
            assert c_to_b.fault.kind is FaultKind.PASS
            assert _blocking_roundtrip(c_to_b.port, b"c", 2) == b"c"
            with pytest.raises(TimeoutError):
                _blocking_roundtrip(a_to_b.port, b"abc", 0.3)
            net.heal()
            assert _blocking_roundtrip(a_to_b.port, b"def", 2) == b"def"
            net.partition([[1], [2, 3]], duration=30)
            assert a_to_b.fault.kind is FaultKind.BLACKHOLE and c_to_b.fault.kind is FaultKind.PASS
            net.heal()
        finally:
            net.close()
            host.run(echo.close())


def test_cluster_processes_put_every_link_behind_a_proxy(tmp_path: Path) -> None:
    """ClusterProcesses(proxy_inter_broker=True, proxy_controller=True) writes configs in which
    every node reaches every other node's replication and controller listeners through its own
    proxy (nodes are formatted, not started); the default writes no proxy at all."""
    c = ClusterProcesses(tmp_path / "proxied", controllers=3, proxy_inter_broker=True, proxy_controller=True)
    try:
        net = c.network
        assert net is not None
        assert sorted(net.links) == sorted(
            (s, d, k) for s in (1, 2, 3) for d in (1, 2, 3) if s != d for k in (CONTROLLER, REPLICATION)
        )
        props = {i: _props(c.nodes[i].config_path) for i in (1, 2, 3)}
        for i in (1, 2, 3):
            assert props[i]["inter.broker.listener.name"] == replication_listener(i)
            advertised = dict(e.split("://") for e in props[i]["advertised.listeners"].split(","))
            listening = dict(e.split("://") for e in props[i]["listeners"].split(","))
            voters = dict(v.split("@") for v in props[i]["controller.quorum.voters"].split(","))
            for j in (1, 2, 3):
                name = replication_listener(j)
                if j == i:
                    assert advertised[name] == listening[name]
                    assert voters[str(j)] == listening["CONTROLLER"]
                else:
                    link = net.link(j, i, REPLICATION)
                    assert advertised[name] == link.address
                    assert link.target_port == int(listening[name].rsplit(":", 1)[1])
                    assert voters[str(j)] == net.link(i, j, CONTROLLER).address
    finally:
        c.close()
    plain = ClusterProcesses(tmp_path / "plain", controllers=3)
    assert plain.network is None
    p1 = _props(plain.nodes[1].config_path)
    assert "inter.broker.listener.name" not in p1 and "REPLICATION" not in p1["listeners"]


def test_cluster_processes_combined_nodes_and_a_deferred_broker(tmp_path: Path) -> None:
    """``combined=True`` with ``brokers=1``: nodes 1..3 are broker+controller, node 4 a broker
    only; ``deferred=(4,)`` configures node 4 but leaves it to the test to launch; a deferred
    controller is refused (nodes are formatted, not started)."""
    c = ClusterProcesses(tmp_path / "combined", controllers=3, brokers=1, combined=True, deferred=(4,))
    assert c.broker_ids == [1, 2, 3, 4] and c.controller_ids == [1, 2, 3]
    roles = {i: _props(c.nodes[i].config_path)["process.roles"] for i in (1, 2, 3, 4)}
    assert roles == {1: "broker,controller", 2: "broker,controller", 3: "broker,controller", 4: "broker"}
    assert c.deferred == {4} and not c.nodes[4].running
    with pytest.raises(ValueError, match="deferred"):
        ClusterProcesses(tmp_path / "bad", controllers=3, brokers=1, combined=True, deferred=(2,))


def _props(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)
