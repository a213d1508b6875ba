"""Wire-level looks at a classic group for the compat tests, beside the real clients under test.

:class:`GroupProbe` asks the coordinator what a client cannot tell: DescribeGroups (state,
members and their ids), the current generation (found with Heartbeats of a member's id, which
answer ILLEGAL_GENERATION for every generation but the current one, and for that one NONE or
REBALANCE_IN_PROGRESS after re-arming the member's session timer), and LeaveGroup by ``group.instance.id`` as an operator's tool would
send it. :class:`StateMonitor` polls DescribeGroups in the background and keeps every state seen.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tests.component.kafka_wire import KafkaWireClient

T = TypeVar("T")

DESCRIBE_GROUPS, HEARTBEAT, LEAVE_GROUP = 15, 12, 13
ILLEGAL_GENERATION = 22
REBALANCE_IN_PROGRESS = 27


class GroupProbe:
    def __init__(self, host: str, port: int, group: str) -> None:
        self.host, self.port, self.group = host, port, group

    def _run(self, fn: Callable[[KafkaWireClient], Awaitable[T]]) -> T:
        async def go() -> T:
            client = await KafkaWireClient.connect(self.host, self.port, client_id="group-probe")
            try:
                return await fn(client)
            finally:
                await client.close()

        return asyncio.run(go())

    def describe(self) -> dict[str, Any]:
        """The group as DescribeGroups v5 reports it."""

        async def go(c: KafkaWireClient) -> dict[str, Any]:
            r = await c.request(
                DESCRIBE_GROUPS, 5, {"groups": [self.group], "include_authorized_operations": False}
            )
            (g,) = r["groups"]
            assert g["error_code"] == 0, g
            return g

        return self._run(go)

    def heartbeat(self, member_id: str, generation: int, instance_id: str | None) -> int:
        async def go(c: KafkaWireClient) -> int:
            body = {
                "group_id": self.group,
                "generation_id": generation,
                "member_id": member_id,
                "group_instance_id": instance_id,
            }
            return int((await c.request(HEARTBEAT, 3, body))["error_code"])

        return self._run(go)

    def generation(self, member_id: str, instance_id: str | None, upto: int = 200) -> int:
        """The group's current generation, found with ``member_id``'s heartbeats."""
        for gen in range(1, upto):
            code = self.heartbeat(member_id, gen, instance_id)
            if code != ILLEGAL_GENERATION:
                assert code in (0, REBALANCE_IN_PROGRESS), f"heartbeat of {member_id} in {gen}: error {code}"
                return gen
        raise AssertionError(f"no generation below {upto} accepted {member_id}")

    def leave(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        """LeaveGroup v4 naming members by ``group.instance.id`` alone."""

        async def go(c: KafkaWireClient) -> list[dict[str, Any]]:
            body = {
                "group_id": self.group,
                "members": [{"member_id": "", "group_instance_id": i} for i in instance_ids],
            }
            r = await c.request(LEAVE_GROUP, 4, body)
            assert r["error_code"] == 0, r
            return list(r["members"])

        return self._run(go)


class StateMonitor:
    """Polls DescribeGroups every 20 ms; ``states`` holds each state seen, in order, deduplicated."""

    def __init__(self, probe: GroupProbe) -> None:
        self.probe = probe
        self.states: list[str] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._loop()), daemon=True)
        self._thread.start()

    async def _loop(self) -> None:
        p = self.probe
        client = await KafkaWireClient.connect(p.host, p.port, client_id="group-monitor")
        try:
            while not self._stop.is_set():
                r = await client.request(
                    DESCRIBE_GROUPS, 5, {"groups": [p.group], "include_authorized_operations": False}
                )
                state = r["groups"][0]["group_state"]
                if not self.states or self.states[-1] != state:
                    self.states.append(state)
                self.samples += 1
                await asyncio.sleep(0.02)
        finally:
            await client.close()

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(10)
        return self.states
