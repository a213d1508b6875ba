"""One node's membership in the KRaft quorum (Kafka's ``RaftManager``): opens the metadata log and
the ``quorum-state`` file, runs the :class:`~zurau.metadata.raft_client.RaftClient` with the
:class:`~zurau.metadata.raft_controller_channel.RaftControllerChannel` as its state machine, and
serves the quorum APIs (the broker's :class:`~zurau.broker.interfaces.QuorumService`).

Voters come from ``controller.quorum.voters`` (``id@host:port``, the voters' controller listeners);
a node in that list is a voter, any other node an observer that only fetches. On-disk state lives
in ``<metadata.log.dir>/__cluster_metadata-0``: the log's segments and the ``quorum-state`` file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

from zurau.client.errors import ClientError
from zurau.clock import Clock
from zurau.config import BrokerConfig
from zurau.metadata.controller import QuorumController
from zurau.metadata.image import MetadataImage
from zurau.metadata.kraft_log import KRaftLog
from zurau.metadata.quorum_state_file import QUORUM_STATE_FILE, FileQuorumStateStore
from zurau.metadata.raft_client import RaftClient
from zurau.metadata.raft_controller_channel import RaftControllerChannel
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError
from zurau.raft import RaftConfig
from zurau.raft.wire import describe_quorum_response

log = logging.getLogger("zurau.raft")

METADATA_PARTITION_DIR = "__cluster_metadata-0"


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
    )


class KRaftManager:
    """See the module docstring."""

    def __init__(
        self,
        cfg: BrokerConfig,
        cluster_id: str,
        metadata_dir: Path,
        clock: Clock,
        controller: QuorumController,
    ) -> None:
        self.config = cfg
        self.node_id = cfg.node_id
        self.cluster_id = cluster_id
        self.clock = clock
        self.voters = {v.node_id: (v.host, v.port) for v in cfg.controller_quorum_voters}
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
            )
            self.raft = RaftClient(
                node_id=self.node_id,
                cluster_id=cluster_id,
                voters=self.voters,
                log=self.log,
                store=self.store,
                clock=clock,
                listener=self.channel,
                config=raft_config(cfg),
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
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    def start(self) -> None:
        self.raft.start()
        if self.is_voter:
            self._tasks.append(asyncio.get_running_loop().create_task(self._fence_loop()))

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        await self.raft.close()
        await self.channel.close()
        self.log.flush()
        self.log.close()

    async def _fence_loop(self) -> None:
        interval = max(0.05, self.config.get("broker.heartbeat.interval.ms") / 2000)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.channel.fence_expired_brokers()
            except Exception:
                log.exception("fencing expired brokers failed")

    async def wait_for_leader(self, timeout: float) -> bool:
        return await self.raft.wait_for(lambda: self.raft.leader_id is not None, timeout)

    # ------------------------------------------------------------------ QuorumService
    async def handle_raft_request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        return await self.raft.handle_request(api_key, version, body)

    async def describe_quorum(self, version: int, body: dict[str, Any]) -> dict[str, Any]:
        if self.raft.is_leader and self.raft.node is not None:
            info = self.raft.node.quorum_info(self.clock.now_ms())
            names = self.config.controller_listener_names
            listener = names[0] if names else "CONTROLLER"
            endpoints = {v: [(listener, h, p)] for v, (h, p) in self.voters.items()}
            return describe_quorum_response(version, info, leader_endpoints=endpoints)
        leader = self.raft.leader_id
        if leader is not None and leader != self.node_id and leader in self.voters:
            try:  # over the channel's cached connection to the leader's controller listener
                conn = await self.channel.connection_to(leader)
                return await conn.request(ApiKey.DESCRIBE_QUORUM, body, version=version)
            except (KafkaError, ClientError, OSError) as e:
                log.info("DescribeQuorum forwarded to node %d failed: %s", leader, e)
                await self.channel.drop_connection(leader)
        return describe_quorum_response(version, None)

    async def register_broker(self, body: dict[str, Any], forward: bool) -> dict[str, Any]:
        channel = self.channel if forward else self.channel.without_forwarding()
        return await channel.register_broker(body)

    async def broker_heartbeat(self, body: dict[str, Any], forward: bool) -> dict[str, Any]:
        channel = self.channel if forward else self.channel.without_forwarding()
        return await channel.broker_heartbeat(body)

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int, forward: bool) -> tuple[int, int]:
        channel = self.channel if forward else self.channel.without_forwarding()
        return await channel.allocate_producer_ids(broker_id, broker_epoch)
