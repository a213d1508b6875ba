"""Sends a leader's ISR proposals to the active controller (Kafka's ``AlterPartitionManager``).

The replica manager proposes (``submit``) and marks the partition's ``pending_isr``; proposals
are batched into one AlterPartition request at a time (v3 form: each ISR member with the broker
epoch its last fetch carried, so the controller can refuse a replica that restarted since). The
controller's answer goes back per partition to
:meth:`~zurau.replication.replica_manager.ReplicaManager.apply_isr_change`, which also clears the
pending state on any error so that a later check proposes again; a request that fails as a whole
(no controller reachable) does the same after ``retry_backoff_ms``.

:func:`isr_maintenance` is the leader's periodic check for followers that fell out of sync
(every half ``replica.lag.time.max.ms``, as Kafka schedules its ``isr-expiration`` task).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable

from zurau.protocol.errors import RequestTimedOutError
from zurau.protocol.messages import (
    AlterPartitionRequest,
    AlterPartitionRequestTopicsPartitions,
    AlterPartitionResponse,
)
from zurau.replication.partition import Partition
from zurau.replication.replica_manager import ReplicaManager

log = logging.getLogger("zurau.replication")

Send = Callable[[AlterPartitionRequest], Awaitable[AlterPartitionResponse]]


class AlterPartitionManager:
    def __init__(
        self,
        *,
        node_id: int,
        replica_manager: ReplicaManager,
        broker_epoch: Callable[[], int],
        topic_id: Callable[[str], uuid.UUID | None],
        send: Send,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.node_id = node_id
        self.rm = replica_manager
        self._broker_epoch = broker_epoch
        self._topic_id = topic_id
        self._send = send
        self.retry_backoff_ms = retry_backoff_ms
        # (topic, partition) -> (leader epoch, partition epoch, ISR with broker epochs)
        self._queued: dict[tuple[str, int], tuple[int, int, list[tuple[int, int]]]] = {}
        self._task: asyncio.Task[None] | None = None

    def submit(self, p: Partition, new_isr: list[int]) -> None:
        """Queue ``p``'s proposal (replacing an unsent one) and make sure a sender runs."""
        epochs = []
        for r in new_isr:
            if r == self.node_id:
                epochs.append((r, self._broker_epoch()))
            else:
                state = p.followers.get(r)
                epochs.append((r, state.broker_epoch if state is not None else -1))
        self._queued[(p.topic, p.index)] = (p.leader_epoch, p.partition_epoch, epochs)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain(), name=f"zurau-alter-partition-{self.node_id}")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def request(self, items: dict[tuple[str, int], tuple[int, int, list[tuple[int, int]]]]) -> AlterPartitionRequest:
        """The AlterPartition body for ``items`` (both ISR forms: v2 reads ``new_isr``)."""
        topics: dict[uuid.UUID, list[AlterPartitionRequestTopicsPartitions]] = {}
        for (topic, index), (leader_epoch, partition_epoch, isr) in items.items():
            tid = self._topic_id(topic)
            if tid is None:
                continue
            topics.setdefault(tid, []).append(
                {
                    "partition_index": index,
                    "leader_epoch": leader_epoch,
                    "new_isr": [b for b, _e in isr],
                    "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": e} for b, e in isr],
                    "leader_recovery_state": 0,
                    "partition_epoch": partition_epoch,
                }
            )
        return {
            "broker_id": self.node_id,
            "broker_epoch": self._broker_epoch(),
            "topics": [{"topic_id": tid, "partitions": parts} for tid, parts in topics.items()],
        }

    async def _drain(self) -> None:
        while self._queued:
            items, self._queued = self._queued, {}
            try:
                resp = await self._send(self.request(items))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("AlterPartition failed: %s", e)
                resp = {"error_code": RequestTimedOutError.code, "topics": []}
            self._apply(items, resp)
            if resp.get("error_code"):
                await asyncio.sleep(self.retry_backoff_ms / 1000)

    def _apply(
        self, items: dict[tuple[str, int], tuple[int, int, list[tuple[int, int]]]], resp: AlterPartitionResponse
    ) -> None:
        names: dict[uuid.UUID, str] = {}
        for topic, _index in items:
            tid = self._topic_id(topic)
            if tid is not None:
                names[tid] = topic
        answered: set[tuple[str, int]] = set()
        top_error = resp.get("error_code", 0)
        if not top_error:
            for t in resp.get("topics") or ():
                name = names.get(t["topic_id"])
                if name is None:
                    continue
                for pd in t["partitions"]:
                    key = (name, pd["partition_index"])
                    if key not in items:
                        continue
                    answered.add(key)
                    self.rm.apply_isr_change(
                        name,
                        pd["partition_index"],
                        error_code=pd["error_code"],
                        leader_epoch=pd["leader_epoch"] if pd["leader_id"] == self.node_id else -1,
                        isr=list(pd["isr"]),
                        partition_epoch=pd["partition_epoch"],
                    )
        for topic, index in items:
            if (topic, index) not in answered:
                self.rm.apply_isr_change(topic, index, error_code=top_error or RequestTimedOutError.code)


async def isr_maintenance(rm: ReplicaManager, max_lag_ms: int) -> None:
    """Forever: every ``max_lag_ms / 2`` propose dropping the followers that fell out of sync."""
    interval = max(max_lag_ms / 2000, 0.01)
    while True:
        await asyncio.sleep(interval)
        try:
            rm.maybe_shrink_isr(max_lag_ms)
        except Exception:
            log.exception("ISR maintenance failed")
