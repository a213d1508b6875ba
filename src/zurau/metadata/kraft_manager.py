"""One node's membership in the KRaft quorum (Kafka's ``RaftManager``): opens the metadata log and
the ``quorum-state`` file, runs the :class:`~zurau.metadata.raft_client.RaftClient` with the
:class:`~zurau.metadata.raft_controller_channel.RaftControllerChannel` as its state machine, and
serves the quorum APIs (the broker's :class:`~zurau.broker.interfaces.QuorumService`).

Voters come from ``controller.quorum.voters`` (``id@host:port``, the voters' controller listeners;
a static quorum): a node in that list is a voter, any other node an observer that only fetches. A
dynamic quorum (KIP-853; ``controller.quorum.bootstrap.servers``) keeps its voters in the log,
bootstrapped by ``zurau storage format --standalone`` / ``--initial-controllers`` and changed with
AddRaftVoter / RemoveRaftVoter (``zurau metadata-quorum add-controller`` / ``remove-controller``),
which any node accepts and passes to the leader. A voter whose listeners differ from what the voter
set records tells the leader (UpdateRaftVoter); with ``controller.quorum.auto.join.enable`` a
controller that is not a voter adds itself once it has caught up (KIP-853's auto-join). On-disk state lives
in ``<metadata.log.dir>/__cluster_metadata-0``: the log's segments and the ``quorum-state`` file;
a controller's bootstrap metadata (``zurau storage format --add-scram``) in
``<metadata.log.dir>/bootstrap.checkpoint`` (:mod:`zurau.metadata.bootstrap_metadata`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import ADD_RAFT_VOTER, DESCRIBE_QUORUM, REMOVE_RAFT_VOTER, UPDATE_RAFT_VOTER, Api
from zurau.clock import Clock
from zurau.config import BrokerConfig
from zurau.metadata.bootstrap_metadata import bootstrap_records
from zurau.metadata.broker_liveness_watch import BrokerLivenessWatch, WatchTarget
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import MetadataImage
from zurau.metadata.kraft_log import KRaftLog
from zurau.metadata.metadata_log import directory_id
from zurau.metadata.quorum_state_file import QUORUM_STATE_FILE, FileQuorumStateStore
from zurau.metadata.raft_client import RaftClient
from zurau.metadata.raft_controller_channel import RaftControllerChannel
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InconsistentClusterIdError, KafkaError, NotLeaderOrFollowerError
from zurau.protocol.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from zurau.raft import RaftConfig
from zurau.raft.messages import NO_DIRECTORY
from zurau.raft.node import AddVoter, RemoveVoter, Role, UpdateVoter, VoterChangeResult
from zurau.raft.voter_set import Endpoint, ReplicaKey, Voter
from zurau.raft.wire import describe_quorum_response

log = logging.getLogger("zurau.raft")

METADATA_PARTITION_DIR = "__cluster_metadata-0"
LIVENESS_SYNC_S = 0.1  # how often the active controller matches its liveness watches to the image

Q = TypeVar("Q", bound=Mapping[str, Any])
R = TypeVar("R")


def raft_config(cfg: BrokerConfig) -> RaftConfig:
    """Kafka's ``controller.quorum.*`` settings as the Raft core's timers. Followers fetch again
    at once after an answer: the leader holds an empty Fetch for a long poll instead."""
    return RaftConfig(
        election_timeout_ms=cfg.get("controller.quorum.election.timeout.ms"),
        fetch_timeout_ms=cfg.get("controller.quorum.fetch.timeout.ms"),
        append_linger_ms=cfg.get("controller.quorum.append.linger.ms"),
        request_timeout_ms=cfg.get("controller.quorum.request.timeout.ms"),
        fetch_idle_backoff_ms=0,
        retry_backoff_ms=max(50, cfg.get("controller.quorum.retry.backoff.ms")),
        election_backoff_max_ms=cfg.get("controller.quorum.election.backoff.max.ms"),
    )


def advertised_host(host: str) -> str:
    """A listener host as other nodes should dial it: ``localhost`` for every-interface binds."""
    return "localhost" if host in ("", "0.0.0.0", "::", "[::]") else host


class KRaftManager:
    """See the module docstring."""

    def __init__(
        self,
        cfg: BrokerConfig,
        cluster_id: str,
        metadata_dir: Path,
        clock: Clock,
        controller: QuorumController,
        security: ClientSecurity | None = None,
    ) -> None:
        """``security``: TLS/SASL of this node's connections to the controller listener."""
        self.config = cfg
        self.node_id = cfg.node_id
        self.cluster_id = cluster_id
        self.clock = clock
        self.voters = {v.node_id: (v.host, v.port) for v in cfg.controller_quorum_voters}
        self.dynamic = cfg.dynamic_quorum
        names = cfg.controller_listener_names
        self.controller_listener = names[0] if names else "CONTROLLER"
        self.log = KRaftLog(metadata_dir, clock.now_ms)
        try:
            self.store = FileQuorumStateStore(self.log_dir / QUORUM_STATE_FILE)
            self.channel = RaftControllerChannel(
                node_id=self.node_id,
                controller=controller,
                image=MetadataImage(cluster_id),
                clock=clock,
                session_timeout_ms=cfg.get("broker.session.timeout.ms"),
                snapshot_bytes=cfg.get("metadata.log.max.record.bytes.between.snapshots"),
                snapshot_interval_ms=cfg.get("metadata.log.max.snapshot.interval.ms"),
                # Only a controller can lead the log; a broker's file (if any) is never used.
                bootstrap_records=bootstrap_records(metadata_dir) if cfg.is_controller else (),
            )
            self.liveness = BrokerLivenessWatch(self.channel.fence_gone_broker)
            self.raft = RaftClient(
                node_id=self.node_id,
                cluster_id=cluster_id,
                voters=self.voters,
                log=self.log,
                store=self.store,
                clock=clock,
                listener=self.channel,
                config=raft_config(cfg),
                dynamic=self.dynamic,
                bootstrap_servers=cfg.controller_quorum_bootstrap_servers,
                directory_id=directory_id(metadata_dir) if self.dynamic else NO_DIRECTORY,
                controller_listener=self.controller_listener,
                security=security,
            )
        except BaseException:
            self.log.close()
            raise
        self.channel.raft = self.raft
        self._tasks: list[asyncio.Task[Any]] = []

    @property
    def log_dir(self) -> Path:
        return self.log.directory

    @property
    def kraft_version(self) -> int:
        """``kraft.version``: 1 for a dynamic quorum (its voters in the log, KIP-853), else 0."""
        return 1 if self.dynamic else 0

    @property
    def is_voter(self) -> bool:
        node = self.raft.node
        return node.is_voter if node is not None else self.node_id in self.voters

    def start(self) -> None:
        self.raft.start()
        if self.config.is_controller:  # (a dynamic quorum's voters change: every controller runs it)
            self._tasks.append(asyncio.get_running_loop().create_task(self._fence_loop()))
            self._tasks.append(asyncio.get_running_loop().create_task(self._liveness_loop()))
            if self.dynamic:
                self._tasks.append(asyncio.get_running_loop().create_task(self._voter_loop()))

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        await self.liveness.close()
        await self.raft.close()
        await self.channel.close()
        self.log.flush()
        self.log.close()

    def own_endpoints(self) -> tuple[Endpoint, ...]:
        """This controller's listeners named in ``controller.listener.names`` (an empty host is
        advertised as ``localhost``)."""
        names = set(self.config.controller_listener_names)
        return tuple(
            Endpoint(li.name.upper(), advertised_host(li.host), li.port)
            for li in self.config.listeners
            if li.name.upper() in names
        )

    async def _voter_loop(self) -> None:
        """Keep this controller's entry in a dynamic voter set current (UpdateRaftVoter), and with
        auto-join add it once it follows the leader and has caught up."""
        interval = max(0.2, self.config.get("controller.quorum.election.timeout.ms") / 1000)
        auto_join = self.config.get("controller.quorum.auto.join.enable")
        own_dir = self.raft.directory_id
        while True:
            await asyncio.sleep(interval)
            node, leader = self.raft.node, self.raft.leader_id
            if node is None or leader is None or node.high_watermark <= 0:
                continue
            me = node.voter_set.get(self.node_id)
            endpoints = self.own_endpoints()
            change: Awaitable[AddRaftVoterResponse | UpdateRaftVoterResponse]
            if me is not None and me.key.directory_id == own_dir and endpoints and me.endpoints != endpoints:
                api = ApiKey.UPDATE_RAFT_VOTER
                update: UpdateRaftVoterRequest = {
                    "cluster_id": self.cluster_id,
                    "current_leader_epoch": self.raft.epoch,
                    "voter_id": self.node_id,
                    "voter_directory_id": own_dir,
                    "listeners": [{"name": e.name, "host": e.host, "port": e.port} for e in endpoints],
                    "k_raft_version_feature": {"min_supported_version": 0, "max_supported_version": 1},
                }
                change = self.update_raft_voter(0, update)
            elif me is None and auto_join and endpoints and node.role is Role.FOLLOWER:
                api = ApiKey.ADD_RAFT_VOTER
                add: AddRaftVoterRequest = {
                    "cluster_id": self.cluster_id,
                    "timeout_ms": 10_000,
                    "voter_id": self.node_id,
                    "voter_directory_id": own_dir,
                    "listeners": [{"name": e.name, "host": e.host, "port": e.port} for e in endpoints],
                }
                change = self.add_raft_voter(0, add)
            else:
                continue
            try:
                resp = await change
            except Exception:
                log.exception("raft node %d: %s failed", self.node_id, api.name)
                continue
            if resp["error_code"] == 0:
                log.info("raft node %d: %s done", self.node_id, api.name)
            else:
                log.debug("raft node %d: %s: error %d", self.node_id, api.name, resp["error_code"])

    async def _fence_loop(self) -> None:
        interval = max(0.05, self.config.get("broker.heartbeat.interval.ms") / 2000)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.channel.fence_expired_brokers()
            except Exception:
                log.exception("fencing expired brokers failed")

    async def _liveness_loop(self) -> None:
        """On the active controller, keep :attr:`liveness` watching every registered, unfenced
        broker but this node (:mod:`zurau.metadata.broker_liveness_watch`)."""
        listener = self.config.inter_broker_listener_name
        while True:
            await asyncio.sleep(LIVENESS_SYNC_S)
            channel = self.channel
            if not channel.active:
                self.liveness.clear()
                continue
            targets: dict[int, WatchTarget] = {}
            for b, reg in channel.image.brokers.items():
                if reg.fenced or b == self.node_id:
                    continue
                address = reg.endpoint(listener) or reg.address_for("")
                if address is not None:
                    targets[b] = WatchTarget(reg.epoch, address[0], address[1])
            self.liveness.sync(targets, channel.unfenced_at_activation)

    async def wait_for_leader(self, timeout: float) -> bool:
        return await self.raft.wait_for(lambda: self.raft.leader_id is not None, timeout)

    # ------------------------------------------------------------------ QuorumService
    async def handle_raft_request(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.raft.handle_request(api_key, version, body)

    async def describe_quorum(self, version: int, body: DescribeQuorumRequest) -> DescribeQuorumResponse:
        node = self.raft.node
        if self.raft.is_leader and node is not None:
            info = node.quorum_info(self.clock.now_ms())
            listener = self.controller_listener
            endpoints: dict[int, list[tuple[str, str, int]]] = {}
            for v in node.voter_set.values():
                if v.endpoints:
                    endpoints[v.node_id] = [(e.name, e.host, e.port) for e in v.endpoints]
                elif (address := self.raft.address_of(v.node_id)) is not None:
                    endpoints[v.node_id] = [(listener, *address)]
            answer = describe_quorum_response(version, info, leader_endpoints=endpoints)
            if version >= 2:  # the voters' directory ids (KIP-853)
                for r in answer["topics"][0]["partitions"][0]["current_voters"]:
                    voter = node.voter_set.get(r["replica_id"])
                    if voter is not None:
                        r["replica_directory_id"] = voter.key.directory_id
            return answer
        leader = self.raft.leader_id
        if leader is not None and leader != self.node_id and self.raft.address_of(leader) is not None:
            try:  # over the channel's cached connection to the leader's controller listener
                conn = await self.channel.connection_to(leader)
                return await conn.call(DESCRIBE_QUORUM(body), version=version)
            except (KafkaError, ClientError, OSError) as e:
                log.info("DescribeQuorum forwarded to node %d failed: %s", leader, e)
                await self.channel.drop_connection(leader)
        return describe_quorum_response(version, None)

    async def add_raft_voter(self, version: int, body: AddRaftVoterRequest) -> AddRaftVoterResponse:
        """AddRaftVoter: the leader adds the voter and answers once the change is committed; any
        other node passes the request to the leader."""
        timeout_ms = body.get("timeout_ms", 30_000)
        refused = self._refused_voter_change(body.get("cluster_id"))
        if refused is not None:
            return _voter_answer(*refused)
        if not self.raft.is_leader:
            return await self._pass_to_leader(ADD_RAFT_VOTER, version, body, timeout_ms, _voter_answer)
        voter = Voter(ReplicaKey(body["voter_id"], body["voter_directory_id"]), _endpoints(body.get("listeners")))
        result = await self.raft.change_voters(lambda rid: AddVoter(rid, voter), _timeout_s(timeout_ms))
        return _voter_answer(*self._changed(ApiKey.ADD_RAFT_VOTER, result))

    async def remove_raft_voter(self, version: int, body: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
        """RemoveRaftVoter: as AddRaftVoter (the leader waits up to 30 s for the change)."""
        refused = self._refused_voter_change(body.get("cluster_id"))
        if refused is not None:
            return _voter_answer(*refused)
        if not self.raft.is_leader:
            return await self._pass_to_leader(REMOVE_RAFT_VOTER, version, body, 30_000, _voter_answer)
        key = ReplicaKey(body["voter_id"], body["voter_directory_id"])
        result = await self.raft.change_voters(lambda rid: RemoveVoter(rid, key), _timeout_s(30_000))
        return _voter_answer(*self._changed(ApiKey.REMOVE_RAFT_VOTER, result))

    async def update_raft_voter(self, version: int, body: UpdateRaftVoterRequest) -> UpdateRaftVoterResponse:
        """UpdateRaftVoter: the leader records the voter's new listeners and kraft.version range
        (waiting up to 30 s); the answer names the current leader."""

        def refuse(code: int, message: str | None = None) -> UpdateRaftVoterResponse:
            return {"throttle_time_ms": 0, "error_code": code}

        refused = self._refused_voter_change(body.get("cluster_id"))
        if refused is not None:
            return refuse(*refused)
        if not self.raft.is_leader:
            return await self._pass_to_leader(UPDATE_RAFT_VOTER, version, body, 30_000, refuse)
        feature = body.get("k_raft_version_feature") or {}
        voter = Voter(
            ReplicaKey(body["voter_id"], body["voter_directory_id"]),
            _endpoints(body.get("listeners")),
            feature.get("min_supported_version", 0),
            feature.get("max_supported_version", 1),
        )
        epoch = body.get("current_leader_epoch", -1)
        result = await self.raft.change_voters(lambda rid: UpdateVoter(rid, voter, epoch), _timeout_s(30_000))
        leader = self.raft.leader_id
        address = self.raft.address_of(leader) if leader is not None else None
        return {
            "throttle_time_ms": 0,
            "error_code": result.error_code,
            "current_leader": {
                "leader_id": -1 if leader is None else leader,
                "leader_epoch": self.raft.epoch,
                "host": address[0] if address else "",
                "port": address[1] if address else -1,
            },
        }

    def _refused_voter_change(self, cluster_id: str | None) -> tuple[int, str] | None:
        """Why a voter change cannot even be passed on here: another cluster's, or no quorum."""
        if cluster_id is not None and cluster_id != self.cluster_id:
            return InconsistentClusterIdError.code, f"this is cluster {self.cluster_id}, not {cluster_id}"
        if self.raft.node is None:
            return NotLeaderOrFollowerError.code, "the quorum is not running on this node"
        return None

    async def _pass_to_leader(
        self, api: Api[Q, R], version: int, body: Q, timeout_ms: int, refuse: Callable[[int, str], R]
    ) -> R:
        """A voter change for the quorum's leader, sent there; its answer, or ``refuse(code,
        message)`` when no leader is known or it cannot be reached."""
        leader = self.raft.leader_id
        if leader is None or leader == self.node_id or self.raft.address_of(leader) is None:
            return refuse(NotLeaderOrFollowerError.code, "no quorum leader is known; retry")
        try:
            conn = await self.channel.connection_to(leader)
            return await asyncio.wait_for(conn.call(api(body), version=version), timeout_ms / 1000 + 5)
        except (KafkaError, ClientError, OSError, TimeoutError) as e:
            await self.channel.drop_connection(leader)
            return refuse(NotLeaderOrFollowerError.code, f"passing the request to leader {leader} failed: {e}")

    def _changed(self, api: ApiKey, result: VoterChangeResult) -> tuple[int, str | None]:
        """Log a voter change the leader made or refused; its error code and message."""
        if result.error_code:
            log.info("%s refused: %s", api.name, result.message)
        else:
            node = self.raft.node
            log.info("%s committed: voters now %s", api.name, node.voter_set if node is not None else None)
        return result.error_code, result.message

    async def register_broker(self, body: BrokerRegistrationRequest, forward: bool) -> BrokerRegistrationResponse:
        channel = self.channel if forward else self.channel.without_forwarding()
        return await channel.register_broker(body)

    async def broker_heartbeat(self, body: BrokerHeartbeatRequest, forward: bool) -> BrokerHeartbeatResponse:
        channel = self.channel if forward else self.channel.without_forwarding()
        return await channel.broker_heartbeat(body)

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int, forward: bool) -> tuple[int, int]:
        channel = self.channel if forward else self.channel.without_forwarding()
        return await channel.allocate_producer_ids(broker_id, broker_epoch)


def _voter_answer(code: int, message: str | None = None) -> AddRaftVoterResponse:
    """An AddRaftVoter or RemoveRaftVoter answer (the two responses have the same fields)."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message}


def _endpoints(listeners: Sequence[Mapping[str, Any]] | None) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(x["name"], x["host"], x["port"]) for x in listeners or ())


def _timeout_s(timeout_ms: int) -> float:
    return max(1, timeout_ms) / 1000
