"""The Raft shell: drives the sans-I/O :class:`~zurau.raft.node.RaftNode` on the event loop
(the part of Kafka's ``KafkaRaftClient`` that does I/O).

What it owns:

* **Time.** One timer task steps the node with a ``Tick`` at ``node.next_deadline_ms()``; every
  other input (a request, a response, a proposal) wakes it so the next deadline is recomputed.
* **Outbound messages.** Requests the node emits go to the destination voter's controller
  listener (``controller.quorum.voters``) in Kafka's own wire format (:mod:`zurau.raft.wire`). Each
  peer has two connections: one for Fetch (which the leader may hold for a long poll) and one for
  everything else, so a parked Fetch never delays a Vote. A message that cannot be delivered is
  dropped: Raft's timers resend what matters.
* **Inbound requests.** The broker's Vote / BeginQuorumEpoch / EndQuorumEpoch / Fetch handlers call
  :meth:`RaftClient.handle_request`; the node answers synchronously within the same step, so the
  response to the caller is picked out of that step's output. An empty Fetch answer is parked up to
  the request's ``max_wait_ms`` until the log or the high watermark moves (Kafka's long poll), which
  is what lets followers fetch again at once instead of backing off.
* **Commits.** Committed entries go to the listener in log order, at most once each, within the
  step that committed them; :meth:`wait_committed` resolves when the high watermark passes an
  offset and fails with :class:`NotControllerError` when this node stops leading first.

* **Addresses.** A static quorum's voters are reached at their ``controller.quorum.voters``
  address. A dynamic quorum's (KIP-853) at the endpoint their VotersRecord names for the
  controller listener; ``controller.quorum.bootstrap.servers`` are known to the node under the
  negative ids -2, -3, ... (as Kafka's bootstrap nodes), which an observer asks for the leader; a
  leader endpoint named in a response's ``NodeEndpoints`` is remembered, and a node's own answers
  name the leader's endpoint where the API version carries them.
* **Voter changes.** :meth:`change_voters` steps the leader with an AddVoter / RemoveVoter /
  UpdateVoter and waits for its result (committed or refused), up to a timeout.

Invariant: the node is only ever stepped from the event-loop thread, one input at a time.
Persistent state (the log, ``quorum-state``) is written by the node inside ``step`` before any
message that depends on it leaves, because sends only start after ``step`` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import ssl
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import AuthenticationError, ClientError
from zurau.client.security import ClientSecurity
from zurau.clock import Clock
from zurau.metadata.broker_liveness_watch import process_gone
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    InconsistentClusterIdError,
    InvalidRequestError,
    InvalidVoterKeyError,
    KafkaError,
    NotControllerError,
)
from zurau.raft import (
    Entry,
    NotLeaderError,
    Output,
    Propose,
    RaftConfig,
    RaftLog,
    RaftNode,
    Received,
    Resign,
    Role,
    RoleChange,
    Tick,
)
from zurau.raft.messages import (
    NO_DIRECTORY,
    REQUEST_TIMED_OUT,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    RaftMessage,
    RaftRequest,
    VoteResponse,
)
from zurau.raft.node import AddVoter, Event, LeaderGone, RemoveVoter, UpdateVoter, VoterChangeResult
from zurau.raft.quorum_state import QuorumStateStore
from zurau.raft.voter_set import VoterSet
from zurau.raft.wire import (
    error_response,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)

log = logging.getLogger("zurau.raft")
#: Least time between two logged refusals of this node's login by one controller.
AUTH_LOG_INTERVAL_MS = 30_000

# Responses that carry the endpoints of the leader they name (tagged NodeEndpoints, KIP-853).
_NAMES_LEADER_ENDPOINTS = frozenset(
    {ApiKey.FETCH, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH_SNAPSHOT}
)

_RESPONSE_TYPES = (
    VoteResponse,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotResponse,
)


class RaftListener(Protocol):
    def on_commit(self, entries: list[Entry]) -> None:
        """Entries newly below the high watermark, in offset order."""
        ...

    def on_role_change(self, change: RoleChange) -> None: ...

    def on_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Replace the state with a snapshot's (at start, or one fetched from the leader)."""
        ...


class RaftClient:
    """One quorum member (voter) or observer, on the event loop. See the module docstring."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        voters: Mapping[int, tuple[str, int]],
        log: RaftLog,
        store: QuorumStateStore,
        clock: Clock,
        listener: RaftListener,
        config: RaftConfig | None = None,
        fetch_max_wait_ms: int = 500,
        seed: int | None = None,
        dynamic: bool = False,
        bootstrap_servers: Sequence[tuple[str, int]] = (),
        directory_id: uuid.UUID = NO_DIRECTORY,
        controller_listener: str = "CONTROLLER",
        security: ClientSecurity | None = None,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.voter_endpoints = dict(voters)
        self.dynamic = dynamic
        self.bootstrap_servers = list(bootstrap_servers)
        self.directory_id = directory_id
        self.controller_listener = controller_listener
        # TLS/SASL of this node's connections to the controller listener (None: PLAINTEXT); the
        # controller channel's forwarding connections use it too.
        self.security = security
        self._refused_logged: dict[int, int] = {}  # controller -> when its refusal was last logged (ms)
        self._learned: dict[int, tuple[str, int]] = {}  # leader endpoints named in responses
        self._request_ids = itertools.count(1)
        self._voter_waiters: dict[int, asyncio.Future[VoterChangeResult]] = {}
        self.log = log
        self.store = store
        self.clock = clock
        self.listener = listener
        self.config = config or RaftConfig()
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self._rng = random.Random(seed)
        self.node: RaftNode | None = None
        self._wake = asyncio.Event()
        # Set (and replaced) whenever the log end or the high watermark moves: long polls wait on it.
        self._moved = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()
        self._probing: set[int] = set()  # leaders whose port is being probed (_probe_leader)
        # Per peer: one connection for Fetch (the leader may park it) and one for the rest.
        self._conns: ConnectionCache[tuple[int, str]] = ConnectionCache(
            self._new_connection, self.config.request_timeout_ms / 1000
        )
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._hw_told: dict[int, int] = {}  # replica -> high watermark in our last Fetch answer
        self._failed: OSError | None = None
        # Called once when the metadata log cannot be written (the composition root stops the node).
        self.on_fatal: Callable[[BaseException], None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        # The state machine starts from the newest snapshot; the node then commits from its end.
        snapshot = self.log.latest_snapshot()
        if snapshot is not None:
            size = self.log.snapshot_size(snapshot)
            self.listener.on_snapshot(snapshot, self.log.read_snapshot(snapshot, 0, size))
        # A dynamic quorum's voters come from the log (and its bootstrap checkpoint), not config.
        voters: Any = VoterSet() if self.dynamic else self.voter_endpoints
        self.node = RaftNode(
            self.node_id,
            voters,
            self.log,
            self.store,
            self._rng,
            self.clock.now_ms(),
            self.config,
            directory_id=self.directory_id,
            bootstrap=tuple(-(i + 2) for i in range(len(self.bootstrap_servers))),
        )
        self._timer = asyncio.get_running_loop().create_task(self._timer_loop(), name=f"zurau-raft-{self.node_id}")
        log.info(
            "raft node %d started: epoch %d, log end %d, voters %s",
            self.node_id,
            self.node.epoch,
            self.log.end_offset(),
            self.node.voter_set,
        )

    async def close(self, resign: bool = True) -> None:
        """Stop; a leader first resigns (EndQuorumEpoch) so the others elect without waiting."""
        if self._closed:
            return
        if resign and self.node is not None and self.node.role is Role.LEADER:
            with contextlib.suppress(Exception):
                self._step(Resign())
                pending = list(self._sends)
                if pending:
                    await asyncio.wait(pending, timeout=0.3)
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        for t in list(self._sends):
            t.cancel()
        if self._sends:
            await asyncio.gather(*self._sends, return_exceptions=True)
        await self._conns.close()
        self._fail_waiters(NotControllerError("the controller is shutting down"))

    # ------------------------------------------------------------------ views
    @property
    def role(self) -> Role:
        assert self.node is not None
        return self.node.role

    @property
    def is_leader(self) -> bool:
        return self.node is not None and self.node.role is Role.LEADER

    @property
    def leader_id(self) -> int | None:
        if self.node is None or self.node.role is Role.RESIGNED:
            return None
        return self.node.leader_id

    @property
    def epoch(self) -> int:
        return self.node.epoch if self.node is not None else 0

    @property
    def high_watermark(self) -> int:
        return self.node.high_watermark if self.node is not None else 0

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        """Where ``node_id``'s controller listener is (see the module docstring), or None."""
        if node_id <= -2:
            i = -node_id - 2
            return self.bootstrap_servers[i] if i < len(self.bootstrap_servers) else None
        static = self.voter_endpoints.get(node_id)
        if static is not None:
            return static
        if self.node is not None:
            voter = self.node.voter_set.get(node_id)
            if voter is not None:
                e = voter.endpoint(self.controller_listener) or voter.endpoint()
                if e is not None:
                    return e.host, e.port
        return self._learned.get(node_id)

    # ------------------------------------------------------------------ stepping
    def _step(self, event: Event) -> Output:
        assert self.node is not None
        before = (self.log.end_offset(), self.node.high_watermark)
        out = self._guarded_step(event)
        self._after_step(out, before)
        return out

    def _guarded_step(
        self, event: Event
    ) -> Output:
        """``node.step``, where a failure to write the metadata log or ``quorum-state`` (a full
        disk, an I/O error) is fatal to this node, as in Kafka: it stops taking part at once,
        rather than answer from a state it could not make durable."""
        assert self.node is not None
        if self._failed is not None:
            raise NotControllerError(f"node {self.node_id} stopped after a metadata log failure: {self._failed}")
        try:
            return self.node.step(self.clock.now_ms(), event)
        except OSError as e:
            self._fail(e)
            raise NotControllerError(f"node {self.node_id} cannot write its metadata log: {e}") from None

    def _fail(self, error: OSError) -> None:
        if self._failed is not None:
            return
        self._failed = error
        log.critical(
            "raft node %d: the metadata log or quorum-state cannot be written (%s); this node leaves the quorum",
            self.node_id,
            error,
        )
        self._closed = True
        self._wake.set()
        self._fail_waiters(NotControllerError(f"node {self.node_id} cannot write its metadata log: {error}"))
        self.listener.on_role_change(RoleChange(Role.UNATTACHED, self.epoch, None))
        if self.on_fatal is not None:
            self.on_fatal(error)

    def _after_step(self, out: Output, before: tuple[int, int], keep: RaftMessage | None = None) -> None:
        assert self.node is not None
        for send in out.sends:
            if send.message is keep or isinstance(send.message, _RESPONSE_TYPES):
                continue  # responses travel back on the request's own connection
            self._send(send.destination, send.message)
        for change in out.role_changes:
            log.info(
                "raft node %d: %s in epoch %d (leader %s)", self.node_id, change.role.value, change.epoch, change.leader_id
            )
            if change.role is not Role.LEADER:
                self._fail_waiters(NotControllerError(f"node {self.node_id} is no longer the active controller"))
            self.listener.on_role_change(change)
        if out.snapshot_loaded is not None:
            log.info("raft node %d installed snapshot %s from the leader", self.node_id, out.snapshot_loaded[0])
            self.listener.on_snapshot(*out.snapshot_loaded)
        if out.committed:
            self.listener.on_commit(out.committed)
        for result in out.voter_changes:
            waiter = self._voter_waiters.get(result.request_id)
            if waiter is not None and not waiter.done():
                waiter.set_result(result)
        if (self.log.end_offset(), self.node.high_watermark) != before:
            self._moved.set()
            self._moved = asyncio.Event()
            self._resolve_waiters()
        self._wake.set()

    async def _timer_loop(self) -> None:
        assert self.node is not None
        # Checks _closed too: a cancel that lands as wait_for completes can be lost (Python 3.11).
        while not self._closed:
            deadline = self.node.next_deadline_ms()
            now = self.clock.now_ms()
            if deadline is not None and deadline <= now:
                try:
                    self._step(Tick())
                except Exception:
                    log.exception("raft node %d: tick failed", self.node_id)
                    await asyncio.sleep(0.1)
                continue
            self._wake.clear()
            timeout = None if deadline is None else (deadline - now) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    # ------------------------------------------------------------------ outbound
    def _send(self, destination: int, message: RaftMessage) -> None:
        if self._closed or self.address_of(destination) is None:
            return
        task = asyncio.get_running_loop().create_task(self._deliver(destination, message))  # type: ignore[arg-type]
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    def _new_connection(self, key: tuple[int, str]) -> BrokerConnection:
        address = self.address_of(key[0])
        if address is None:
            raise OSError(f"no address known for node {key[0]}")
        host, port = address
        return BrokerConnection(
            host,
            port,
            client_id=f"zurau-raft-{self.node_id}",
            request_timeout=self.config.request_timeout_ms / 1000,
            node_id=key[0],
            security=self.security,
        )

    async def _deliver(self, destination: int, message: RaftRequest) -> None:
        kind = "fetch" if isinstance(message, FetchRequest) else "quorum"
        try:
            voter = self.node.voter_set.get(destination) if self.node is not None else None
            api_key, version, body = request_to_wire(
                message,
                self.cluster_id,
                fetch_max_wait_ms=self.fetch_max_wait_ms,
                destination=destination,
                destination_directory=voter.key.directory_id if voter is not None else NO_DIRECTORY,
                source_directory=self.directory_id,
            )
            conn = await self._conns.get((destination, kind))
            wire = await conn.request(api_key, body, version=version)
            response = response_from_wire(api_key, version, wire, message)
            for e in wire.get("node_endpoints") or ():
                if e["node_id"] >= 0 and e["node_id"] != self.node_id:
                    self._learned[e["node_id"]] = (e["host"], e["port"])
        except (KafkaError, ClientError, OSError) as e:
            if isinstance(e, AuthenticationError | ssl.SSLError):
                self._log_refused_login(destination, e)
            else:
                log.debug("raft node %d: %s to %d failed: %s", self.node_id, type(message).__name__, destination, e)
            await self._conns.drop((destination, kind))
            if kind == "fetch" and destination == self.leader_id:
                self._probe_leader(destination)
            return
        if self._closed:
            return
        if response.error_code == InconsistentClusterIdError.code:
            log.error(
                "raft node %d: node %d belongs to another cluster (this is %s); check its meta.properties",
                self.node_id,
                destination,
                self.cluster_id,
            )
            return
        with contextlib.suppress(NotControllerError):  # this node has failed meanwhile
            self._step(Received(destination, response))

    def _probe_leader(self, leader: int) -> None:
        """A Fetch to the leader failed: find out at once whether its process is gone (its port
        refuses connections, twice) rather than wait out ``controller.quorum.fetch.timeout.ms``
        (:class:`~zurau.raft.node.LeaderGone`). A slow, paused or unreachable leader does not
        refuse, so only the fetch timeout ends following it."""
        address = self.address_of(leader)
        if leader in self._probing or self._closed or address is None:
            return
        self._probing.add(leader)

        async def probe() -> None:
            try:
                if await process_gone(*address) and not self._closed and self.leader_id == leader:
                    log.info(
                        "raft node %d: leader %d's port %s:%d refuses connections: its process is gone",
                        self.node_id, leader, *address,
                    )
                    with contextlib.suppress(NotControllerError):
                        self._step(LeaderGone(leader))
            finally:
                self._probing.discard(leader)

        task = asyncio.get_running_loop().create_task(probe())
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    def _log_refused_login(self, destination: int, error: BaseException) -> None:
        """A controller refused this node's TLS or SASL login: an error, at most every 30 s per
        controller (the quorum retries far more often than that)."""
        now = self.clock.now_ms()
        if now - self._refused_logged.get(destination, -AUTH_LOG_INTERVAL_MS) >= AUTH_LOG_INTERVAL_MS:
            self._refused_logged[destination] = now
            log.error(
                "raft node %d: node %d refused this node's login on its controller listener (%s); check the "
                "controller listener's TLS/SASL settings and sasl.mechanism.controller.protocol",
                self.node_id, destination, error,
            )

    # ------------------------------------------------------------------ inbound
    async def handle_request(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a Vote, BeginQuorumEpoch, EndQuorumEpoch or Fetch (of ``__cluster_metadata``)."""
        if self.node is None or self._closed:
            return error_response(api_key, version, NotControllerError.code)
        try:
            decoded = request_from_wire(api_key, version, dict(body))
        except InvalidRequestError as e:
            log.warning("raft node %d: refused a malformed %s: %s", self.node_id, ApiKey(api_key).name, e)
            return error_response(api_key, version, InvalidRequestError.code)
        if decoded.cluster_id is not None and decoded.cluster_id != self.cluster_id:
            log.warning(
                "raft node %d: refused %s from node %d of cluster %r (this is %r)",
                self.node_id,
                ApiKey(api_key).name,
                decoded.source,
                decoded.cluster_id,
                self.cluster_id,
            )
            return error_response(api_key, version, InconsistentClusterIdError.code)
        if decoded.destination >= 0 and (
            decoded.destination != self.node_id
            or decoded.destination_directory not in (NO_DIRECTORY, self.directory_id)
        ):
            # KIP-853: the sender's voter set names another replica (say, this id before its disk
            # was replaced): do not let it count this node's answer as that voter's.
            log.warning(
                "raft node %d (directory %s): refused %s from node %d addressed to voter %d (directory %s)",
                self.node_id,
                self.directory_id,
                ApiKey(api_key).name,
                decoded.source,
                decoded.destination,
                decoded.destination_directory,
            )
            return error_response(api_key, version, InvalidVoterKeyError.code)
        response = self._answer(decoded.source, decoded.message)
        if isinstance(response, FetchResponse) and decoded.max_wait_ms > 0:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + min(decoded.max_wait_ms, self.fetch_max_wait_ms) / 1000
            # Park only an answer with nothing new: no records, no divergence, and a high
            # watermark this replica has already been told (a new one commits its entries).
            while (
                response is not None
                and response.error_code == 0
                and not response.records
                and response.diverging_epoch is None
                and response.high_watermark <= self._hw_told.get(decoded.source, -1)
                and not self._closed
                and (remaining := deadline - loop.time()) > 0
            ):
                moved = self._moved
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(moved.wait(), remaining)
                if self._closed:
                    break
                response = self._answer(decoded.source, decoded.message)
        if response is None:
            return error_response(api_key, version, NotControllerError.code)
        if isinstance(response, FetchResponse) and response.error_code == 0:
            self._hw_told[decoded.source] = response.high_watermark
        body = response_to_wire(api_key, version, response)
        leader = getattr(response, "leader_id", -1)
        if leader >= 0 and api_key in _NAMES_LEADER_ENDPOINTS:
            address = self.address_of(leader)
            if address is not None:
                body["node_endpoints"] = [{"node_id": leader, "host": address[0], "port": address[1]}]
        return body

    def _answer(self, source: int, message: RaftRequest) -> Any:
        assert self.node is not None
        before = (self.log.end_offset(), self.node.high_watermark)
        try:
            out = self._guarded_step(Received(source, message))
        except NotControllerError:
            return None
        reply = next(
            (s.message for s in out.sends if s.destination == source and isinstance(s.message, _RESPONSE_TYPES)),
            None,
        )
        self._after_step(out, before, keep=reply)
        return reply

    # ------------------------------------------------------------------ voter changes (KIP-853)
    async def change_voters(
        self, make: Callable[[int], AddVoter | RemoveVoter | UpdateVoter], timeout_s: float
    ) -> VoterChangeResult:
        """Step the node with the voter change ``make(request_id)`` and wait for its result: NONE
        once the new voter set is committed, the refusal, or REQUEST_TIMED_OUT after
        ``timeout_s`` (the change may still commit later)."""
        request_id = next(self._request_ids)
        fut: asyncio.Future[VoterChangeResult] = asyncio.get_running_loop().create_future()
        self._voter_waiters[request_id] = fut
        try:
            self._step(make(request_id))
            return await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except TimeoutError:
            return VoterChangeResult(request_id, REQUEST_TIMED_OUT, f"not committed within {timeout_s:.1f} s")
        finally:
            self._voter_waiters.pop(request_id, None)

    # ------------------------------------------------------------------ proposals
    def propose(self, payloads: Sequence[bytes]) -> int:
        """Append ``payloads`` as one batch on the leader; returns the batch's last offset.
        Raises NotControllerError when this node is not the leader."""
        try:
            out = self._step(Propose(tuple(payloads)))
        except NotLeaderError as e:
            raise NotControllerError(f"node {self.node_id} is not the active controller (leader {e.leader_id})") from None
        return out.appended[-1].offset

    async def wait_committed(self, offset: int) -> None:
        """Until the entry at ``offset`` is committed; NotControllerError if leadership is lost first."""
        if self.high_watermark > offset:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commit_waiters.append((offset, fut))
        await fut

    def _resolve_waiters(self) -> None:
        hw = self.high_watermark
        keep = []
        for offset, fut in self._commit_waiters:
            if fut.done():
                continue
            if hw > offset:
                fut.set_result(None)
            else:
                keep.append((offset, fut))
        self._commit_waiters = keep

    def _fail_waiters(self, exc: Exception) -> None:
        waiters, self._commit_waiters = self._commit_waiters, []
        for _offset, fut in waiters:
            if not fut.done():
                fut.set_exception(exc)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds after some step, or ``timeout`` seconds; its last value."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            moved = self._moved
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(moved.wait(), min(remaining, 0.05))
        return True
