"""Sampled rates and throttle-time maths, after Kafka's ``SampledStat``/``Rate``/``QuotaUtils``. Pure.

A :class:`SampledRate` keeps up to ``samples`` windows of ``window_ms`` each. Recording adds to
the current window; once ``window_ms`` has passed since it started, the next record starts a new
window (reusing the oldest slot). Windows start on multiples of ``window_ms``, so the windows
kept always cover, without gaps, everything recorded since the oldest one started. Windows older
than ``samples * window_ms`` are reset before every measurement. The rate is the total of all
windows divided by the time since the oldest window started, taken as at least one window.

Where this differs from Kafka, and why: Kafka starts a window at the time of the record that
opens it, and measures a rate over at least ``samples - 1`` windows. That lets a new (or long
idle) client send ``samples - 1`` windows' worth at once, and a client that sends as soon as its
throttle ends then keeps that burst forever (it comes back each time its window expires): with
the defaults (11 windows of 1 s) its rate over any 30 s swings by +-25 % around the quota. With
aligned windows and a one-window minimum, such a client is paced evenly from its first request
and held within a few percent over any 30 s; the long-run average is the quota either way.

Throttle time (Kafka's formula, KIP-219): when a rate ``observed`` is above its ``bound``, the
client must stay quiet long enough for the rate to come back to the bound:
``(observed - bound) / bound * window_size_ms``, rounded to whole milliseconds.
"""

from __future__ import annotations


class SampledRate:
    """A rate per second over sampled windows (see the module docstring). Times in ms."""

    __slots__ = ("_current", "_starts", "_values", "last_record_ms", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._values = [0.0]
        self._starts = [now_ms - now_ms % window_ms]
        self._current = 0
        self.last_record_ms = now_ms

    def record(self, value: float, now_ms: int) -> None:
        cur = self._current
        if now_ms - self._starts[cur] >= self.window_ms:
            start = now_ms - now_ms % self.window_ms
            cur = (cur + 1) % self.samples
            if cur >= len(self._values):
                self._values.append(0.0)
                self._starts.append(start)
            else:
                self._values[cur] = 0.0
                self._starts[cur] = start
            self._current = cur
        self._values[cur] += value
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        starts, values = self._starts, self._values
        for i, start in enumerate(starts):
            if now_ms - start >= expire:
                values[i] = 0.0
                starts[i] = now_ms - now_ms % self.window_ms

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate is measured over: since the oldest window started, at least one
        whole window."""
        self._purge(now_ms)
        return max(now_ms - min(self._starts), self.window_ms)

    def total(self, now_ms: int) -> float:
        self._purge(now_ms)
        return sum(self._values)

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        total = self.total(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000.0)


def throttle_time_ms(observed: float, bound: float, window_size_ms: int) -> int:
    """How long a client over its quota waits (0 when ``observed <= bound``)."""
    if observed <= bound or bound <= 0:
        return 0
    return round((observed - bound) / bound * window_size_ms)


def record_and_throttle(rate: SampledRate, value: float, bound: float, now_ms: int) -> int:
    """Record ``value`` (always, as Kafka's sensors do) and return the throttle time it causes."""
    rate.record(value, now_ms)
    observed = rate.measure(now_ms)
    if observed <= bound:
        return 0
    return throttle_time_ms(observed, bound, rate.window_size_ms(now_ms))
