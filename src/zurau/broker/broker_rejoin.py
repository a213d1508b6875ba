"""When a broker (re)joins the live brokers, idle client connections are closed so that their
clients read Metadata again and reach it.

Why. Metadata lists only the live brokers (unfenced, as Kafka does), so a client that reads
Metadata while a broker is down -- fenced by its controlled shutdown on SIGTERM, or by the
liveness watch or its session after ``kill -9`` -- is told the cluster without it, and forgets
it: librdkafka (2.16) decommissions every learned broker absent from a Metadata answer,
kafka-python drops it from its cluster view. Neither reads Metadata again when a request is
addressed to that broker id: librdkafka's admin API waits for the broker to appear until the
request times out ("Failed while waiting for broker"), kafka-python raises
``UnknownBrokerIdError`` at once. So an idle admin client (DescribeConfigs / AlterConfigs of a
BROKER resource, DescribeLogDirs, ...) cannot reach the restarted broker until its periodic
refresh (``topic.metadata.refresh.interval.ms`` / ``metadata_max_age_ms``, 5 minutes), though the
broker serves again. Apache Kafka answers the same and its clients are stuck the same way; the
Java admin client is not, as it refreshes Metadata for a node it does not know. Both clients do
read Metadata again when a connection of theirs is closed (librdkafka when it connects again,
kafka-python at once), which is what this module uses.

Rule. When a published image has a live broker that the image before did not (a broker unfenced
after its restart, a new broker), every connection accepted on a client listener at that moment
becomes *stale*; the controller listeners are left alone. A stale connection

* stops being stale when a Metadata request arrives on it (its client is told the new brokers),
  or when it closes;
* is closed once it has been idle for ``STALE_IDLE_S`` (no request in progress, nothing left to
  send, no bytes received): a client between two requests of a steady flow, or one waiting for a
  long-polling Fetch, keeps its connection.

Stale connections are looked at every ``CHECK_S`` for ``SWEEP_S`` after the change (a later
change starts the sweep over with the connections of that moment); what is still stale then is
busy, and a busy client learns the brokers from its own Metadata requests. Closing an idle
connection is what ``connections.max.idle.ms`` does anyway: clients connect again on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterable
from typing import Protocol

from zurau.metadata.image import MetadataImage

log = logging.getLogger("zurau.connection")

#: Seconds a stale connection must have been idle to be closed.
STALE_IDLE_S = 1.0
#: Seconds between two looks at the stale connections.
CHECK_S = 0.2
#: Seconds after a broker joined during which stale connections are looked at.
SWEEP_S = 30.0


class StaleCandidate(Protocol):
    """What this module needs of a connection (:class:`~zurau.broker.connection.KafkaConnection`)."""

    listener: str
    #: Metadata requests received on the connection so far.
    metadata_requests: int

    @property
    def closed(self) -> bool: ...

    def idle_for(self, now: float) -> float: ...

    def close(self, reason: str, level: int = logging.WARNING) -> None: ...


def joined_brokers(old: MetadataImage, new: MetadataImage) -> set[int]:
    """Ids of the brokers live in ``new`` but not in ``old`` (empty when the registrations are
    the very same object, as in most images)."""
    if new.brokers is old.brokers:
        return set()
    before = {b.id for b in old.live_brokers()}
    return {b.id for b in new.live_brokers()} - before


class BrokerRejoinRefresh:
    """See the module docstring. ``connections`` gives the open connections; those accepted on a
    listener named in ``exempt`` (the controller listeners) are never closed."""

    def __init__(
        self, connections: Callable[[], Iterable[StaleCandidate]], exempt: Collection[str] = ()
    ) -> None:
        self._connections = connections
        self._exempt = frozenset(exempt)
        #: Stale connection -> its Metadata request count when it became stale.
        self.stale: dict[StaleCandidate, int] = {}
        self._sweep: asyncio.Task[None] | None = None
        self._until = 0.0

    def on_image(self, old: MetadataImage, new: MetadataImage) -> None:
        """The image listener: marks the connections stale when a broker joined."""
        joined = joined_brokers(old, new)
        if joined:
            self.mark_stale(joined)

    def mark_stale(self, joined: Collection[int] = ()) -> None:
        """Every open client connection becomes stale; the sweep runs ``SWEEP_S`` from now."""
        self.stale = {
            c: c.metadata_requests
            for c in self._connections()
            if c.listener not in self._exempt and not c.closed
        }
        self._until = time.monotonic() + SWEEP_S
        if self.stale:
            log.info(
                "broker(s) %s joined the live brokers: %d client connection(s) will be closed once idle, "
                "so that their clients read Metadata again",
                sorted(joined),
                len(self.stale),
            )
        if self._sweep is None or self._sweep.done():
            self._sweep = asyncio.get_running_loop().create_task(self._run(), name="zurau-broker-rejoin")

    def check(self, now: float) -> None:
        """One look: forget connections that are closed or were told the brokers, close the idle."""
        for conn, seen in list(self.stale.items()):
            if conn.closed or conn.metadata_requests != seen:
                del self.stale[conn]
            elif conn.idle_for(now) >= STALE_IDLE_S:
                del self.stale[conn]
                conn.close("a broker joined the live brokers: closed while idle so the client reads Metadata again",
                           logging.INFO)  # fmt: skip

    async def _run(self) -> None:
        while self.stale and time.monotonic() < self._until:
            await asyncio.sleep(CHECK_S)
            self.check(time.monotonic())
        self.stale.clear()

    async def close(self) -> None:
        task, self._sweep = self._sweep, None
        self.stale.clear()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


__all__ = ["CHECK_S", "STALE_IDLE_S", "SWEEP_S", "BrokerRejoinRefresh", "StaleCandidate", "joined_brokers"]
