"""What clients pushed (KIP-714), kept per client instance for the broker's ``/metrics`` and the
console: the latest value of each series, bounded in clients and series.

Per client instance (:class:`ClientTelemetry`): its ids and software (from the requests), the
resource attributes of its last push, when it last pushed, its push interval, and its series by
(OTLP metric name, point attributes):

* a gauge, and a sum with CUMULATIVE temporality, keep the latest value pushed;
* a sum with DELTA temporality (what the broker asks for: ``delta_temporality=true``) is
  accumulated: each push adds its value, so the series is the total since the broker first saw
  it (a Prometheus counter when the sum is monotonic).

Bounds (the invariants that keep ``/metrics`` small whatever clients push):

* at most ``max_clients`` client instances: a push from a new client beyond that drops the one
  that pushed least recently;
* at most :data:`MAX_SERIES_PER_CLIENT` series per client (points beyond it are dropped, counted
  in ``dropped_points``) and :data:`MAX_LABELS` attributes per point (the rest dropped, in
  key order);
* a client that has not pushed for :func:`expiry_ms` (three push intervals, at least 60 s,
  Kafka's client instance expiry) is forgotten at the next push or read.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from zurau.protocol.otlp_metrics import DELTA, SUM, MetricsData

MAX_SERIES_PER_CLIENT = 2000
MAX_LABELS = 8
MIN_EXPIRY_MS = 60_000


def expiry_ms(interval_ms: int) -> int:
    """How long a client's series outlive its last push."""
    return max(MIN_EXPIRY_MS, 3 * interval_ms)


@dataclass(slots=True)
class Series:
    """One series' value; ``kind`` is ``gauge`` or ``sum`` (a sum is a counter when ``monotonic``)."""

    kind: str
    value: float
    monotonic: bool = False
    unit: str = ""
    description: str = ""


@dataclass(slots=True)
class ClientTelemetry:
    client_instance_id: uuid.UUID
    client_id: str
    software_name: str | None
    software_version: str | None
    source_address: str | None
    interval_ms: int
    first_push_ms: int
    last_push_ms: int
    pushes: int = 0
    dropped_points: int = 0
    terminating: bool = False
    resource: dict[str, str] = field(default_factory=dict)
    series: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = field(default_factory=dict)


class ClientTelemetryStore:
    """The pushed metrics of the clients of one broker (see the module docstring)."""

    def __init__(self, max_clients: int = 1000) -> None:
        self.max_clients = max_clients
        self._clients: OrderedDict[uuid.UUID, ClientTelemetry] = OrderedDict()  # least recent push first

    def record(
        self,
        now_ms: int,
        client_instance_id: uuid.UUID,
        client_id: str,
        software: tuple[str | None, str | None],
        source_address: str | None,
        interval_ms: int,
        data: MetricsData,
        terminating: bool = False,
    ) -> None:
        """Apply one accepted push."""
        self.expire(now_ms)
        c = self._clients.pop(client_instance_id, None)
        if c is None:
            c = ClientTelemetry(
                client_instance_id,
                client_id,
                software[0],
                software[1],
                source_address,
                interval_ms,
                now_ms,
                now_ms,
            )
        c.client_id, c.interval_ms, c.last_push_ms = client_id, interval_ms, now_ms
        c.software_name, c.software_version = software
        c.source_address = source_address
        c.pushes += 1
        c.terminating = terminating
        if data.resource:
            c.resource = dict(data.resource)
        for p in data.points:
            attrs = p.attributes[:MAX_LABELS]
            key = (p.name, attrs)
            s = c.series.get(key)
            if s is None:
                if len(c.series) >= MAX_SERIES_PER_CLIENT:
                    c.dropped_points += 1
                    continue
                c.series[key] = Series(p.kind, p.value, p.kind == SUM and p.monotonic, p.unit, p.description)
            elif p.kind == SUM and p.temporality == DELTA and s.kind == SUM:
                s.value += p.value
            else:
                s.kind, s.value = p.kind, p.value
        self._clients[client_instance_id] = c
        while len(self._clients) > self.max_clients:
            self._clients.popitem(last=False)

    def expire(self, now_ms: int) -> None:
        """Forget the clients whose last push is older than their expiry."""
        gone = [k for k, c in self._clients.items() if now_ms - c.last_push_ms > expiry_ms(c.interval_ms)]
        for k in gone:
            del self._clients[k]

    def forget(self, client_instance_id: uuid.UUID) -> None:
        self._clients.pop(client_instance_id, None)

    def clients(self, now_ms: int) -> Iterator[ClientTelemetry]:
        """The live clients, least recent push first."""
        self.expire(now_ms)
        return iter(list(self._clients.values()))

    def __len__(self) -> int:
        return len(self._clients)
