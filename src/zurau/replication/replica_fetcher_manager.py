"""The follower's fetchers (Kafka's ``ReplicaFetcherManager``): which fetcher copies which
partition.

A followed partition goes to fetcher ``(leader id, fetcher id)``, where the fetcher id is a stable
hash of the topic and partition modulo ``num.replica.fetchers``; so there are at most that many
fetchers (and connections) per leader broker. A fetcher is started with its first partition and
closed when its last one leaves. Moving a partition to another leader removes it from the old
fetcher first, so at most one fetcher ever writes to a partition's log.

Resizing (Kafka's ``AbstractFetcherManager.resizeThreadPool``, a dynamic
``num.replica.fetchers``): :meth:`ReplicaFetcherManager.resize` moves every partition whose fetcher
id changes to its new fetcher with its fetch state (:meth:`ReplicaFetcher.adopt`) and closes the
fetchers left without partitions. Nothing is lost or appended twice: the fetch position is the
local log end offset, a partition is in exactly one fetcher at any time (the move happens on the
event loop between two of its awaits), and the fetcher it left ignores any answer still in flight
for it.

With remote storage on this broker, ``tier_bootstrap`` (see
:class:`zurau.replication.replica_fetcher.TierBootstrap`) is handed to every fetcher; the follower
logs must then also implement ``install_follower_aux_state`` (``TieredFollowerLogs``), checked at
construction.

Connections go to the leader's inter-broker listener (``inter.broker.listener.name``) as the
metadata image registers it, over :class:`zurau.client.connection.BrokerConnection` (the same
client the controller channel forwards with).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import zlib
from collections.abc import Callable

from zurau.client.connection import BrokerConnection
from zurau.client.errors import BrokerUnreachableError
from zurau.client.security import ClientSecurity
from zurau.replication.partition import Partition
from zurau.replication.replica_fetcher import (
    FetcherConfig,
    FollowerLogs,
    LeaderConnection,
    ReplicaFetcher,
    TierBootstrap,
    check_tier_bootstrap,
)
from zurau.replication.replication_quota import ReplicationQuota

log = logging.getLogger("zurau.replication")


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """The fetcher of a partition (stable across processes, unlike ``hash(str)``)."""
    return (31 * zlib.crc32(topic.encode()) + partition) % max(num_fetchers, 1)


class ReplicaFetcherManager:
    """See the module docstring. Implements the replica manager's ``FollowerFetchers``."""

    def __init__(
        self,
        *,
        node_id: int,
        logs: FollowerLogs,
        endpoint: Callable[[int], tuple[str, int] | None],
        topic_id: Callable[[str], uuid.UUID | None],
        broker_epoch: Callable[[], int],
        config: FetcherConfig,
        num_fetchers: int = 1,
        security: ClientSecurity | None = None,
        quota: ReplicationQuota | None = None,
        tier_bootstrap: TierBootstrap | None = None,
    ) -> None:
        check_tier_bootstrap(logs, tier_bootstrap)
        self.node_id = node_id
        self.logs = logs
        self._endpoint = endpoint
        self._topic_id = topic_id
        self._broker_epoch = broker_epoch
        self.config = config
        self.num_fetchers = num_fetchers
        self.security = security
        self.quota = quota  # follower.replication.throttled.* (shared by every fetcher)
        # The OFFSET_MOVED_TO_TIERED_STORAGE path (None: this broker has no remote storage).
        self.tier_bootstrap = tier_bootstrap
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._assigned: dict[tuple[str, int], tuple[int, int]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def _connect(self, leader: int) -> LeaderConnection:
        address = self._endpoint(leader)
        if address is None:
            raise BrokerUnreachableError(f"broker {leader} has no registered inter-broker endpoint")
        conn = BrokerConnection(
            address[0],
            address[1],
            client_id=f"zurau-replica-fetcher-{self.node_id}",
            request_timeout=self.config.socket_timeout_ms / 1000,
            node_id=leader,
            security=self.security,
        )
        await conn.connect(timeout=self.config.socket_timeout_ms / 1000)
        return conn

    def add_partition(self, p: Partition) -> None:
        """Fetch ``p`` from ``p.leader_id`` at ``p.leader_epoch`` (moving it off another leader's
        fetcher first)."""
        key = (p.topic, p.index)
        topic_id = self._topic_id(p.topic)
        if topic_id is None:
            log.warning("%s-%d: no topic id in the metadata; not fetching", p.topic, p.index)
            return
        target = (p.leader_id, fetcher_id(p.topic, p.index, self.num_fetchers))
        if self._assigned.get(key) not in (None, target):
            self.remove_partition(p.topic, p.index)
        self._fetcher(target).add_partition(p.topic, p.index, topic_id, p.leader_epoch)
        self._assigned[key] = target

    def _fetcher(self, target: tuple[int, int]) -> ReplicaFetcher:
        """The fetcher ``(leader id, fetcher id)``, started now if there is none."""
        fetcher = self.fetchers.get(target)
        if fetcher is None:
            fetcher = ReplicaFetcher(
                node_id=self.node_id,
                source_id=target[0],
                fetcher_id=target[1],
                logs=self.logs,
                connect=self._connect,
                broker_epoch=self._broker_epoch,
                config=self.config,
                quota=self.quota,
                tier_bootstrap=self.tier_bootstrap,
            )
            self.fetchers[target] = fetcher
            fetcher.start()
        return fetcher

    def remove_partition(self, topic: str, index: int) -> None:
        target = self._assigned.pop((topic, index), None)
        if target is None:
            return
        fetcher = self.fetchers.get(target)
        if fetcher is None:
            return
        fetcher.remove_partition(topic, index)
        self._close_if_idle(target)

    def _close_if_idle(self, target: tuple[int, int]) -> None:
        fetcher = self.fetchers.get(target)
        if fetcher is None or fetcher.partitions:
            return
        del self.fetchers[target]
        task = asyncio.get_running_loop().create_task(fetcher.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def resize(self, num_fetchers: int) -> int:
        """Use ``num_fetchers`` fetchers per leader from now on (see the module docstring);
        returns how many partitions moved. Fewer than one is refused with a warning."""
        if num_fetchers < 1:
            log.warning("num.replica.fetchers=%d refused; keeping %d", num_fetchers, self.num_fetchers)
            return 0
        old, self.num_fetchers = self.num_fetchers, num_fetchers
        if num_fetchers == old:
            return 0
        left: set[tuple[int, int]] = set()
        moved = 0
        for (topic, index), target in list(self._assigned.items()):
            new_target = (target[0], fetcher_id(topic, index, num_fetchers))
            if new_target == target:
                continue
            fetcher = self.fetchers.get(target)
            state = fetcher.release(topic, index) if fetcher is not None else None
            if state is None:  # not fetched (cannot happen: assigned means in its fetcher)
                del self._assigned[(topic, index)]
                continue
            self._fetcher(new_target).adopt(state)
            self._assigned[(topic, index)] = new_target
            left.add(target)
            moved += 1
        for target in left:
            self._close_if_idle(target)
        log.info(
            "broker %d: replica fetchers per leader %d -> %d; %d partition(s) moved, %d fetcher(s) now",
            self.node_id, old, num_fetchers, moved, len(self.fetchers),
        )
        return moved

    async def close(self) -> None:
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        self._assigned.clear()
        for f in fetchers:
            await f.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
