"""Fast fencing of a broker whose process is gone: the active controller's liveness watch.

A broker that stops heartbeating is fenced when its session expires
(``broker.session.timeout.ms``, 9 s by default), which is the only safe rule when the controller
cannot tell a dead broker from a slow or unreachable one. But the common failure, a broker
process that crashed or was killed on a host that stays up, leaves a clear trace: the kernel
closes the process's sockets (its peers read end-of-file at once) and its port refuses new
connections. This module turns that trace into an early fence.

On the active controller, :class:`BrokerLivenessWatch` keeps one idle TCP connection to a listener
of every registered, unfenced broker (:meth:`BrokerLivenessWatch.sync` starts and stops them to
match the metadata image). Nothing is ever sent on it. When the connection ends, the watch asks
:func:`process_gone` at once:

* refused twice, ``confirm_delay_s`` apart (a listener that still completes a connection and
  ends it at once, as a dying process's can for a moment, is looked at again): the process that
  held the port is gone; report the broker dead (``on_dead(broker_id, epoch)``);
* a connection that stays open: the broker is alive (the watched connection was closed for
  another reason, such as ``connections.max.idle.ms`` or a TLS handshake timeout); watch again;
* any other failure (timeout, unreachable host, reset): nothing is known; watch again, and leave
  the decision to the session timeout.

Invariants (what keeps this from fencing a live broker):

* only a refused connection is evidence, never a timeout: a hung, paused (SIGSTOP) or
  partitioned broker never refuses a connection (the kernel accepts into the listen backlog for a
  paused process), so it keeps its full session;
* a refusal counts only once the watch has reached the broker's port in this broker epoch, or
  when the watch started for a broker that was already unfenced when this controller became
  active (``trusted``): a broker opens its listeners only after it learns it was
  unfenced, so a refusal just after unfencing means "not open yet", not "dead";
* a broker is reported dead at most once per epoch, and only for the epoch being watched (the
  caller checks the image again before fencing, so a newer incarnation is never fenced by a
  report about an older one).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger("zurau.controller")

OnDead = Callable[[int, int], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class WatchTarget:
    """What to watch for one broker: the registration's epoch and one listener's address."""

    epoch: int
    host: str
    port: int


Connected = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def connect(host: str, port: int, timeout_s: float) -> Connected | bool | None:
    """Try one TCP connection: the connection; False if refused (``ECONNREFUSED``: nothing
    listens on a host that answered); None if the outcome proves nothing (timeout, unreachable
    host, reset, name resolution)."""
    try:
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except ConnectionRefusedError:
        return False
    except OSError as e:
        return False if e.errno == errno.ECONNREFUSED else None
    except TimeoutError:
        return None


async def process_gone(
    host: str, port: int, *, timeout_s: float = 2.0, confirm_delay_s: float = 0.05, settle_s: float = 0.1, tries: int = 6
) -> bool:
    """True once ``host:port`` refuses a connection twice, ``confirm_delay_s`` apart: the process
    that listened there is gone. A connection that the peer ends within ``settle_s`` (a dying
    process's listener can still complete one for a moment) is looked at again, up to ``tries``
    times; one that stays open, a timeout or any other failure is False."""
    for _ in range(tries):
        outcome = await connect(host, port, timeout_s)
        if outcome is False:
            await asyncio.sleep(confirm_delay_s)
            outcome = await connect(host, port, timeout_s)
            if outcome is False:
                return True
        if outcome is None:
            return False
        if isinstance(outcome, tuple):
            reader, writer = outcome
            try:
                ended = await asyncio.wait_for(reader.read(1), settle_s) == b""
            except TimeoutError:
                ended = False  # still open: a live listener
            except OSError:
                ended = True  # reset: the peer went away
            finally:
                writer.close()
            if not ended:
                return False
            await asyncio.sleep(confirm_delay_s)
    return False


class _Watch:
    def __init__(self, owner: BrokerLivenessWatch, broker_id: int, target: WatchTarget, trust_refusal: bool) -> None:
        self.broker_id = broker_id
        self.target = target
        self.reached = trust_refusal  # a refusal is evidence once this is true
        self.task = asyncio.get_running_loop().create_task(owner._run(self))


class BrokerLivenessWatch:
    """See the module docstring."""

    def __init__(
        self,
        on_dead: OnDead,
        *,
        connect_timeout_s: float = 2.0,
        retry_s: float = 1.0,
        confirm_delay_s: float = 0.05,
    ) -> None:
        self._on_dead = on_dead
        self.connect_timeout_s = connect_timeout_s
        self.retry_s = retry_s
        self.confirm_delay_s = confirm_delay_s
        self._watches: dict[int, _Watch] = {}

    @property
    def watched(self) -> dict[int, WatchTarget]:
        """The brokers being watched, by id."""
        return {b: w.target for b, w in self._watches.items()}

    def sync(self, targets: Mapping[int, WatchTarget], trusted: Mapping[int, int] | None = None) -> None:
        """Watch exactly ``targets``: stop the watches of brokers not in it (or whose epoch or
        address changed) and start the missing ones. ``trusted`` (broker id to epoch): brokers
        that were unfenced in that epoch before this controller became active, so their
        listeners are open if their processes live; a new watch of one of them takes even a
        first refusal as evidence."""
        trusted = trusted or {}
        for b in [b for b, w in self._watches.items() if targets.get(b) != w.target]:
            self._stop(b)
        for b, target in targets.items():
            if b not in self._watches:
                self._watches[b] = _Watch(self, b, target, trusted.get(b) == target.epoch)

    def clear(self) -> None:
        """Stop every watch (this node is no longer the active controller)."""
        for b in list(self._watches):
            self._stop(b)

    async def close(self) -> None:
        tasks = [w.task for w in self._watches.values()]
        self.clear()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _stop(self, broker_id: int) -> None:
        w = self._watches.pop(broker_id, None)
        if w is not None:
            w.task.cancel()

    async def _run(self, w: _Watch) -> None:
        target = w.target
        while True:
            outcome = await connect(target.host, target.port, self.connect_timeout_s)
            loop = asyncio.get_running_loop()
            held_since = loop.time()
            if isinstance(outcome, tuple):
                w.reached = True
                await self._hold(*outcome)
            elif outcome is None:
                await asyncio.sleep(self.retry_s)  # nothing known: the session timeout decides
                continue
            elif not w.reached:
                await asyncio.sleep(self.retry_s / 5)  # its listener is not open yet
                continue
            # The connection ended (or a trusted broker refused): is the process gone?
            if await process_gone(
                target.host, target.port, timeout_s=self.connect_timeout_s, confirm_delay_s=self.confirm_delay_s
            ):
                log.warning(
                    "broker %d (epoch %d): its connection closed and %s:%d refuses connections",
                    w.broker_id, target.epoch, target.host, target.port,
                )
                self._watches.pop(w.broker_id, None)
                try:
                    await self._on_dead(w.broker_id, target.epoch)
                except Exception:
                    log.exception("fencing broker %d after its process went away failed", w.broker_id)
                return
            if loop.time() - held_since < self.retry_s / 5:
                await asyncio.sleep(self.retry_s)  # a live listener ending every connection at once

    @staticmethod
    async def _hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Wait until the peer ends the connection (nothing is sent either way), then close it."""
        try:
            with contextlib.suppress(OSError):
                while await reader.read(65536):
                    pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
