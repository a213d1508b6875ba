"""The balancer's load monitor: what each broker holds, sampled with DescribeLogDirs.

The balancer in the active controller needs, per broker, its disk capacity, and per replica its
size and the bytes flowing into it. Kafka's brokers report none of this to the controller (Cruise
Control reads a metrics topic written by a reporter in every broker; Confluent's Self-Balancing
does the same with its telemetry topic). Zurau asks instead: every ``interval`` the monitor sends
DescribeLogDirs (a standard API every broker already answers, authorised as cluster DESCRIBE,
which the inter-broker login has) to each live broker over its inter-broker listener, and derives
rates from two samples. Why not heartbeats or a topic: heartbeats are Kafka's wire format and
carry no load; a topic would make the balancer depend on a partition being available while it
heals the cluster. Asking costs one small request per broker per interval on the active
controller only, and its answers are exact sizes, not estimates.

Derived figures (a :class:`LoadSample`):

* ``capacity[b]``: the total bytes of broker ``b``'s log dirs' file systems (``total_bytes``, v4+);
  ``used[b]``: the bytes its replicas hold (the sum of its partition sizes).
* ``sizes[(topic, partition, b)]``: the bytes of that replica on ``b``.
* ``bytes_in[(topic, partition)]``: bytes per second appended to the partition, the growth of its
  leader's size between the two last samples (clamped at 0: retention and compaction shrink logs);
  0 on the first sample.

Invariants: a broker that does not answer (down, or slow beyond the request timeout) is missing
from ``capacity``, and its replicas from ``sizes``: the planner treats an unknown size as 0 and
never plans on a broker it has no capacity for. Nothing here changes the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import DESCRIBE_LOG_DIRS
from zurau.clock import Clock
from zurau.protocol.errors import KafkaError

log = logging.getLogger("zurau.balancer")

Replica = tuple[str, int, int]  # (topic, partition, broker id)


@dataclass(frozen=True)
class LoadSample:
    """One sample of every answering broker's log dirs (see the module docstring)."""

    at_ms: int
    capacity: dict[int, int] = field(default_factory=dict)
    used: dict[int, int] = field(default_factory=dict)
    sizes: dict[Replica, int] = field(default_factory=dict)
    bytes_in: dict[tuple[str, int], float] = field(default_factory=dict)

    def size(self, topic: str, partition: int) -> int:
        """The largest size of the partition on any broker (its leader's, when in sync)."""
        return max((n for (t, p, _), n in self.sizes.items() if t == topic and p == partition), default=0)


def with_rates(
    now: LoadSample, before: LoadSample | None, leaders: dict[tuple[str, int], int]
) -> LoadSample:
    """``now`` with ``bytes_in`` from the growth of each leader replica since ``before``."""
    if before is None or now.at_ms <= before.at_ms:
        return now
    seconds = (now.at_ms - before.at_ms) / 1000
    rates: dict[tuple[str, int], float] = {}
    for (topic, partition), leader in leaders.items():
        key = (topic, partition, leader)
        if key in now.sizes and key in before.sizes:
            rates[(topic, partition)] = max(0.0, (now.sizes[key] - before.sizes[key]) / seconds)
    return LoadSample(now.at_ms, now.capacity, now.used, now.sizes, rates)


class LoadMonitor:
    """Samples the live brokers' log dirs (see the module docstring).

    ``endpoint(broker_id)``: the broker's inter-broker (host, port) in the current metadata, or
    None; ``security``: the inter-broker listener's TLS/SASL as this node's own login.
    """

    def __init__(
        self,
        node_id: int,
        clock: Clock,
        endpoint: Callable[[int], tuple[str, int] | None],
        security: Callable[[], ClientSecurity | None] = lambda: None,
        request_timeout_ms: int = 10_000,
    ) -> None:
        self.node_id = node_id
        self.clock = clock
        self.endpoint = endpoint
        self.security = security
        self.request_timeout_ms = request_timeout_ms
        self.last: LoadSample | None = None
        self._conns: ConnectionCache[int] = ConnectionCache(self._connect, request_timeout_ms / 1000)

    def _connect(self, broker_id: int) -> BrokerConnection:
        address = self.endpoint(broker_id)
        if address is None:
            raise ClientError(f"broker {broker_id} has no inter-broker endpoint")
        return BrokerConnection(
            address[0], address[1], client_id=f"zurau-balancer-{self.node_id}",
            request_timeout=self.request_timeout_ms / 1000, node_id=broker_id, security=self.security(),
        )

    async def sample(self, brokers: Sequence[int], leaders: dict[tuple[str, int], int]) -> LoadSample:
        """Ask every broker in ``brokers`` at once; the new sample (rates against the last one)
        becomes :attr:`last`."""
        answers = await asyncio.gather(*(self._ask(b) for b in brokers))
        capacity: dict[int, int] = {}
        used: dict[int, int] = {}
        sizes: dict[Replica, int] = {}
        for broker, answer in zip(brokers, answers, strict=True):
            if answer is None:
                continue
            total, replicas = answer
            capacity[broker] = total
            used[broker] = sum(replicas.values())
            for (topic, partition), n in replicas.items():
                sizes[(topic, partition, broker)] = n
        sample = with_rates(LoadSample(self.clock.now_ms(), capacity, used, sizes), self.last, leaders)
        self.last = sample
        return sample

    async def _ask(self, broker: int) -> tuple[int, dict[tuple[str, int], int]] | None:
        try:
            conn = await self._conns.get(broker)
            resp = await conn.call(DESCRIBE_LOG_DIRS({"topics": None}))
        except (TimeoutError, ClientError, KafkaError, OSError) as e:
            log.debug("load of broker %d not sampled: %s", broker, e)
            with contextlib.suppress(Exception):
                await self._conns.drop(broker)
            return None
        total = 0
        replicas: dict[tuple[str, int], int] = {}
        for d in resp.get("results", []):
            if d.get("error_code"):
                continue
            total += max(0, int(d.get("total_bytes", -1)))
            for t in d.get("topics", []):
                for p in t.get("partitions", []):
                    if not p.get("is_future_key"):
                        key = (t["name"], p["partition_index"])
                        replicas[key] = replicas.get(key, 0) + int(p["partition_size"])
        return total, replicas

    async def close(self) -> None:
        await self._conns.close()


__all__ = ["LoadMonitor", "LoadSample", "with_rates"]
