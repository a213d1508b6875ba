"""A broker's side of cluster membership (Kafka's ``BrokerLifecycleManager``).

Life of a broker, as KIP-631 describes it:

1. **Register** with the active controller (BrokerRegistration: node id, a fresh incarnation id
   per process start, the broker's listeners and rack, and the broker epoch its clean-shutdown
   markers name as ``previous_broker_epoch``: -1 after a kill -9, see KIP-966). The controller answers with the broker
   epoch (the offset of its RegisterBrokerRecord); the broker starts *fenced*: no partition
   leadership, not listed to clients.
2. **Heartbeat** every ``broker.heartbeat.interval.ms`` with how far it has replayed the metadata
   log. Once that offset reaches its registration the controller answers ``is_caught_up`` and
   :attr:`caught_up` is set: the broker now knows every topic and its configs, and only then
   loads its logs and applies the metadata image to them. Until it calls :meth:`ready` its
   heartbeats ask to stay fenced (``want_fence``, as Kafka's broker does until its publishers
   ran); after that the controller unfences it, :attr:`unfenced` is set and the broker opens its
   client listeners. A broker that stops heartbeating for
   ``broker.session.timeout.ms`` is fenced by the controller.
3. **Controlled shutdown**: heartbeats (every 50 ms from then on) ask to shut down. The
   controller first puts the broker *in controlled shutdown*: its leaderships move to other ISR
   members and it leaves every ISR, while it keeps serving (as a follower). Only once every other
   live broker has reported, in its own heartbeats, that it has applied those changes does the
   controller fence it and answer ``should_shut_down``; then the broker stops. Producers to a
   partition left with too few in-sync replicas get NOT_ENOUGH_REPLICAS from the new leader
   instead of waiting for a broker that is gone.

Errors are retried with a backoff: a controller election, a forwarding failure or a restart of
the active controller only delays registration. A DUPLICATE_BROKER_REGISTRATION (another live
process with this ``node.id``) is logged loudly and retried, so the second process never takes
over the first one's identity. A broker that has not registered within
``initial.broker.registration.timeout.ms`` of its start gives up (:meth:`wait_unfenced` raises
TimeoutError), as Kafka's does; once registered, it waits for as long as catching up takes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence

from zurau.metadata.features import supported_ranges
from zurau.protocol.errors import DuplicateBrokerRegistrationError
from zurau.protocol.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)

log = logging.getLogger("zurau.broker")

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

Register = Callable[[BrokerRegistrationRequest], Awaitable[BrokerRegistrationResponse]]
Heartbeat = Callable[[BrokerHeartbeatRequest], Awaitable[BrokerHeartbeatResponse]]


class BrokerLifecycleManager:
    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        endpoints: Callable[[], Sequence[tuple[str, str, int, str]]],
        rack: str | None,
        heartbeat_interval_ms: int,
        metadata_offset: Callable[[], int],
        register: Register,
        heartbeat: Heartbeat,
        previous_broker_epoch: int = -1,
    ) -> None:
        """``previous_broker_epoch``: the broker epoch this node's clean-shutdown markers name
        (-1: the last run did not end cleanly); sent in the registration (KIP-966)."""
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.incarnation_id = uuid.uuid4()
        self._endpoints = endpoints
        self._rack = rack
        self._interval = heartbeat_interval_ms / 1000
        self._metadata_offset = metadata_offset
        self._register = register
        self._heartbeat = heartbeat
        self.previous_broker_epoch = previous_broker_epoch
        self.broker_epoch = -1
        self.fenced = True
        self.unfenced = asyncio.Event()
        self.caught_up = asyncio.Event()
        self._want_fence = True
        self._task: asyncio.Task[None] | None = None
        self._shutting_down = False
        self._shut_down_ok = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"zurau-lifecycle-{self.node_id}")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None

    def registration_request(self) -> BrokerRegistrationRequest:
        return {
            "broker_id": self.node_id,
            "cluster_id": self.cluster_id,
            "incarnation_id": self.incarnation_id,
            "listeners": [
                {"name": name, "host": host, "port": port, "security_protocol": SECURITY_PROTOCOL_IDS.get(proto, 0)}
                for name, host, port, proto in self._endpoints()
            ],
            "features": [
                {"name": f.name, "min_supported_version": f.min_supported_version, "max_supported_version": f.max_supported_version}
                for f in supported_ranges()
            ],
            "rack": self._rack,
            "is_migrating_zk_broker": False,
            "log_dirs": [],
            "previous_broker_epoch": self.previous_broker_epoch,
        }

    async def _run(self) -> None:
        backoff = 0.05
        duplicate_reported = False
        while self.broker_epoch < 0:
            resp: BrokerRegistrationResponse | None
            try:
                resp = await self._register(self.registration_request())
            except Exception as e:
                log.info("broker %d: registration failed (%s); retrying", self.node_id, e)
                resp = None
            if resp is not None and resp["error_code"] == 0:
                self.broker_epoch = resp["broker_epoch"]
                log.info("broker %d registered with broker epoch %d", self.node_id, self.broker_epoch)
                break
            if resp is not None:
                code = resp["error_code"]
                if code == DuplicateBrokerRegistrationError.code:
                    # Expected for a session after a kill -9 (the old one has to expire first);
                    # a second process with this node.id never gets past it. Said once, loudly.
                    if not duplicate_reported:
                        duplicate_reported = True
                        log.error(
                            "broker %d: another live broker is registered with node.id %d (a previous run "
                            "whose session has not expired yet, or a second process with the same node.id); "
                            "retrying until that session expires",
                            self.node_id,
                            self.node_id,
                        )
                else:
                    log.info("broker %d: registration refused with error %d; retrying", self.node_id, code)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
        while True:
            await self._beat()
            if self.fenced and not self._shutting_down:
                await asyncio.sleep(min(self._interval, 0.05))  # catch up quickly, then settle
            else:
                await asyncio.sleep(self._interval)

    async def _beat(self) -> None:
        body: BrokerHeartbeatRequest = {
            "broker_id": self.node_id,
            "broker_epoch": self.broker_epoch,
            "current_metadata_offset": self._metadata_offset(),
            "want_fence": self._want_fence and not self._shutting_down,
            "want_shut_down": self._shutting_down,
            "offline_log_dirs": [],
        }
        try:
            resp = await self._heartbeat(body)
        except Exception as e:
            log.debug("broker %d: heartbeat failed: %s", self.node_id, e)
            return
        if resp["error_code"]:
            log.info("broker %d: heartbeat refused with error %d", self.node_id, resp["error_code"])
            return
        if resp.get("is_caught_up") and not self.caught_up.is_set():
            log.info("broker %d has caught up with the metadata log", self.node_id)
            self.caught_up.set()
        was_fenced = self.fenced
        self.fenced = bool(resp["is_fenced"])
        if was_fenced and not self.fenced:
            log.info("broker %d is unfenced", self.node_id)
            self.unfenced.set()
        if self._shutting_down and resp["should_shut_down"]:
            self._shut_down_ok.set()

    def ready(self) -> None:
        """The broker has applied the metadata to its logs: let the controller unfence it (the
        next heartbeat, sent at once, stops asking to stay fenced)."""
        self._want_fence = False

    async def wait_caught_up(self, registration_timeout_ms: int) -> None:
        """Wait until the controller says this broker's metadata has caught up with its
        registration. Raises TimeoutError as :meth:`wait_unfenced` does."""
        await self._wait(self.caught_up, registration_timeout_ms)

    async def wait_unfenced(self, registration_timeout_ms: int) -> None:
        """Wait until the controller unfences this broker. Raises TimeoutError when it has not
        even registered ``registration_timeout_ms`` after this call (Kafka's
        ``initial.broker.registration.timeout.ms``)."""
        await self._wait(self.unfenced, registration_timeout_ms)

    async def _wait(self, event: asyncio.Event, registration_timeout_ms: int) -> None:
        waiter = asyncio.ensure_future(event.wait())
        try:
            done, _ = await asyncio.wait({waiter}, timeout=registration_timeout_ms / 1000)
            if not done and self.broker_epoch < 0:
                raise TimeoutError(
                    f"broker {self.node_id} did not register with the controller quorum within "
                    f"{registration_timeout_ms} ms (initial.broker.registration.timeout.ms)"
                )
            await waiter
        finally:
            waiter.cancel()

    async def controlled_shutdown(self, timeout: float) -> bool:
        """Ask the controller to let this broker go; True once it agreed within ``timeout``."""
        if self.broker_epoch < 0 or self._shut_down_ok.is_set():
            return True
        self._shutting_down = True

        async def ask() -> None:
            while not self._shut_down_ok.is_set():
                await self._beat()
                if not self._shut_down_ok.is_set():
                    await asyncio.sleep(0.05)

        try:
            await asyncio.wait_for(ask(), timeout)
            return True
        except TimeoutError:
            log.warning("broker %d: the controller did not confirm the controlled shutdown", self.node_id)
            return False
