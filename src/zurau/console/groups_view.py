"""Consumer groups as the console shows them: the list, one group's members, assignments and lag,
the lag history the console samples, and offset resets with a dry-run preview.

Lag of a partition is its log end offset minus the group's committed offset (None without a
commit), as ``kafka-consumer-groups.sh --describe`` computes it (:func:`zurau.client.group_lag.lag_rows`).

:class:`LagSampler` keeps, per group, a bounded history (:data:`HISTORY` points) of
``(time ms, total lag, {partition: lag})``: a group is sampled every ``interval`` seconds from the
first time someone asks for it until :data:`WATCH_SECONDS` after the last time (a console that
nobody looks at does not poll the cluster). A failed sample is skipped.

Resets follow ``kafka-consumer-groups.sh --reset-offsets``: modes ``earliest``, ``latest``,
``offset`` and ``timestamp`` (the first offset at or after it; the end when there is none), each
new offset clamped to the partition's [log start, log end]; ``dry_run`` only returns the plan;
applying it needs a group without members (Kafka's message otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zurau.client.admin import EARLIEST, LATEST, AdminClient, OffsetInfo
from zurau.client.errors import ClientError
from zurau.client.group_lag import lag_rows
from zurau.client.groups_admin import DEAD, EMPTY, GroupAdmin
from zurau.client.types import TopicPartition
from zurau.protocol.errors import (
    GroupIdNotFoundError,
    KafkaError,
    NonEmptyGroupError,
    UnknownTopicOrPartitionError,
)

log = logging.getLogger("zurau.console.groups")

HISTORY = 720
WATCH_SECONDS = 600.0
RESET_MODES = ("earliest", "latest", "offset", "timestamp")


class ResetError(ValueError):
    """A reset request the console refuses (HTTP 400)."""


async def list_groups(ga: GroupAdmin) -> dict[str, Any]:
    listings = await ga.list_groups()
    return {
        "groups": [
            {"group": g.group_id, "state": g.state, "type": g.group_type, "protocol_type": g.protocol_type}
            for g in sorted(listings, key=lambda g: g.group_id)
        ]
    }


async def describe_group(ga: GroupAdmin, group: str) -> dict[str, Any]:
    d, rows = await lag_rows(ga, group)
    return {
        "group": d.group_id,
        "state": d.state,
        "type": d.group_type,
        "protocol_type": d.protocol_type,
        "assignor": d.assignor,
        "coordinator": {"id": d.coordinator.node_id, "host": d.coordinator.host, "port": d.coordinator.port},
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.host,
                "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment],
                "assignment_error": m.assignment_error,
            }
            for m in d.members
        ],
        "offsets": rows,
        "total_lag": sum(r["lag"] or 0 for r in rows),
    }


@dataclass
class _Watched:
    points: deque[dict[str, Any]]
    last_asked: float


class LagSampler:
    """Samples the lag of the groups people look at, every ``interval`` seconds (see module doc)."""

    def __init__(self, ga: GroupAdmin, interval: float = 5.0) -> None:
        self.ga = ga
        self.interval = interval
        self._groups: dict[str, _Watched] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="zurau-console-lag-sampler")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def history(self, group: str) -> dict[str, Any]:
        """The samples so far; starts watching ``group`` (a first sample is taken at once)."""
        w = self._groups.get(group)
        if w is None:
            w = self._groups[group] = _Watched(deque(maxlen=HISTORY), time.monotonic())
            self._wake.set()
        w.last_asked = time.monotonic()
        return {"group": group, "interval_ms": round(self.interval * 1000), "points": list(w.points)}

    async def sample(self, group: str) -> None:
        w = self._groups.get(group)
        if w is None:
            return
        _, rows = await lag_rows(self.ga, group)
        w.points.append(
            {
                "t": int(time.time() * 1000),
                "total": sum(r["lag"] or 0 for r in rows),
                "partitions": {f"{r['topic']}-{r['partition']}": r["lag"] for r in rows},
            }
        )

    async def _run(self) -> None:
        while True:
            now = time.monotonic()
            for group, w in list(self._groups.items()):
                if now - w.last_asked > WATCH_SECONDS:
                    del self._groups[group]
                    continue
                try:
                    await self.sample(group)
                except (KafkaError, ClientError, OSError) as e:
                    log.debug("lag sample of %s failed: %s", group, e)
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)


def check_reset(mode: str, value: int | None) -> None:
    """Refuse (:class:`ResetError`) a reset mode that is not one of :data:`RESET_MODES`, or a
    value the mode needs and lacks (``offset`` and ``timestamp``), or a negative offset."""
    if mode not in RESET_MODES:
        raise ResetError(f"mode must be one of {', '.join(RESET_MODES)}, not {mode!r}")
    if mode in ("offset", "timestamp") and value is None:
        raise ResetError(f"mode {mode} needs a value")
    if mode == "offset" and value is not None and value < 0:
        raise ResetError(f"the offset must not be negative, got {value}")


async def topic_partitions(admin: AdminClient, topics: Sequence[str]) -> list[TopicPartition]:
    """Every partition of ``topics`` (metadata refreshed); an unknown topic raises
    UNKNOWN_TOPIC_OR_PARTITION."""
    tps: list[TopicPartition] = []
    for name in topics:
        meta = await admin.cluster.topic(name, refresh=True)
        if not meta.partitions:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist")
        tps += [TopicPartition(name, p.partition) for p in meta.partitions]
    return tps


async def plan_reset(
    admin: AdminClient,
    tps: Sequence[TopicPartition],
    mode: str,
    value: int | None,
    current: dict[TopicPartition, int | None],
) -> tuple[list[dict[str, Any]], dict[TopicPartition, int]]:
    """The plan rows (``topic, partition, current, new, clamped, log_start, log_end``, sorted)
    and the new offset per partition for a reset of ``tps`` by ``mode`` (checked by
    :func:`check_reset`): each new offset clamped to the partition's [log start, log end]."""
    tps = sorted(set(tps))
    starts = await admin.list_offsets(dict.fromkeys(tps, EARLIEST))
    ends = await admin.list_offsets(dict.fromkeys(tps, LATEST))
    by_time = (
        await admin.list_offsets(dict.fromkeys(tps, value))
        if mode == "timestamp" and value is not None
        else {}
    )

    def offset_of(results: dict[TopicPartition, OffsetInfo | KafkaError], tp: TopicPartition) -> int:
        r = results[tp]
        if isinstance(r, KafkaError):
            raise r
        return r.offset

    plan = []
    offsets: dict[TopicPartition, int] = {}
    for tp in tps:
        start, end = offset_of(starts, tp), offset_of(ends, tp)
        if mode == "earliest":
            target = start
        elif mode == "latest":
            target = end
        elif mode == "timestamp":
            found = offset_of(by_time, tp)
            target = found if found >= 0 else end
        else:
            assert value is not None
            target = value
        new = min(max(target, start), end)
        offsets[tp] = new
        plan.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "current": current.get(tp),
                "new": new,
                "clamped": new != target,
                "log_start": start,
                "log_end": end,
            }
        )
    return plan, offsets


async def reset_offsets(
    ga: GroupAdmin,
    group: str,
    topics: Sequence[str],
    mode: str,
    value: int | None,
    dry_run: bool,
) -> dict[str, Any]:
    """Plan (and unless ``dry_run`` commit) new offsets for ``group`` on every partition of
    ``topics`` (all topics the group committed to when empty)."""
    check_reset(mode, value)
    admin: AdminClient = ga.admin
    d = (await ga.describe_groups([group]))[group]
    if isinstance(d, GroupIdNotFoundError):
        state = DEAD
    elif isinstance(d, KafkaError):
        raise d
    else:
        state = d.state
    committed = await ga.committed_offsets(group) if state != DEAD else {}
    tps: list[TopicPartition] = []
    if not topics:
        tps = sorted(committed)
        if not tps:
            raise ResetError(f"group '{group}' has no committed offsets; name the topics to reset")
    tps += await topic_partitions(admin, topics)
    plan, offsets = await plan_reset(admin, tps, mode, value, dict(committed))
    applied = False
    if not dry_run:
        if state not in (EMPTY, DEAD):
            raise NonEmptyGroupError(
                f"Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
            )
        results = await ga.commit_offsets(group, offsets)
        for err in results.values():
            if err is not None:
                raise err
        applied = True
    return {
        "group": group,
        "state": state,
        "mode": mode,
        "dry_run": dry_run,
        "applied": applied,
        "plan": plan,
    }


__all__ = [
    "HISTORY",
    "RESET_MODES",
    "LagSampler",
    "ResetError",
    "check_reset",
    "describe_group",
    "list_groups",
    "plan_reset",
    "reset_offsets",
    "topic_partitions",
]
