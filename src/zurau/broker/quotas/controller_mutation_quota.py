"""``controller_mutation_rate`` (KIP-599): one request's hold on its client's token bucket.

CreateTopics, CreatePartitions and DeleteTopics are charged one credit per partition they create
or delete, topic by topic, against the :class:`~.token_bucket.TokenBucket` of the client's
matched quota entity (resolved as every client quota is, see :mod:`.client_quota_manager`).
A request gets a :class:`ControllerMutationQuota`, as Kafka's ``newQuotaFor`` hands one out:

* **strict** (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+: clients that know
  THROTTLING_QUOTA_EXCEEDED): a topic is refused when the bucket is already in debt; otherwise it
  is accepted and charged, even into debt (a request within the burst is never cut in two). The
  response carries a throttle time only when some topic was refused: the time until the bucket is
  out of debt.
* **permissive** (older versions): every topic is accepted and charged; the response is throttled
  for as long as the bucket is then in debt.

The connection mutes the client for the response's ``throttle_time_ms`` (KIP-219), so a client
in debt is slowed down either way. ``release`` gives credits back for a topic the controller then
failed, so only topics that were created or deleted stay charged (Kafka charges a topic after
validating it, inside the controller).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from zurau.broker.quotas.token_bucket import TokenBucket, debt_throttle_ms

T = TypeVar("T")

THROTTLED_MESSAGE = "The throttling quota has been exceeded."


class ControllerMutationQuota:
    """One request's view of a bucket; not kept beyond the request."""

    __slots__ = ("_bucket", "_burst", "_now_ms", "_rate", "_zero_rate_ms", "refused", "strict")

    def __init__(
        self, bucket: TokenBucket, rate: float, burst: float, strict: bool, now_ms: Callable[[], int], zero_rate_ms: int
    ) -> None:
        self._bucket = bucket
        self._rate = rate
        self._burst = burst
        self.strict = strict
        self._now_ms = now_ms
        self._zero_rate_ms = zero_rate_ms
        self.refused = 0

    def acquire(self, permits: int) -> bool:
        """Charge ``permits`` partitions; False (nothing charged) when a strict quota refuses them."""
        now = self._now_ms()
        bucket = self._bucket
        if self.strict and bucket.measure(self._rate, self._burst, now) < 0:
            self.refused += 1
            return False
        bucket.record(permits, self._rate, self._burst, now)
        return True

    def release(self, permits: int) -> None:
        """Give back ``permits`` charged for a topic the controller did not change."""
        self._bucket.record(-permits, self._rate, self._burst, self._now_ms())

    def throttle_ms(self) -> int:
        """The response's throttle time (see the module docstring)."""
        if self.strict and not self.refused:
            return 0
        tokens = self._bucket.measure(self._rate, self._burst, self._now_ms())
        return debt_throttle_ms(tokens, self._rate, self._zero_rate_ms)


def admit(
    quota: ControllerMutationQuota, items: Iterable[T], cost: Callable[[T], tuple[Hashable, int] | None]
) -> tuple[list[T], list[T], dict[Hashable, int]]:
    """Charge each request item (a topic) in order: ``cost(item)`` is its key and partition
    count, or None for an item the controller will refuse anyway (unknown, existing, duplicated:
    passed on uncharged, as Kafka charges only valid topics). Answers the items admitted, those a
    strict quota refused, and what was charged per key (for :func:`release_failed`)."""
    admitted: list[T] = []
    refused: list[T] = []
    charged: dict[Hashable, int] = {}
    for item in items:
        found = cost(item)
        if found is None or found[0] in charged:
            admitted.append(item)
        elif quota.acquire(found[1]):
            charged[found[0]] = found[1]
            admitted.append(item)
        else:
            refused.append(item)
    return admitted, refused, charged


def release_failed(quota: ControllerMutationQuota, charged: dict[Hashable, int], failed: Iterable[Hashable]) -> None:
    """Give back what was charged for the keys of items the controller answered with an error."""
    for key in failed:
        permits = charged.pop(key, None)
        if permits is not None:
            quota.release(permits)
