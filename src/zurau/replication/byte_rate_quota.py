"""A broker-wide byte-rate quota over sampled windows (Kafka's quota ``Sensor`` with a ``Rate``
and a ``Quota.upperBound``, as its ``ReplicationQuotaManager`` and ``RLMQuotaManager`` use it).

* **The bound** (bytes/s) is read at every use through a :data:`RateSource`, so a dynamic change
  of the broker config behind it applies to the next check. ``Long.MAX_VALUE`` (Kafka's default
  for these configs) means no quota: nothing is ever exceeded.
* **Measuring**: :meth:`ByteRateQuota.record` adds bytes to the current window; the rate is the
  bytes of the last ``window_num`` windows of ``window_ms`` over the time since the oldest of them
  began, taken as at least one window (as Kafka's ``SimpleRate``: after a quiet spell one
  window's worth may go at once, then the traffic is held to the bound). Windows older than
  ``window_num * window_ms`` are dropped before every measurement.
* **Exceeded** (:meth:`ByteRateQuota.is_quota_exceeded`) while the measured rate is above the
  bound; then :meth:`ByteRateQuota.throttle_time_ms` is how long until it is back at the bound if
  nothing more is recorded (Kafka's ``QuotaUtils.throttleTime``: ``(rate - bound) / bound *
  measured span``), else 0.

Used by :mod:`zurau.replication.replication_quota` (reassignment throttles) and
:mod:`zurau.replication.tiered.remote_log_manager` (KIP-956's remote copy and fetch quotas).
Times come from the injected :class:`~zurau.clock.Clock` (ms): unit tested on a ``ManualClock``.
Not thread-safe: used on the event loop only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from zurau.clock import Clock

#: Kafka's ``Long.MAX_VALUE``: the default rate, meaning no quota.
UNLIMITED_RATE = 2**63 - 1

#: The current rate bound in bytes/s, read at each use (a broker config, static or dynamic).
RateSource = Callable[[], int]


class ByteRateQuota:
    """A byte rate measured over ``window_num`` windows of ``window_ms``, bounded by ``rate``
    (see the module docstring). Invariant: the windows kept are in start order, each started at
    least ``window_ms`` after the previous one."""

    def __init__(
        self, clock: Clock, rate: RateSource, *, window_num: int = 11, window_ms: int = 1000
    ) -> None:
        self.clock = clock
        self._rate = rate
        self.window_num = max(window_num, 1)
        self.window_ms = max(window_ms, 1)
        # (start ms, bytes) of each window kept, oldest first.
        self._windows: deque[list[int]] = deque()
        self.recorded_bytes = 0  # bytes recorded since start (a counter for metrics)

    @property
    def bound(self) -> int:
        """The rate bound now, bytes/s."""
        return int(self._rate())

    def _purge(self, now: int) -> None:
        windows = self._windows
        while windows and now - windows[0][0] >= self.window_num * self.window_ms:
            windows.popleft()

    def record(self, nbytes: int) -> None:
        """Count ``nbytes`` of the traffic this quota bounds."""
        if nbytes <= 0:
            return
        now = self.clock.now_ms()
        self._purge(now)
        windows = self._windows
        if not windows or now - windows[-1][0] >= self.window_ms:
            windows.append([now, 0])
        windows[-1][1] += nbytes
        self.recorded_bytes += nbytes

    def _measured(self, now: int) -> tuple[int, int]:
        """(bytes in the windows kept, ms since the oldest of them began)."""
        self._purge(now)
        windows = self._windows
        if not windows:
            return 0, 0
        return sum(w[1] for w in windows), now - windows[0][0]

    def byte_rate(self) -> float:
        """The measured rate, bytes/s."""
        total, elapsed = self._measured(self.clock.now_ms())
        return total * 1000.0 / max(elapsed, self.window_ms)

    def is_quota_exceeded(self) -> bool:
        """Whether the measured rate is above the bound (never with the unlimited default)."""
        bound = self.bound
        if bound >= UNLIMITED_RATE:
            return False
        total, elapsed = self._measured(self.clock.now_ms())
        return total * 1000 > bound * max(elapsed, self.window_ms)

    def delay_ms(self) -> int:
        """How long until the measured rate is back at the bound if nothing more is recorded
        (0 when it is, or nothing is recorded)."""
        bound = self.bound
        if bound >= UNLIMITED_RATE:
            return 0
        total, elapsed = self._measured(self.clock.now_ms())
        if total == 0:
            return 0
        if bound <= 0:
            return self.window_ms
        return max(-(-total * 1000 // bound) - max(elapsed, 0), 0)

    def throttle_time_ms(self) -> int:
        """Kafka's ``getThrottleTimeMs``: 0 while the quota is not exceeded, else
        :meth:`delay_ms` (at least 1)."""
        if not self.is_quota_exceeded():
            return 0
        return max(self.delay_ms(), 1)
