"""The controller channel of a cluster node: metadata through the Raft quorum (KRaft).

Every node (controller or broker) follows ``__cluster_metadata`` through its
:class:`~zurau.metadata.raft_client.RaftClient` and builds its image from **committed** entries
only: one entry is one metadata record, one batch is one controller result, and a batch is
applied whole (entries are buffered until the batch's last one commits), so readers never see half
of a result. Listeners get ``(old, new)`` for every image, as on a single node.

**The active controller** is the Raft leader once it is *activated*: after it has committed the
leader-change entry of its epoch, everything in its log is committed and applied, so its image is
the whole history. From then on it keeps a second, *speculative* image that includes its own
uncommitted results: each request runs the pure
:class:`~zurau.metadata.controller.quorum_controller.QuorumController` against it, the records are proposed as one
batch, and the response is given once that batch is committed. Requests are decided one at a
time on the event loop, so two results never interleave. When it loses leadership it fails the
waiting requests with NOT_CONTROLLER and drops the speculative image. An active controller that
finds no metadata record in the log first proposes its bootstrap records (the feature levels and
what ``zurau storage format`` wrote; see :mod:`zurau.metadata.bootstrap_metadata`), so they are
the log's first batch; one that finds metadata but no ``metadata.version`` (a log an earlier Zurau
wrote) first proposes the feature levels (:func:`~zurau.metadata.features.upgrade_feature_records`).

**Any other node** forwards the request to the active controller's controller listener (as
Kafka's brokers forward admin requests), in Kafka's own API at our newest version, and returns its
answer. A request that arrived on a controller listener is never forwarded again (see
:meth:`RaftControllerChannel.without_forwarding`): a node that is not the active controller
answers it with NOT_CONTROLLER, and the forwarding node retries against the new controller until
its deadline, so a request never circulates between controllers.

**Broker liveness** is the active controller's: heartbeats refresh a broker's session
(``broker.session.timeout.ms``); a maintenance tick fences brokers whose session expired. A new
active controller gives every registered broker a fresh session.

Synchronous requests from the broker itself (auto-created topics, coordinator topics, producer-id
blocks) cannot wait for a quorum: they start the work in the background and answer with a
retriable error (LEADER_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS), which Kafka's clients retry,
as they do against Kafka while a topic is being created.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.typed_api import (
    ALLOCATE_PRODUCER_IDS,
    ALTER_CLIENT_QUOTAS,
    ALTER_CONFIGS,
    ALTER_PARTITION,
    ALTER_PARTITION_REASSIGNMENTS,
    ALTER_USER_SCRAM_CREDENTIALS,
    BROKER_HEARTBEAT,
    BROKER_REGISTRATION,
    CREATE_ACLS,
    CREATE_DELEGATION_TOKEN,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_ACLS,
    DELETE_TOPICS,
    DESCRIBE_DELEGATION_TOKEN,
    ELECT_LEADERS,
    EXPIRE_DELEGATION_TOKEN,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_PARTITION_REASSIGNMENTS,
    RENEW_DELEGATION_TOKEN,
    UNREGISTER_BROKER,
    UPDATE_FEATURES,
)
from zurau.clock import Clock
from zurau.metadata.controller.broker_heartbeat_manager import BrokerHeartbeatManager
from zurau.metadata.controller.config_control import ConfigResource, ConfigResult, config_result
from zurau.metadata.controller.feature_control import FeatureUpdate, FeatureUpdateOutcome
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.controller.replication_control import create_topic_error
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.delegation_token import (
    find_by_hmac,
    owner_or_renewer,
    principal,
    secret_key,
    split_principal,
)
from zurau.metadata.features import upgrade_feature_records
from zurau.metadata.image import MetadataImage
from zurau.metadata.raft_client import RaftClient
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import FeatureLevelRecord, MetadataRecord
from zurau.protocol.errors import (
    CoordinatorLoadInProgressError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    KafkaError,
    LeaderNotAvailableError,
    NotControllerError,
    RequestTimedOutError,
    for_code,
)
from zurau.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntries,
    AlterClientQuotasResponseEntries,
    AlterConfigsRequestResources,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestTopics,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestDeletions,
    AlterUserScramCredentialsRequestUpsertions,
    AlterUserScramCredentialsResponseResults,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateAclsRequestCreations,
    CreateAclsResponseResults,
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopics,
    CreatePartitionsResponseResults,
    CreateTopicsRequest,
    CreateTopicsRequestTopics,
    CreateTopicsResponse,
    CreateTopicsResponseTopics,
    DeleteAclsRequestFilters,
    DeleteAclsResponseFilterResults,
    DeleteTopicsRequest,
    DeleteTopicsResponseResponses,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ElectLeadersResponseReplicaElectionResults,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestResources,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponse,
    UnregisterBrokerResponse,
    UpdateFeaturesRequest,
)
from zurau.protocol.primitives import DecodeError
from zurau.raft import Entry, OffsetAndEpoch, Role, RoleChange

log = logging.getLogger("zurau.controller")

T = TypeVar("T")
ImageListener = Callable[[MetadataImage, MetadataImage], None]

FORWARD_TIMEOUT_S = 30.0  # how long a forwarded request keeps looking for an active controller
_RETRY_BACKOFF_S = 0.1


class RaftControllerChannel:
    """See the module docstring."""

    def __init__(
        self,
        *,
        node_id: int,
        controller: QuorumController,
        image: MetadataImage,
        clock: Clock,
        session_timeout_ms: int,
        forwarding: bool = True,
        snapshot_bytes: int = 20 * 1024 * 1024,
        snapshot_interval_ms: int = 3_600_000,
        bootstrap_records: Sequence[MetadataRecord] = (),
    ) -> None:
        """``bootstrap_records``: this controller's bootstrap metadata
        (:mod:`zurau.metadata.bootstrap_metadata`), written first if it leads an empty log."""
        self.node_id = node_id
        self.controller = controller
        self.clock = clock
        self._image = image
        self._listeners: list[ImageListener] = []
        self._batch: list[Entry] = []
        self.raft: RaftClient | None = None  # set by the composition root before start
        self._forwarding = forwarding
        self._parent: RaftControllerChannel | None = None
        self._local_view: RaftControllerChannel | None = None
        # Active controller state.
        self._activation_offset: int | None = None  # leader: active once the HW passes it
        self._active = False
        self._speculative: MetadataImage | None = None
        self._bootstrap: tuple[MetadataRecord, ...] = tuple(bootstrap_records)
        self._bootstrap_pending = False  # an activation waits for the end of the Raft step
        self.heartbeats = BrokerHeartbeatManager(session_timeout_ms)
        # A forwarded heartbeat that gets no answer within this long is sent again (to whichever
        # node is the active controller by then): one stuck on a controller cut off by the network
        # must not outlive the broker's session at the new one.
        self._heartbeat_forward_timeout_s = max(0.2, session_timeout_ms / 3000)
        self._conns: ConnectionCache[int] = ConnectionCache(self._new_connection, 5.0)
        self._background: set[asyncio.Task[Any]] = set()
        self._creating: set[str] = set()
        # Snapshots: bytes of metadata applied since the last one, and the epoch of the last
        # applied entry (the snapshot id's epoch).
        self.snapshot_bytes = snapshot_bytes
        self.snapshot_interval_ms = snapshot_interval_ms
        self._last_snapshot_ms: int | None = None
        self._bytes_since_snapshot = 0
        self._applied_epoch = 0
        self._snapshotting = False
        self._next_balance_ms: int | None = None  # the next auto leader rebalance check
        self._next_token_sweep_ms: int | None = None  # the next expired delegation token check
        # Broker id -> epoch of the brokers unfenced when this node last became active.
        self.unfenced_at_activation: dict[int, int] = {}

    # ------------------------------------------------------------------ views
    @property
    def image(self) -> MetadataImage:
        return self._root._image

    @property
    def _root(self) -> RaftControllerChannel:
        return self._parent if self._parent is not None else self

    @property
    def active(self) -> bool:
        return self._root._active

    def add_listener(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    def without_forwarding(self) -> RaftControllerChannel:
        """A view of this channel for requests that came in on a controller listener."""
        if not self._forwarding:
            return self
        if self._local_view is None:
            view = RaftControllerChannel.__new__(RaftControllerChannel)
            view.__dict__.update(self.__dict__)
            view._forwarding = False
            view._parent = self
            self._local_view = view
        return self._local_view

    def controller_id(self) -> int:
        """The active controller's id as far as this node knows (-1 if none)."""
        raft = self._root.raft
        if raft is None:
            return -1
        leader = raft.leader_id
        return -1 if leader is None else leader

    # ------------------------------------------------------------------ RaftListener
    def on_commit(self, entries: list[Entry]) -> None:
        """Apply every batch completed by ``entries`` as one step: the image moves once and the
        listeners hear one (old, new) for all of them (a catching-up node gets many batches at a
        time; applying them one by one would copy the image per batch)."""
        records: list[MetadataRecord] = []
        last_offset = -1
        for e in entries:
            self._batch.append(e)
            if e.last_in_batch:
                batch, self._batch = self._batch, []
                if batch[0].control:
                    continue
                records.extend(self._decode(batch))
                last_offset = batch[-1].offset
        if records:
            old = self._image
            self._image = old.apply(records, last_offset)
            for listener in self._listeners:
                try:
                    listener(old, self._image)
                except Exception:
                    log.exception("metadata listener failed at offset %d", last_offset)
        self._maybe_activate()
        self._maybe_snapshot()

    def on_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Replace the image by a snapshot's (the newest one at start, or one fetched from the
        leader because this node fell behind the leader's log start)."""
        from zurau.metadata.snapshot import image_from_snapshot

        old = self._image
        self._image = image_from_snapshot(old.cluster_id, data, snapshot.offset - 1)
        self._batch = []
        self._applied_epoch = snapshot.epoch
        self._bytes_since_snapshot = 0
        log.info("metadata image loaded from snapshot %d-%d", snapshot.offset, snapshot.epoch)
        for listener in self._listeners:
            try:
                listener(old, self._image)
            except Exception:
                log.exception("metadata listener failed on snapshot %s", snapshot)

    def _maybe_snapshot(self) -> None:
        """Snapshot the committed image once enough metadata has been applied since the last one
        (``metadata.log.max.record.bytes.between.snapshots``), or some was applied and the last
        snapshot is older than ``metadata.log.max.snapshot.interval.ms`` (0: never by time);
        then drop the log before it."""
        if self._snapshotting or self.raft is None or self._bytes_since_snapshot == 0:
            return
        now = self.clock.now_ms()
        if self._last_snapshot_ms is None:
            self._last_snapshot_ms = now
        by_time = 0 < self.snapshot_interval_ms <= now - self._last_snapshot_ms
        if self._bytes_since_snapshot < self.snapshot_bytes and not by_time:
            return
        self._last_snapshot_ms = now
        self._snapshotting = True
        self._spawn(self._snapshot())

    async def _snapshot(self) -> None:
        from zurau.metadata.snapshot import encode_snapshot

        assert self.raft is not None
        raft = self.raft
        try:
            image = self._image
            snapshot = OffsetAndEpoch(image.offset + 1, self._applied_epoch)
            latest = raft.log.latest_snapshot()
            if image.offset < 0 or (latest is not None and latest.offset >= snapshot.offset):
                return
            self._bytes_since_snapshot = 0
            loop = asyncio.get_running_loop()
            node = raft.node
            # A dynamic quorum's snapshot carries its voter set (KIP-853), as Kafka's does.
            voters = node.voters_at(snapshot.offset) if node is not None and node.dynamic else None
            data = await loop.run_in_executor(None, encode_snapshot, image, self.clock.now_ms(), voters or None)
            latest = raft.log.latest_snapshot()
            if raft.log.start_offset() > snapshot.offset or (latest is not None and latest.offset >= snapshot.offset):
                return  # a snapshot from the leader was installed meanwhile
            # On the loop thread: the log is not shared with other threads (the file write and
            # its fsync take milliseconds, once per snapshot).
            raft.log.create_snapshot(snapshot, data)
            raft.log.delete_before(snapshot.offset)
            log.info(
                "metadata snapshot %d-%d written (%d bytes); log before it deleted",
                snapshot.offset,
                snapshot.epoch,
                len(data),
            )
        except Exception:
            log.exception("taking a metadata snapshot failed")
        finally:
            self._snapshotting = False

    def _decode(self, batch: list[Entry]) -> list[MetadataRecord]:
        self._applied_epoch = batch[-1].epoch
        self._bytes_since_snapshot += sum(len(e.payload) for e in batch)
        try:
            return [decode_record(e.payload) for e in batch]
        except DecodeError as e:
            # A record this version cannot read: skipping it would diverge from the other nodes.
            log.critical("metadata batch at offset %d is unreadable: %s", batch[0].offset, e)
            raise

    def on_role_change(self, change: RoleChange) -> None:
        if change.role is Role.LEADER:
            assert self.raft is not None
            # The leader-change entry is the last one in the log now.
            self._activation_offset = self.raft.log.end_offset()
            self._maybe_activate()
            return
        if self._active:
            log.info("node %d is no longer the active controller (epoch %d)", self.node_id, change.epoch)
        self._active = False
        self._activation_offset = None
        self._speculative = None

    def _maybe_activate(self) -> None:
        if self._active or self._activation_offset is None or self.raft is None:
            return
        if self.raft.high_watermark >= self._activation_offset and not self._batch:
            if self._bootstrap and self._image.offset >= 0:
                self._bootstrap = ()  # the log holds metadata: it never bootstraps again
            if not self._first_records():
                self._activate()
            elif not self._bootstrap_pending:
                # Decided once the Raft step that got here has handed over all it committed
                # (commits are delivered after role changes), and outside that step.
                self._bootstrap_pending = True
                asyncio.get_running_loop().call_soon(self._activate_with_bootstrap, self._activation_offset)

    def _activate_with_bootstrap(self, activation_offset: int) -> None:
        """Activate, first proposing the bootstrap records when the log holds no metadata record
        yet (see :mod:`zurau.metadata.bootstrap_metadata`): they are then the log's first metadata
        batch, and every request is decided on an image that includes them."""
        self._bootstrap_pending = False
        raft = self.raft
        if self._active or raft is None or not raft.is_leader:
            return  # a later role change decides again
        if self._activation_offset != activation_offset:
            self._maybe_activate()  # this node leads a newer epoch now: decide for that one
            return
        if raft.high_watermark < activation_offset or self._batch:
            return  # the next commit calls _maybe_activate again
        if self._image.offset >= 0:
            self._bootstrap = ()
        records = self._first_records()
        if not records:
            self._activate()
            return
        try:
            last = raft.propose([encode_record(r) for r in records])
        except KafkaError as e:
            log.warning("node %d could not write its bootstrap metadata: %s", self.node_id, e)
            return
        if self._image.offset < 0:
            log.info(
                "node %d found the metadata log empty: wrote %d bootstrap metadata records (offset %d)",
                self.node_id,
                len(records),
                last,
            )
        else:
            log.info(
                "node %d found no feature levels in the metadata log (written by an earlier Zurau): "
                "finalizing %s (offset %d)",
                self.node_id,
                {r.name: r.feature_level for r in records if isinstance(r, FeatureLevelRecord)},
                last,
            )
        self._activate()
        assert self._speculative is not None
        self._speculative = self._speculative.apply(records, last)

    def _first_records(self) -> list[MetadataRecord]:
        """What a new active controller proposes before deciding anything: its bootstrap records
        on a log with no metadata, the feature levels on a log an earlier Zurau wrote without
        them (see :mod:`zurau.metadata.bootstrap_metadata`), else nothing."""
        if self._image.offset < 0:
            return list(self._bootstrap)
        return list(upgrade_feature_records(self._image))

    def _activate(self) -> None:
        assert self.raft is not None
        self._active = True
        self._speculative = self._image
        now = self.clock.now_ms()
        self.heartbeats.reset(self._image.brokers.keys(), now)
        self.unfenced_at_activation = {b: r.epoch for b, r in self._image.brokers.items() if not r.fenced}
        log.info(
            "node %d is the active controller in epoch %d (metadata offset %d)",
            self.node_id,
            self.raft.epoch,
            self._image.offset,
        )

    # ------------------------------------------------------------------ the active controller
    async def _run(self, op: Callable[[MetadataImage], ControllerResult[T]]) -> T:
        root = self._root
        assert root.raft is not None and root._speculative is not None
        result = op(root._speculative)
        if not result.records:
            return result.response
        try:
            last = root.raft.propose([encode_record(r) for r in result.records])
        except KafkaError as e:
            if e.code != NotControllerError.code:
                # Refused before anything was appended (e.g. a batch over segment.bytes): the
                # log and the speculative image are unchanged, only this request fails.
                log.error("the metadata log refused a batch of %d records: %s", len(result.records), e)
            raise
        root._speculative = root._speculative.apply(result.records, last)
        await root.raft.wait_committed(last)
        return result.response

    def _next_offset(self) -> int:
        raft = self._root.raft
        assert raft is not None
        return raft.log.end_offset()

    async def _decide(
        self,
        local: Callable[[MetadataImage], ControllerResult[T]],
        forward: Callable[[BrokerConnection], Awaitable[T | None]],
        refuse: Callable[[int, str], T],
    ) -> T:
        """Run ``local`` on the active controller, else ``forward`` to it; ``refuse(code, msg)``
        builds the answer when no active controller answers in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORWARD_TIMEOUT_S
        last_error = "no active controller"
        while True:
            if self.active:
                try:
                    return await self._run(local)
                except KafkaError as e:
                    if e.code != NotControllerError.code:
                        raise
                    last_error = str(e)
            elif self._forwarding:
                leader = self.controller_id()
                if leader >= 0 and leader != self.node_id:
                    try:
                        answer = await forward(await self.connection_to(leader))
                        if answer is not None:
                            return answer
                        last_error = f"node {leader} is no longer the active controller"
                    except (KafkaError, ClientError, OSError) as e:
                        last_error = f"forwarding to node {leader} failed: {e}"
                        await self.drop_connection(leader)
            else:
                return refuse(NotControllerError.code, f"node {self.node_id} is not the active controller")
            if loop.time() >= deadline:
                return refuse(RequestTimedOutError.code, f"no active controller answered within {FORWARD_TIMEOUT_S:.0f} s: {last_error}")
            await asyncio.sleep(_RETRY_BACKOFF_S)

    def _new_connection(self, leader: int) -> BrokerConnection:
        raft = self._root.raft
        assert raft is not None
        address = raft.address_of(leader)
        if address is None:
            raise OSError(f"no address known for controller {leader}")
        host, port = address
        return BrokerConnection(
            host, port, client_id=f"zurau-forward-{self.node_id}", node_id=leader, security=raft.security
        )

    async def connection_to(self, leader: int) -> BrokerConnection:
        return await self._root._conns.get(leader)

    async def drop_connection(self, leader: int) -> None:
        await self._root._conns.drop(leader)

    async def close(self) -> None:
        for t in list(self._background):
            t.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self._conns.close()

    # ------------------------------------------------------------------ admin requests
    async def create_topics(self, topics: list[CreateTopicsRequestTopics], validate_only: bool) -> CreateTopicsResponse:
        async def forward(conn: BrokerConnection) -> CreateTopicsResponse | None:
            body: CreateTopicsRequest = {
                "topics": topics, "timeout_ms": int(FORWARD_TIMEOUT_S * 1000), "validate_only": validate_only
            }
            resp = await conn.call(CREATE_TOPICS(body))
            return None if _all_not_controller(resp["topics"]) else resp

        def refuse(code: int, msg: str) -> CreateTopicsResponse:
            return {"throttle_time_ms": 0, "topics": [create_topic_error(t["name"], code, msg) for t in topics]}

        return await self._decide(
            lambda image: self.controller.create_topics(image, topics, validate_only), forward, refuse
        )

    async def delete_topics(
        self, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> list[DeleteTopicsResponseResponses]:
        async def forward(conn: BrokerConnection) -> list[DeleteTopicsResponseResponses] | None:
            body: DeleteTopicsRequest = {
                "topics": [{"name": n, "topic_id": i} for n, i in requested],
                "topic_names": [n for n, _ in requested if n is not None],
                "timeout_ms": int(FORWARD_TIMEOUT_S * 1000),
            }
            out = (await conn.call(DELETE_TOPICS(body)))["responses"]
            return None if _all_not_controller(out) else out

        def refuse(code: int, msg: str) -> list[DeleteTopicsResponseResponses]:
            return [{"name": n, "topic_id": i, "error_code": code, "error_message": msg} for n, i in requested]

        return await self._decide(
            lambda image: self.controller.delete_topics(image, requested, version), forward, refuse
        )

    async def create_partitions(
        self, topics: list[CreatePartitionsRequestTopics], validate_only: bool
    ) -> list[CreatePartitionsResponseResults]:
        async def forward(conn: BrokerConnection) -> list[CreatePartitionsResponseResults] | None:
            body: CreatePartitionsRequest = {
                "topics": topics, "timeout_ms": int(FORWARD_TIMEOUT_S * 1000), "validate_only": validate_only
            }
            out = (await conn.call(CREATE_PARTITIONS(body)))["results"]
            return None if _all_not_controller(out) else out

        def refuse(code: int, msg: str) -> list[CreatePartitionsResponseResults]:
            return [{"name": t["name"], "error_code": code, "error_message": msg} for t in topics]

        return await self._decide(
            lambda image: self.controller.create_partitions(image, topics, validate_only), forward, refuse
        )

    async def alter_configs(
        self, resources: list[AlterConfigsRequestResources], validate_only: bool
    ) -> list[ConfigResult]:
        async def forward(conn: BrokerConnection) -> list[ConfigResult] | None:
            out = (await conn.call(ALTER_CONFIGS({"resources": resources, "validate_only": validate_only})))["responses"]
            return None if _all_not_controller(out) else out

        return await self._decide(
            lambda image: self.controller.alter_configs(image, resources, validate_only),
            forward,
            _refuse_configs(resources),
        )

    async def incremental_alter_configs(
        self, resources: list[IncrementalAlterConfigsRequestResources], validate_only: bool
    ) -> list[ConfigResult]:
        async def forward(conn: BrokerConnection) -> list[ConfigResult] | None:
            body: IncrementalAlterConfigsRequest = {"resources": resources, "validate_only": validate_only}
            out = (await conn.call(INCREMENTAL_ALTER_CONFIGS(body)))["responses"]
            return None if _all_not_controller(out) else out

        return await self._decide(
            lambda image: self.controller.incremental_alter_configs(image, resources, validate_only),
            forward,
            _refuse_configs(resources),
        )

    # ------------------------------------------------------------------ brokers
    async def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
        async def forward(conn: BrokerConnection) -> BrokerRegistrationResponse | None:
            resp = await conn.call(BROKER_REGISTRATION(request))
            return None if resp["error_code"] == NotControllerError.code else resp

        def local(image: MetadataImage) -> ControllerResult[BrokerRegistrationResponse]:
            now = self.clock.now_ms()
            result = self.controller.register_broker(
                image,
                request,
                self._next_offset(),
                cluster_id_ok=request.get("cluster_id") == image.cluster_id,
                is_alive=lambda b: self.heartbeats.is_alive(b, now),
            )
            if result.response["error_code"] == 0:
                self.heartbeats.touch(request["broker_id"], now)
            return result

        return await self._decide(local, forward, _error_body)

    async def broker_heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
        async def forward(conn: BrokerConnection) -> BrokerHeartbeatResponse | None:
            timeout = self._root._heartbeat_forward_timeout_s
            resp = await asyncio.wait_for(conn.call(BROKER_HEARTBEAT(request)), timeout)
            return None if resp["error_code"] == NotControllerError.code else resp

        def local(image: MetadataImage) -> ControllerResult[BrokerHeartbeatResponse]:
            result = self.controller.broker_heartbeat(image, request, self._next_offset())
            if result.response["error_code"] == 0:
                self.heartbeats.touch(request["broker_id"], self.clock.now_ms())
            return result

        def refuse(code: int, msg: str) -> BrokerHeartbeatResponse:
            # BrokerHeartbeatResponse has no broker_epoch (the registration's answer has).
            return {
                "throttle_time_ms": 0,
                "error_code": code,
                "is_caught_up": False,
                "is_fenced": True,
                "should_shut_down": False,
            }

        return await self._decide(local, forward, refuse)

    async def fence_expired_brokers(self) -> None:
        """On the active controller: fence every live broker whose session has expired (and
        rebalance leaderships when that is due)."""
        if not self.active:
            return
        await self._maybe_balance_leaders()
        await self._maybe_sweep_delegation_tokens()
        now = self.clock.now_ms()
        image = self._root._speculative
        assert image is not None
        expired = self.heartbeats.expired(now, [b.id for b in image.live_brokers()])
        if not expired:
            return
        log.warning("fencing broker(s) %s: no heartbeat within the session timeout", expired)
        with contextlib.suppress(KafkaError):
            await self._run(lambda image: self.controller.fence_brokers(image, expired))

    async def fence_gone_broker(self, broker_id: int, epoch: int) -> bool:
        """On the active controller: fence ``broker_id`` now, its process being gone (see
        :mod:`zurau.metadata.broker_liveness_watch`), and end its session so that a new
        incarnation may register at once. Only the registration of ``epoch`` is fenced; False if
        this node is not active or the broker is no longer registered, unfenced, in that epoch."""
        if not self.active:
            return False
        image = self._root._speculative
        assert image is not None
        reg = image.brokers.get(broker_id)
        if reg is None or reg.epoch != epoch or reg.fenced:
            return False
        log.warning("fencing broker %d (epoch %d) before its session timeout: its process is gone", broker_id, epoch)
        self.heartbeats.remove(broker_id)
        await self._run(lambda image: self.controller.fence_brokers(image, [broker_id]))
        return True

    async def unregister_broker(self, broker_id: int) -> UnregisterBrokerResponse:
        """UnregisterBroker, decided by the active controller, which also ends the broker's
        session: ``error_code`` and ``error_message`` of the response."""

        async def forward(conn: BrokerConnection) -> UnregisterBrokerResponse | None:
            resp = await conn.call(UNREGISTER_BROKER({"broker_id": broker_id}))
            return None if resp.get("error_code") == NotControllerError.code else resp

        def local(image: MetadataImage) -> ControllerResult[UnregisterBrokerResponse]:
            result = self.controller.unregister_broker(image, broker_id)
            if result.records:
                self.heartbeats.remove(broker_id)
            return result

        def refuse(code: int, msg: str) -> UnregisterBrokerResponse:
            return {"throttle_time_ms": 0, "error_code": code, "error_message": msg}

        return await self._decide(local, forward, refuse)

    async def update_features(self, updates: list[FeatureUpdate], validate_only: bool) -> FeatureUpdateOutcome:
        """UpdateFeatures, decided by the active controller (forwarded at v2: one error for the
        whole request, which is atomic)."""

        async def forward(conn: BrokerConnection) -> FeatureUpdateOutcome | None:
            body: UpdateFeaturesRequest = {
                "timeout_ms": int(FORWARD_TIMEOUT_S * 1000),
                "feature_updates": [
                    {"feature": u.feature, "max_version_level": u.level, "upgrade_type": u.upgrade_type}
                    for u in updates
                ],
                "validate_only": validate_only,
            }
            resp = await conn.call(UPDATE_FEATURES(body))
            if resp["error_code"] == NotControllerError.code:
                return None
            return FeatureUpdateOutcome(resp["error_code"], resp["error_message"])

        def refuse(code: int, msg: str) -> FeatureUpdateOutcome:
            return FeatureUpdateOutcome(code, msg)

        return await self._decide(
            lambda image: self.controller.update_features(image, updates, validate_only), forward, refuse
        )

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        async def forward(conn: BrokerConnection) -> tuple[int, int] | None:
            resp = await conn.call(ALLOCATE_PRODUCER_IDS({"broker_id": broker_id, "broker_epoch": broker_epoch}))
            if resp["error_code"] == NotControllerError.code:
                return None
            if resp["error_code"]:
                raise for_code(resp["error_code"])("AllocateProducerIds failed")
            return resp["producer_id_start"], resp["producer_id_len"]

        def refuse(code: int, msg: str) -> tuple[int, int]:
            raise for_code(code)(msg)

        return await self._decide(
            lambda image: self.controller.allocate_producer_ids(image, broker_id, broker_epoch), forward, refuse
        )

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        """AlterPartition from a partition leader: decided by the active controller (which
        checks the epochs and writes the ISR change), else forwarded to it."""

        async def forward(conn: BrokerConnection) -> AlterPartitionResponse | None:
            resp = await conn.call(ALTER_PARTITION(request))
            return None if resp["error_code"] == NotControllerError.code else resp

        def refuse(code: int, msg: str) -> AlterPartitionResponse:
            return {"throttle_time_ms": 0, "error_code": code, "topics": []}

        return await self._decide(lambda image: self.controller.alter_partition(image, request), forward, refuse)

    # ------------------------------------------------------------------ leadership and reassignments
    async def elect_leaders(
        self, election_type: int, topic_partitions: list[ElectLeadersRequestTopicPartitions] | None
    ) -> ElectLeadersResponse:
        """ElectLeaders, decided by the active controller: ``error_code`` and
        ``replica_election_results`` of the response."""

        async def forward(conn: BrokerConnection) -> ElectLeadersResponse | None:
            body: ElectLeadersRequest = {
                "election_type": election_type,
                "topic_partitions": topic_partitions,
                "timeout_ms": int(FORWARD_TIMEOUT_S * 1000),
            }
            resp = await conn.call(ELECT_LEADERS(body))
            results = [r for t in resp["replica_election_results"] for r in t["partition_result"]]
            if resp.get("error_code") == NotControllerError.code or _all_not_controller(results):
                return None
            return resp

        def local(image: MetadataImage) -> ControllerResult[ElectLeadersResponse]:
            result = self.controller.elect_leaders(image, election_type, topic_partitions)
            return ControllerResult(result.records, {"error_code": 0, "replica_election_results": result.response})

        def refuse(code: int, msg: str) -> ElectLeadersResponse:
            results: list[ElectLeadersResponseReplicaElectionResults] = [
                {
                    "topic": tp["topic"],
                    "partition_result": [
                        {"partition_id": i, "error_code": code, "error_message": msg} for i in tp["partitions"]
                    ],
                }
                for tp in topic_partitions or ()
            ]
            return {"error_code": code, "replica_election_results": results}

        return await self._decide(local, forward, refuse)

    async def alter_partition_reassignments(
        self, topics: list[AlterPartitionReassignmentsRequestTopics], allow_replication_factor_change: bool
    ) -> AlterPartitionReassignmentsResponse:
        """AlterPartitionReassignments, decided by the active controller: ``error_code``,
        ``error_message`` and ``responses`` of the response."""

        async def forward(conn: BrokerConnection) -> AlterPartitionReassignmentsResponse | None:
            body: AlterPartitionReassignmentsRequest = {
                "timeout_ms": int(FORWARD_TIMEOUT_S * 1000),
                "allow_replication_factor_change": allow_replication_factor_change,
                "topics": topics,
            }
            resp = await conn.call(ALTER_PARTITION_REASSIGNMENTS(body))
            results = [r for t in resp["responses"] for r in t["partitions"]]
            if resp.get("error_code") == NotControllerError.code or _all_not_controller(results):
                return None
            return resp

        def local(image: MetadataImage) -> ControllerResult[AlterPartitionReassignmentsResponse]:
            result = self.controller.alter_partition_reassignments(image, topics, allow_replication_factor_change)
            return ControllerResult(result.records, {"error_code": 0, "error_message": None, "responses": result.response})

        def refuse(code: int, msg: str) -> AlterPartitionReassignmentsResponse:
            return {"error_code": code, "error_message": msg, "responses": []}

        return await self._decide(local, forward, refuse)

    async def alter_user_scram_credentials(
        self,
        deletions: list[AlterUserScramCredentialsRequestDeletions],
        upsertions: list[AlterUserScramCredentialsRequestUpsertions],
    ) -> list[AlterUserScramCredentialsResponseResults]:
        """AlterUserScramCredentials, decided by the active controller: one result per user."""

        async def forward(conn: BrokerConnection) -> list[AlterUserScramCredentialsResponseResults] | None:
            body: AlterUserScramCredentialsRequest = {"deletions": deletions, "upsertions": upsertions}
            out = (await conn.call(ALTER_USER_SCRAM_CREDENTIALS(body)))["results"]
            return None if _all_not_controller(out) else out

        def refuse(code: int, msg: str) -> list[AlterUserScramCredentialsResponseResults]:
            users = dict.fromkeys(op["name"] for op in [*deletions, *upsertions])
            return [{"user": u, "error_code": code, "error_message": msg} for u in users]

        return await self._decide(
            lambda image: self.controller.alter_user_scram_credentials(image, deletions, upsertions), forward, refuse
        )

    async def alter_client_quotas(
        self, entries: list[AlterClientQuotasRequestEntries], validate_only: bool
    ) -> list[AlterClientQuotasResponseEntries]:
        """AlterClientQuotas, decided by the active controller: one result per entity."""

        async def forward(conn: BrokerConnection) -> list[AlterClientQuotasResponseEntries] | None:
            body: AlterClientQuotasRequest = {"entries": entries, "validate_only": validate_only}
            out = (await conn.call(ALTER_CLIENT_QUOTAS(body)))["entries"]
            return None if _all_not_controller(out) else out

        def refuse(code: int, msg: str) -> list[AlterClientQuotasResponseEntries]:
            return [{"error_code": code, "error_message": msg, "entity": e["entity"]} for e in entries]

        return await self._decide(lambda image: self.controller.alter_client_quotas(image, entries, validate_only), forward, refuse)

    async def create_acls(self, creations: list[CreateAclsRequestCreations]) -> list[CreateAclsResponseResults]:
        """CreateAcls, decided by the active controller: one result per creation."""

        async def forward(conn: BrokerConnection) -> list[CreateAclsResponseResults] | None:
            out = (await conn.call(CREATE_ACLS({"creations": creations})))["results"]
            return None if _all_not_controller(out) else out

        def refuse(code: int, msg: str) -> list[CreateAclsResponseResults]:
            return [{"error_code": code, "error_message": msg} for _ in creations]

        return await self._decide(lambda image: self.controller.create_acls(image, creations), forward, refuse)

    async def delete_acls(self, filters: list[DeleteAclsRequestFilters]) -> list[DeleteAclsResponseFilterResults]:
        """DeleteAcls, decided by the active controller: one result per filter."""

        async def forward(conn: BrokerConnection) -> list[DeleteAclsResponseFilterResults] | None:
            out = (await conn.call(DELETE_ACLS({"filters": filters})))["filter_results"]
            return None if _all_not_controller(out) else out

        def refuse(code: int, msg: str) -> list[DeleteAclsResponseFilterResults]:
            return [{"error_code": code, "error_message": msg, "matching_acls": []} for _ in filters]

        return await self._decide(lambda image: self.controller.delete_acls(image, filters), forward, refuse)

    async def list_partition_reassignments(
        self, topics: list[ListPartitionReassignmentsRequestTopics] | None
    ) -> ListPartitionReassignmentsResponse:
        """ListPartitionReassignments, answered by the active controller: ``error_code``,
        ``error_message`` and ``topics`` of the response."""

        async def forward(conn: BrokerConnection) -> ListPartitionReassignmentsResponse | None:
            body: ListPartitionReassignmentsRequest = {"timeout_ms": int(FORWARD_TIMEOUT_S * 1000), "topics": topics}
            resp = await conn.call(LIST_PARTITION_REASSIGNMENTS(body))
            return None if resp["error_code"] == NotControllerError.code else resp

        def local(image: MetadataImage) -> ControllerResult[ListPartitionReassignmentsResponse]:
            found = self.controller.list_partition_reassignments(image, topics)
            return ControllerResult([], {"error_code": 0, "error_message": None, "topics": found})

        def refuse(code: int, msg: str) -> ListPartitionReassignmentsResponse:
            return {"error_code": code, "error_message": msg, "topics": []}

        return await self._decide(local, forward, refuse)

    # ------------------------------------------------------------------ delegation tokens
    async def create_delegation_token(
        self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int
    ) -> CreateDelegationTokenResponse:
        """CreateDelegationToken, decided by the active controller. Forwarded as Kafka's v3
        request naming the owner; the request has no field for the requester, so a token created
        through a forwarding node records its owner as requester too (Kafka wraps the request in
        an Envelope carrying the caller's principal; Zurau has no Envelope)."""

        async def forward(conn: BrokerConnection) -> CreateDelegationTokenResponse | None:
            owner_type, owner_name = split_principal(owner)
            body: CreateDelegationTokenRequest = {
                "owner_principal_type": owner_type,
                "owner_principal_name": owner_name,
                "renewers": [{"principal_type": t, "principal_name": n} for t, n in map(split_principal, renewers)],
                "max_lifetime_ms": max_lifetime_ms,
            }
            resp = await conn.call(CREATE_DELEGATION_TOKEN(body))
            return None if resp["error_code"] == NotControllerError.code else resp

        def refuse(code: int, msg: str) -> CreateDelegationTokenResponse:
            owner_type, owner_name = split_principal(owner)
            return {"error_code": code, "principal_type": owner_type, "principal_name": owner_name,
                    "issue_timestamp_ms": -1, "expiry_timestamp_ms": -1, "max_timestamp_ms": -1}

        return await self._decide(
            lambda image: self.controller.create_delegation_token(
                image, owner, requester, renewers, max_lifetime_ms, self.clock.now_ms()
            ),
            forward,
            refuse,
        )

    def _precheck_token(self, hmac: bytes, caller: str | None) -> int:
        """Before forwarding a renewal or expiry without its caller: the caller must own or renew
        the token as this node's image knows it (a token this node does not know yet: NOT_FOUND).
        0 when it may be forwarded."""
        secret = secret_key(self.controller.config)
        if caller is None or secret is None:
            return 0  # nothing to check here / the controller answers AUTH_DISABLED
        token = find_by_hmac(self.image.delegation_tokens, secret, hmac)
        if token is None:
            return DelegationTokenNotFoundError.code
        if not owner_or_renewer(token, caller):
            return DelegationTokenOwnerMismatchError.code
        return 0

    async def _precheck_token_at(self, conn: BrokerConnection, hmac: bytes, caller: str | None) -> int:
        """:meth:`_precheck_token`, and when this node's image does not have the token (it may
        have been created a moment ago, committed by the controller but not yet replicated
        here), the same check against the active controller's tokens (DescribeDelegationToken
        on its controller listener, where a node sees every token)."""
        code = self._precheck_token(hmac, caller)
        if code != DelegationTokenNotFoundError.code:
            return code
        resp = await conn.call(DESCRIBE_DELEGATION_TOKEN({"owners": None}))
        if resp["error_code"]:
            return int(resp["error_code"])
        for t in resp["tokens"]:
            if bytes(t["hmac"]) == hmac:
                owner = principal(t["principal_type"], t["principal_name"])
                renewers = {principal(r["principal_type"], r["principal_name"]) for r in t["renewers"]}
                return 0 if caller in renewers or caller == owner else DelegationTokenOwnerMismatchError.code
        return DelegationTokenNotFoundError.code

    async def renew_delegation_token(self, hmac: bytes, renew_period_ms: int, caller: str | None) -> tuple[int, int]:
        """RenewDelegationToken, decided by the active controller: (error code, expiry)."""

        async def forward(conn: BrokerConnection) -> tuple[int, int] | None:
            code = await self._precheck_token_at(conn, hmac, caller)
            if code:
                return code, -1
            resp = await conn.call(RENEW_DELEGATION_TOKEN({"hmac": hmac, "renew_period_ms": renew_period_ms}))
            if resp["error_code"] == NotControllerError.code:
                return None
            return resp["error_code"], resp["expiry_timestamp_ms"]

        return await self._decide(
            lambda image: self.controller.renew_delegation_token(
                image, hmac, renew_period_ms, caller, self.clock.now_ms()
            ),
            forward,
            lambda code, _msg: (code, -1),
        )

    async def expire_delegation_token(
        self, hmac: bytes, expiry_period_ms: int, caller: str | None
    ) -> tuple[int, int]:
        """ExpireDelegationToken, decided by the active controller: (error code, expiry)."""

        async def forward(conn: BrokerConnection) -> tuple[int, int] | None:
            code = await self._precheck_token_at(conn, hmac, caller)
            if code:
                return code, -1
            resp = await conn.call(
                EXPIRE_DELEGATION_TOKEN({"hmac": hmac, "expiry_time_period_ms": expiry_period_ms})
            )
            if resp["error_code"] == NotControllerError.code:
                return None
            return resp["error_code"], resp["expiry_timestamp_ms"]

        return await self._decide(
            lambda image: self.controller.expire_delegation_token(
                image, hmac, expiry_period_ms, caller, self.clock.now_ms()
            ),
            forward,
            lambda code, _msg: (code, -1),
        )

    async def _maybe_sweep_delegation_tokens(self) -> None:
        """On the active controller, every ``delegation.token.expiry.check.interval.ms``: remove
        the expired delegation tokens."""
        root = self._root
        now = self.clock.now_ms()
        interval_ms = int(self.controller.config.get("delegation.token.expiry.check.interval.ms"))
        due = root._next_token_sweep_ms
        if due is None or due > now + interval_ms:
            root._next_token_sweep_ms = now + interval_ms
            return
        if now < due:
            return
        root._next_token_sweep_ms = now + interval_ms
        with contextlib.suppress(KafkaError):
            await self._run(lambda image: self.controller.sweep_expired_delegation_tokens(image, now))

    async def _maybe_balance_leaders(self) -> None:
        """On the active controller, every ``leader.imbalance.check.interval.seconds``: move
        leaderships back to preferred replicas (``auto.leader.rebalance.enable``)."""
        root = self._root
        now = self.clock.now_ms()
        interval_ms = int(self.controller.config.get("leader.imbalance.check.interval.seconds")) * 1000
        due = root._next_balance_ms
        if due is None or due > now + interval_ms:
            root._next_balance_ms = now + interval_ms
            return
        if now < due:
            return
        root._next_balance_ms = now + interval_ms
        with contextlib.suppress(KafkaError):
            await self._run(self.controller.balance_leaders)

    # ------------------------------------------------------------------ the broker's own changes
    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def create_topic_now(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> CreateTopicsResponseTopics:
        """Start creating a topic the broker needs; answers LEADER_NOT_AVAILABLE (retriable) now."""
        if name not in self._creating:
            self._creating.add(name)
            topic: CreateTopicsRequestTopics = {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }

            async def create() -> None:
                try:
                    resp = await self.create_topics([topic], False)
                    entry = resp["topics"][0]
                    if entry["error_code"] and entry["error_code"] != 36:  # TOPIC_ALREADY_EXISTS
                        log.warning("could not create topic %r: %s", name, entry["error_message"])
                except Exception:
                    log.exception("could not create topic %r", name)
                finally:
                    self._creating.discard(name)

            self._spawn(create())
        return create_topic_error(name, LeaderNotAvailableError.code, f"topic {name!r} is being created")

    def delete_topics_now(self, requested: list[tuple[str | None, uuid.UUID]]) -> list[DeleteTopicsResponseResponses]:
        raise NotControllerError("a cluster deletes topics through DeleteTopics (the topic is deleted asynchronously)")


class ClusterProducerIdManager:
    """Producer ids in blocks fetched from the active controller ahead of need: the next block is
    requested when the current one is 90% used, so ``next_id`` (synchronous) normally never
    waits. When no id is at hand it answers COORDINATOR_LOAD_IN_PROGRESS, which clients retry,
    as Kafka's broker does while its block request is in flight."""

    def __init__(self, channel: RaftControllerChannel, broker_id: int, broker_epoch: Callable[[], int]) -> None:
        self._channel = channel
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._next = 0
        self._limit = 0
        self._size = 0
        self._prefetched: tuple[int, int] | None = None
        self._fetching = False

    def next_id(self) -> int:
        if self._next >= self._limit and self._prefetched is not None:
            first, count = self._prefetched
            self._prefetched = None
            self._next, self._limit, self._size = first, first + count, count
        if self._next >= self._limit:
            self.prefetch()
            raise CoordinatorLoadInProgressError("waiting for a block of producer ids from the controller")
        if self._limit - self._next <= self._size // 10:
            self.prefetch()
        pid = self._next
        self._next += 1
        return pid

    def prefetch(self) -> None:
        """Request the next block from the active controller in the background, unless one is
        already requested or held in reserve (called at 90% use, and once the broker is
        unfenced so that the first InitProducerId finds a block)."""
        if self._fetching or self._prefetched is not None:
            return
        self._fetching = True

        async def fetch() -> None:
            try:
                self._prefetched = await self._channel.allocate_producer_ids(self._broker_id, self._broker_epoch())
            except Exception as e:
                log.warning("could not allocate producer ids: %s", e)
            finally:
                self._fetching = False

        self._channel._spawn(fetch())


def _all_not_controller(results: Sequence[Mapping[str, object]]) -> bool:
    return bool(results) and all(r.get("error_code") == NotControllerError.code for r in results)


def _refuse_configs(resources: Sequence[ConfigResource]) -> Callable[[int, str], list[ConfigResult]]:
    """The answer to a configs request that no active controller took: ``code`` for every resource."""

    def refuse(code: int, msg: str) -> list[ConfigResult]:
        return [config_result(r, code, msg) for r in resources]

    return refuse


def _error_body(code: int, message: str) -> BrokerRegistrationResponse:
    return {"throttle_time_ms": 0, "error_code": code, "broker_epoch": -1}


__all__ = ["ClusterProducerIdManager", "RaftControllerChannel"]
