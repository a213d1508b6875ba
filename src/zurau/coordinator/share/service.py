"""The share coordinator's service face: one async method per share-group-state API (KIP-932).

Handlers see the share coordinator only through :class:`ShareCoordinatorService` (Kafka's
``ShareCoordinator`` as ``KafkaApis`` calls it). :class:`RuntimeShareCoordinatorService`
implements it over a :class:`~zurau.coordinator.share.share_runtime.ShareRuntime`.

Invariants:

* Each method takes a request's group id and topics (the generated request items) and returns
  the response's ``results`` (the generated response items), one per requested topic, in request
  order, each with one entry per requested partition, in request order.
* Every share-partition is one operation submitted to the shard of its ``__share_group_state``
  partition (routed by ``groupId:topicId:partition``); the partitions of one request run
  concurrently and are answered independently. A coordinator problem (NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT) is that
  partition's error code, as Kafka's ``ShareCoordinatorService`` answers it.
* An empty group id is INVALID_REQUEST for every partition, a stopped coordinator
  COORDINATOR_NOT_AVAILABLE for every partition (Kafka's checks before any routing).
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from zurau.coordinator.share.share_coordinator_shard import (
    Effects,
    ReadStateResult,
    ReadStateSummaryResult,
    ShareStateResult,
)
from zurau.coordinator.share.share_runtime import ShareRuntime
from zurau.coordinator.share.share_state_records import coordinator_key
from zurau.protocol.errors import CoordinatorNotAvailableError, InvalidRequestError, KafkaError
from zurau.protocol.messages import (
    DeleteShareGroupStateRequestTopics,
    DeleteShareGroupStateResponseResults,
    InitializeShareGroupStateRequestTopics,
    InitializeShareGroupStateResponseResults,
    ReadShareGroupStateRequestTopics,
    ReadShareGroupStateResponseResults,
    ReadShareGroupStateResponseResultsPartitionsStateBatches,
    ReadShareGroupStateSummaryRequestTopics,
    ReadShareGroupStateSummaryResponseResults,
    WriteShareGroupStateRequestTopics,
    WriteShareGroupStateResponseResults,
)
from zurau.protocol.share_states import StateBatch

EMPTY_GROUP_ID = "Group id must be non-empty."

R = TypeVar("R")


class ShareCoordinatorService(Protocol):
    """What the broker's handlers may ask of the share coordinator."""

    # ------------------------------------------------------------------ routing
    @property
    def topic(self) -> str: ...

    def partition_for(self, key: str) -> int:
        """The ``__share_group_state`` partition of a ``groupId:topicId:partition`` key."""
        ...

    def coordinator_error(self, key: str) -> KafkaError | None:
        """None if this broker coordinates the key now (creating ``__share_group_state`` on first use)."""
        ...

    def lookup_error(self, key: str) -> KafkaError | None:
        """:meth:`coordinator_error` as FindCoordinator needs it."""
        ...

    # ------------------------------------------------------------------ APIs
    async def initialize_state(
        self, group_id: str, topics: Sequence[InitializeShareGroupStateRequestTopics]
    ) -> list[InitializeShareGroupStateResponseResults]: ...

    async def read_state(
        self, group_id: str, topics: Sequence[ReadShareGroupStateRequestTopics]
    ) -> list[ReadShareGroupStateResponseResults]: ...

    async def write_state(
        self, group_id: str, topics: Sequence[WriteShareGroupStateRequestTopics]
    ) -> list[WriteShareGroupStateResponseResults]: ...

    async def delete_state(
        self, group_id: str, topics: Sequence[DeleteShareGroupStateRequestTopics]
    ) -> list[DeleteShareGroupStateResponseResults]: ...

    async def read_state_summary(
        self, group_id: str, topics: Sequence[ReadShareGroupStateSummaryRequestTopics]
    ) -> list[ReadShareGroupStateSummaryResponseResults]: ...


def _batch(b: Any) -> StateBatch:
    return StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])


def _batch_out(b: StateBatch) -> ReadShareGroupStateResponseResultsPartitionsStateBatches:
    return {
        "first_offset": b.first_offset,
        "last_offset": b.last_offset,
        "delivery_state": b.delivery_state,
        "delivery_count": b.delivery_count,
    }


class RuntimeShareCoordinatorService:
    """:class:`ShareCoordinatorService` over the share coordinator runtime."""

    def __init__(self, runtime: ShareRuntime) -> None:
        self.runtime = runtime

    # ------------------------------------------------------------------ routing
    @property
    def topic(self) -> str:
        return self.runtime.topic

    def partition_for(self, key: str) -> int:
        return self.runtime.partition_for(key)

    def coordinator_error(self, key: str) -> KafkaError | None:
        return self.runtime.coordinator_error(key)

    def lookup_error(self, key: str) -> KafkaError | None:
        return self.runtime.lookup_error(key)

    # ------------------------------------------------------------------ plumbing
    async def _each(
        self,
        group_id: str,
        topics: Sequence[Any],
        op: Callable[[uuid.UUID, Any], Callable[[int, int], Effects]],
        on_error: Callable[[int, str | None], R],
    ) -> list[tuple[uuid.UUID, list[tuple[int, R]]]]:
        """Run ``op(topic_id, partition_item)`` for every requested share-partition, concurrently;
        ``(topic_id, [(partition, result), ...])`` per topic, in request order."""
        pre: tuple[int, str | None] | None = None
        if not group_id:
            pre = InvalidRequestError.code, EMPTY_GROUP_ID
        elif not self.runtime.started:
            pre = CoordinatorNotAvailableError.code, "The share coordinator is not available."
        keyed = [(t["topic_id"], p) for t in topics for p in t["partitions"]]
        if pre is not None:
            results: list[R] = [on_error(*pre) for _ in keyed]
        else:
            results = list(
                await asyncio.gather(*(self._submit(group_id, tid, p, op, on_error) for tid, p in keyed))
            )
        out: list[tuple[uuid.UUID, list[tuple[int, R]]]] = []
        it = iter(zip(keyed, results, strict=True))
        for t in topics:
            out.append(
                (
                    t["topic_id"],
                    [(p["partition"], r) for (_tid, p), r in itertools.islice(it, len(t["partitions"]))],
                )
            )
        return out

    def _submit(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        item: Any,
        op: Callable[[uuid.UUID, Any], Callable[[int, int], Effects]],
        on_error: Callable[[int, str | None], R],
    ) -> Awaitable[R]:
        key = coordinator_key(group_id, topic_id, item["partition"])
        err = self.runtime.coordinator_error(key)  # creates __share_group_state on first use
        if err is not None:
            fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
            fut.set_result(on_error(err.code, err.message))
            return fut
        return self.runtime.submit(key, op(topic_id, item), lambda e: on_error(e.code, e.message))

    # ------------------------------------------------------------------ APIs
    async def initialize_state(
        self, group_id: str, topics: Sequence[InitializeShareGroupStateRequestTopics]
    ) -> list[InitializeShareGroupStateResponseResults]:
        rt = self.runtime  # rt.core is read when an operation runs (rebuilt if the topic's count differs)

        def op(tid: uuid.UUID, p: Any) -> Callable[[int, int], Effects]:
            return lambda token, now: rt.core.initialize(
                token, group_id, tid, p["partition"], p["state_epoch"], p["start_offset"], now
            )

        done = await self._each(group_id, topics, op, ShareStateResult)
        return [
            {
                "topic_id": tid,
                "partitions": [
                    {"partition": i, "error_code": r.error_code, "error_message": r.error_message}
                    for i, r in parts
                ],
            }
            for tid, parts in done
        ]

    async def write_state(
        self, group_id: str, topics: Sequence[WriteShareGroupStateRequestTopics]
    ) -> list[WriteShareGroupStateResponseResults]:
        rt = self.runtime

        def op(tid: uuid.UUID, p: Any) -> Callable[[int, int], Effects]:
            batches = [_batch(b) for b in p["state_batches"]]
            return lambda token, now: rt.core.write(
                token,
                group_id,
                tid,
                p["partition"],
                p["state_epoch"],
                p["leader_epoch"],
                p["start_offset"],
                batches,
                now,
                p.get("delivery_complete_count", -1),
            )

        done = await self._each(group_id, topics, op, ShareStateResult)
        return [
            {
                "topic_id": tid,
                "partitions": [
                    {"partition": i, "error_code": r.error_code, "error_message": r.error_message}
                    for i, r in parts
                ],
            }
            for tid, parts in done
        ]

    async def read_state(
        self, group_id: str, topics: Sequence[ReadShareGroupStateRequestTopics]
    ) -> list[ReadShareGroupStateResponseResults]:
        rt = self.runtime

        def op(tid: uuid.UUID, p: Any) -> Callable[[int, int], Effects]:
            return lambda token, now: rt.core.read(
                token, group_id, tid, p["partition"], p["leader_epoch"], now
            )

        done = await self._each(group_id, topics, op, ReadStateResult)
        return [
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition": i,
                        "error_code": r.error_code,
                        "error_message": r.error_message,
                        "state_epoch": r.state_epoch,
                        "start_offset": r.start_offset,
                        "state_batches": [_batch_out(b) for b in r.state_batches],
                    }
                    for i, r in parts
                ],
            }
            for tid, parts in done
        ]

    async def read_state_summary(
        self, group_id: str, topics: Sequence[ReadShareGroupStateSummaryRequestTopics]
    ) -> list[ReadShareGroupStateSummaryResponseResults]:
        rt = self.runtime

        def op(tid: uuid.UUID, p: Any) -> Callable[[int, int], Effects]:
            return lambda token, now: rt.core.read_summary(token, group_id, tid, p["partition"], now)

        done = await self._each(group_id, topics, op, ReadStateSummaryResult)
        return [
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition": i,
                        "error_code": r.error_code,
                        "error_message": r.error_message,
                        "state_epoch": r.state_epoch,
                        "leader_epoch": r.leader_epoch,
                        "start_offset": r.start_offset,
                        "delivery_complete_count": r.delivery_complete_count,
                    }
                    for i, r in parts
                ],
            }
            for tid, parts in done
        ]

    async def delete_state(
        self, group_id: str, topics: Sequence[DeleteShareGroupStateRequestTopics]
    ) -> list[DeleteShareGroupStateResponseResults]:
        rt = self.runtime

        def op(tid: uuid.UUID, p: Any) -> Callable[[int, int], Effects]:
            return lambda token, now: rt.core.delete(token, group_id, tid, p["partition"], now)

        done = await self._each(group_id, topics, op, ShareStateResult)
        return [
            {
                "topic_id": tid,
                "partitions": [
                    {"partition": i, "error_code": r.error_code, "error_message": r.error_message}
                    for i, r in parts
                ],
            }
            for tid, parts in done
        ]


__all__ = ["EMPTY_GROUP_ID", "RuntimeShareCoordinatorService", "ShareCoordinatorService"]
