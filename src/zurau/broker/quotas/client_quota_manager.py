"""Client quotas, enforced as Kafka's ``ClientQuotaManager`` and ``ConnectionQuotas`` do.

**Which quota applies.** For a request by user ``u`` (the principal's name; ``ANONYMOUS``
without authentication) with client id ``c``, the first entity of this list that has a value for
the quota key wins (Kafka's precedence, most specific first)::

    user=u, client-id=c        user=<default>, client-id=c      client-id=c
    user=u, client-id=<default> user=<default>, client-id=<default> client-id=<default>
    user=u                      user=<default>

read in columns (1-3, 4-6, 7-8). No match: that client is not limited for that key.

**Who shares it.** Usage is counted per the *matched* entity, Kafka's metric tags: a quota
matched at ``user=u`` (or ``user=<default>``) is shared by all of ``u``'s clients; one matched at
``client-id=c`` (or its default) by every user's client ``c``; the others per ``(u, c)``.

**Rates and throttling** (:mod:`.rate`): each (key, user tag, client tag) has a
:class:`~.rate.SampledRate` over ``quota.window.num`` windows of ``quota.window.size.seconds``.
Every value is recorded (even over the quota, as Kafka does); when the rate is then above the
quota, the answer is a throttle time in ms (for ``request_percentage`` at most one window).
The connection puts it in the response's ``throttle_time_ms`` and stops reading from the client
for that long after sending it (KIP-219).

* ``producer_byte_rate``: the size of each Produce request (acks=0 included);
* ``consumer_byte_rate``: the record bytes of each consumer Fetch response; a throttled fetch
  is answered empty and its bytes are taken back off the rate (Kafka's ``unrecord``), and a fetch
  reads at most ``quota * quota.window.size.seconds`` bytes (beyond its first batch);
* ``request_percentage``: the time the broker spent on each request, as a percentage of one
  thread (100 = one core), for every API but ApiVersions, SASL and inter-broker ones;
* ``connection_creation_rate`` (``ip`` entities: an address, else ``ip=<default>``): a new
  connection over the rate is closed at once (Kafka delays the close by the throttle time);
* ``controller_mutation_rate`` (KIP-599): partitions created or deleted per second, against a
  token bucket per matched entity instead of a sampled rate; see :mod:`.controller_mutation_quota`.

**Fast path.** With no quota in the metadata image, :attr:`enabled` is False and callers skip
everything (one attribute read and a length test per request). Resolutions are cached per
(key, user, client id) and dropped whenever the image's quota mapping changes; sensors idle for
an hour are forgotten (Kafka's inactive-sensor expiry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from zurau.broker.quotas.controller_mutation_quota import ControllerMutationQuota
from zurau.broker.quotas.rate import SampledRate, record_and_throttle, throttle_time_ms
from zurau.broker.quotas.token_bucket import TokenBucket
from zurau.metadata.records import ClientQuotaEntity

QuotaMap = Mapping[ClientQuotaEntity, Mapping[str, float]]

PRODUCE = "producer_byte_rate"
FETCH = "consumer_byte_rate"
REQUEST = "request_percentage"
CONNECTION = "connection_creation_rate"
CONTROLLER_MUTATION = "controller_mutation_rate"

_IDLE_SENSOR_MS = 3_600_000
_SWEEP_EVERY_MS = 60_000

# A resolved quota: (bound, user tag, client-id tag); None when no quota applies.
_Resolved = tuple[float, str, str] | None


def _candidates(user: str, client_id: str) -> list[tuple[ClientQuotaEntity, str, str]]:
    """Entities in Kafka's precedence order, each with the (user, client-id) tags of its sensor."""
    return [
        ((("client-id", client_id), ("user", user)), user, client_id),
        ((("client-id", None), ("user", user)), user, client_id),
        ((("user", user),), user, ""),
        ((("client-id", client_id), ("user", None)), user, client_id),
        ((("client-id", None), ("user", None)), user, client_id),
        ((("user", None),), user, ""),
        ((("client-id", client_id),), "", client_id),
        ((("client-id", None),), "", client_id),
    ]


def resolve_quota(quotas: QuotaMap, key: str, user: str, client_id: str) -> _Resolved:
    """The quota ``key`` of client (``user``, ``client_id``) and the tags of the sensor that
    counts it, or None (see the module docstring)."""
    for entity, user_tag, client_tag in _candidates(user, client_id):
        values = quotas.get(entity)
        if values is not None and key in values:
            return values[key], user_tag, client_tag
    return None


def user_of(principal: str) -> str:
    """The quota user of a principal ``Type:name``: its name."""
    _type, sep, name = principal.partition(":")
    return name if sep else principal


class ClientQuotaManager:
    """See the module docstring. ``quotas()`` gives the image's current quota mapping."""

    def __init__(
        self, quotas: Callable[[], QuotaMap], samples: int, window_s: int, now_ms: Callable[[], int]
    ) -> None:
        self._quotas = quotas
        self.samples = samples
        self.window_ms = window_s * 1000
        self.now_ms = now_ms
        self._seen: QuotaMap | None = None
        self._resolved: dict[tuple[str, str, str], _Resolved] = {}
        self._sensors: dict[tuple[str, str, str], SampledRate] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._last_sweep = 0

    @property
    def enabled(self) -> bool:
        """True when any client quota is configured."""
        return bool(self._quotas())

    # ------------------------------------------------------------------ resolution
    def _resolve(self, key: str, user: str, client_id: str) -> _Resolved:
        quotas = self._quotas()
        if quotas is not self._seen:
            self._seen = quotas
            self._resolved.clear()
        k = (key, user, client_id)
        try:
            return self._resolved[k]
        except KeyError:
            found = self._resolved[k] = resolve_quota(quotas, key, user, client_id)
            return found

    def _sensor(self, key: str, user_tag: str, client_tag: str, now: int) -> SampledRate:
        k = (key, user_tag, client_tag)
        sensor = self._sensors.get(k)
        if sensor is None:
            self._sweep(now)
            sensor = self._sensors[k] = SampledRate(self.samples, self.window_ms, now)
        return sensor

    def _sweep(self, now: int) -> None:
        """Forget sensors and buckets idle for an hour (at most once a minute)."""
        if now - self._last_sweep < _SWEEP_EVERY_MS:
            return
        self._last_sweep = now
        for old in [s for s, r in self._sensors.items() if now - r.last_record_ms >= _IDLE_SENSOR_MS]:
            del self._sensors[old]
        for gone in [k for k, b in self._buckets.items() if now - b.last_ms >= _IDLE_SENSOR_MS]:
            del self._buckets[gone]

    # ------------------------------------------------------------------ recording
    def record(self, key: str, user: str, client_id: str, value: float) -> int:
        """Record ``value`` against the client's quota ``key``; the throttle time in ms (0: none
        applies, or the client is within it)."""
        found = self._resolve(key, user, client_id)
        if found is None:
            return 0
        bound, user_tag, client_tag = found
        now = self.now_ms()
        throttle = record_and_throttle(self._sensor(key, user_tag, client_tag, now), value, bound, now)
        if key == REQUEST:
            throttle = min(throttle, self.window_ms)
        return throttle

    def unrecord(self, key: str, user: str, client_id: str, value: float) -> None:
        """Take back a value recorded for a request that was answered without it (a throttled fetch)."""
        found = self._resolve(key, user, client_id)
        if found is not None:
            now = self.now_ms()
            self._sensor(key, found[1], found[2], now).record(-value, now)

    def max_value_in_window(self, key: str, user: str, client_id: str) -> float | None:
        """The most one request may use of quota ``key`` (the bound on a fetch's size): one
        window's worth, ``quota * quota.window.size.seconds`` (Kafka allows ``quota.window.num -
        1`` windows' worth, measured over as many; see :mod:`.rate`); None when unlimited."""
        found = self._resolve(key, user, client_id)
        if found is None:
            return None
        return found[0] * self.window_ms / 1000

    def record_request_time(self, user: str, client_id: str, seconds: float) -> int:
        """``request_percentage``: ``seconds`` of broker time on one request; the throttle ms."""
        return self.record(REQUEST, user, client_id, seconds * 100.0)

    # ------------------------------------------------------------------ controller mutations
    def controller_mutation_quota(self, user: str, client_id: str, strict: bool) -> ControllerMutationQuota | None:
        """The ``controller_mutation_rate`` hold of one CreateTopics/CreatePartitions/DeleteTopics
        request (``strict``: refuse topics while in debt); None when no such quota applies."""
        found = self._resolve(CONTROLLER_MUTATION, user, client_id)
        if found is None:
            return None
        rate, user_tag, client_tag = found
        now = self.now_ms()
        span_ms = self.samples * self.window_ms
        burst = rate * span_ms / 1000
        bucket = self._buckets.get((user_tag, client_tag))
        if bucket is None:
            self._sweep(now)
            bucket = self._buckets[(user_tag, client_tag)] = TokenBucket(burst, now)
        return ControllerMutationQuota(bucket, rate, burst, strict, self.now_ms, span_ms)

    # ------------------------------------------------------------------ connections
    def connection_throttle_ms(self, ip: str) -> int:
        """Count a new connection from ``ip`` against its ``connection_creation_rate``; the
        throttle time when it is over (the connection is then not counted and must be refused)."""
        quotas = self._quotas()
        values = quotas.get((("ip", ip),))
        if values is None or CONNECTION not in values:
            values = quotas.get((("ip", None),))
            if values is None or CONNECTION not in values:
                return 0
        bound = values[CONNECTION]
        now = self.now_ms()
        sensor = self._sensor(CONNECTION, ip, "", now)
        sensor.record(1.0, now)
        observed = sensor.measure(now)
        if observed <= bound:
            return 0
        sensor.record(-1.0, now)
        return min(throttle_time_ms(observed, bound, sensor.window_size_ms(now)), self.window_ms)


__all__ = [
    "CONNECTION", "CONTROLLER_MUTATION", "FETCH", "PRODUCE", "REQUEST", "ClientQuotaManager", "resolve_quota", "user_of",
]
