"""A token bucket, after Kafka's ``TokenBucket`` stat (KIP-599). Pure; times in ms.

The bucket holds credits (tokens) that refill continuously at ``rate`` per second, up to a
``burst`` of ``rate * quota.window.num * quota.window.size.seconds`` (Kafka's rule: 11 s worth
with the defaults). Recording ``n`` takes ``n`` tokens, even below zero: the bucket is then *in
debt*, and the quota is exhausted until the refill brings it back to zero, which takes
``-tokens / rate`` seconds (the throttle time).

A new bucket starts full (Kafka's starts empty with a last-refill time of 0, so its first refill
fills it). The rate and burst are passed on every call, not kept, so a changed quota takes effect
at once on the credits already there (the burst clamps them), as Kafka reads the current quota
at each measurement.
"""

from __future__ import annotations


class TokenBucket:
    """Credits of one (user, client-id) quota entity. Invariant: ``tokens <= burst`` after every
    call; ``tokens < 0`` means in debt."""

    __slots__ = ("last_ms", "tokens")

    def __init__(self, burst: float, now_ms: int) -> None:
        self.tokens = burst
        self.last_ms = now_ms

    def _refill(self, rate: float, burst: float, now_ms: int) -> None:
        elapsed = max(now_ms - self.last_ms, 0)
        self.tokens = min(burst, self.tokens + rate * elapsed / 1000.0)
        self.last_ms = max(now_ms, self.last_ms)

    def measure(self, rate: float, burst: float, now_ms: int) -> float:
        """The credits left now (negative: in debt)."""
        self._refill(rate, burst, now_ms)
        return self.tokens

    def record(self, value: float, rate: float, burst: float, now_ms: int) -> None:
        """Take ``value`` credits (a negative value gives them back)."""
        self._refill(rate, burst, now_ms)
        self.tokens = min(burst, self.tokens - value)


def debt_throttle_ms(tokens: float, rate: float, zero_rate_ms: int) -> int:
    """How long until a bucket with ``tokens`` is out of debt at ``rate`` per second (Kafka's
    ``-tokens / rate * 1000``, rounded); 0 when not in debt. A rate of 0 never refills (Kafka's
    answer overflows): ``zero_rate_ms`` is answered instead, so the client retries now and then."""
    if tokens >= 0:
        return 0
    if rate <= 0:
        return zero_rate_ms
    return round(-tokens / rate * 1000)
