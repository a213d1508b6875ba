"""``controller_mutation_rate`` (KIP-599), pure parts: the token bucket and its throttle time,
strict and permissive request quotas, the manager's per-entity buckets, and the charge/give-back
helpers the topic-mutation handlers use."""

from __future__ import annotations

from typing import Any

import pytest

from zurau.broker.quotas.client_quota_manager import ClientQuotaManager
from zurau.broker.quotas.controller_mutation_quota import ControllerMutationQuota, admit, release_failed
from zurau.broker.quotas.token_bucket import TokenBucket, debt_throttle_ms
from zurau.metadata.records import quota_entity

RATE = 10.0
BURST = RATE * 11  # quota.window.num x quota.window.size.seconds x rate


def _quotas(*items: tuple[dict[str, str | None], dict[str, float]]) -> dict[Any, Any]:
    return {quota_entity(e.items()): v for e, v in items}


# ----------------------------------------------------------------------------- bucket
def test_bucket_starts_full_refills_at_the_rate_and_never_above_the_burst() -> None:
    b = TokenBucket(BURST, 0)
    assert b.measure(RATE, BURST, 0) == BURST
    b.record(BURST, RATE, BURST, 0)
    assert b.measure(RATE, BURST, 0) == 0
    assert b.measure(RATE, BURST, 500) == pytest.approx(5)  # 10/s for 0.5 s
    assert b.measure(RATE, BURST, 60_000) == BURST  # capped
    b.record(-1000, RATE, BURST, 60_000)  # giving back cannot overfill it
    assert b.tokens == BURST


def test_debt_and_the_time_to_pay_it_back() -> None:
    b = TokenBucket(BURST, 0)
    b.record(BURST + 25, RATE, BURST, 0)  # a request may take it below zero
    tokens = b.measure(RATE, BURST, 0)
    assert tokens == -25
    assert debt_throttle_ms(tokens, RATE, 11_000) == 2500  # 25 partitions at 10/s
    assert b.measure(RATE, BURST, 2500) == pytest.approx(0)
    assert debt_throttle_ms(0.0, RATE, 11_000) == 0 and debt_throttle_ms(5.0, RATE, 11_000) == 0
    assert debt_throttle_ms(-1.0, 0.0, 11_000) == 11_000  # a zero rate never refills


def test_a_lower_quota_clamps_credits_already_there() -> None:
    b = TokenBucket(BURST, 0)
    assert b.measure(1.0, 11.0, 0) == 11.0


# ----------------------------------------------------------------------------- request quotas
def _quota(strict: bool, now: list[int], bucket: TokenBucket | None = None) -> ControllerMutationQuota:
    return ControllerMutationQuota(bucket or TokenBucket(BURST, 0), RATE, BURST, strict, lambda: now[0], 11_000)


def test_strict_accepts_until_in_debt_then_refuses_and_throttles() -> None:
    now = [0]
    bucket = TokenBucket(BURST, 0)
    q = _quota(True, now, bucket)
    assert q.acquire(100) and q.acquire(30)  # 110 credits: the second goes 20 into debt, still accepted
    assert q.throttle_ms() == 0  # nothing refused: no throttle (Kafka's strict quota)
    assert not q.acquire(1)  # in debt: refused, nothing charged
    assert bucket.measure(RATE, BURST, 0) == -20
    assert q.throttle_ms() == 2000
    now[0] = 1500
    assert q.throttle_ms() == 500  # the debt shrinks as time passes
    now[0] = 2000
    q2 = _quota(True, now, bucket)
    assert q2.acquire(500)  # out of debt: even a request above the burst is accepted whole
    assert q2.throttle_ms() == 0


def test_strict_rejects_a_huge_first_request_only_after_it() -> None:
    now = [0]
    q = _quota(True, now)
    assert q.acquire(1000)
    assert not q.acquire(1)
    assert q.throttle_ms() == round((1000 - BURST) / RATE * 1000)


def test_permissive_always_accepts_and_throttles_for_the_debt() -> None:
    now = [0]
    q = _quota(False, now)
    assert q.acquire(100) and q.throttle_ms() == 0
    assert q.acquire(30) and q.acquire(50)
    assert q.refused == 0
    assert q.throttle_ms() == 7000  # 70 partitions in debt at 10/s
    q.release(50)
    assert q.throttle_ms() == 2000


# ----------------------------------------------------------------------------- manager
def test_manager_resolves_the_entity_and_shares_its_bucket() -> None:
    now = [0]
    quotas: list[dict[Any, Any]] = [{}]  # the image's mapping: replaced, never changed in place
    m = ClientQuotaManager(lambda: quotas[0], 11, 1, lambda: now[0])
    assert m.controller_mutation_quota("alice", "app", True) is None
    quotas[0] = _quotas(({"user": None}, {"controller_mutation_rate": RATE}),
                        ({"user": "bob"}, {"producer_byte_rate": 1.0}))
    q = m.controller_mutation_quota("alice", "app", True)
    assert q is not None and q.acquire(200)
    # alice's other client shares the <default> user entity's bucket (matched per user) ...
    q2 = m.controller_mutation_quota("alice", "other", True)
    assert q2 is not None and not q2.acquire(1)
    # ... bob's own bucket is full (bob's only quota is a byte rate: the default applies)
    q3 = m.controller_mutation_quota("bob", "app", False)
    assert q3 is not None and q3.acquire(1) and q3.throttle_ms() == 0
    # a quota change is seen at once: alice's debt (90) is paid at the new rate
    quotas[0] = _quotas(({"user": None}, {"controller_mutation_rate": 90.0}))
    q4 = m.controller_mutation_quota("alice", "app", False)
    assert q4 is not None and q4.throttle_ms() == 1000


def test_admit_charges_in_order_passes_uncosted_items_and_gives_back_failures() -> None:
    now = [0]
    bucket = TokenBucket(BURST, 0)
    q = _quota(True, now, bucket)
    costs = {"a": ("a", 100), "b": ("b", 20), "c": ("c", 5), "x": None, "a2": ("a", 100)}
    admitted, refused, charged = admit(q, ["a", "x", "b", "c", "a2"], costs.__getitem__)
    # a and b are taken (b into debt), c is refused; x costs nothing; a2 repeats a's key: not charged twice
    assert admitted == ["a", "x", "b", "a2"] and refused == ["c"]
    assert charged == {"a": 100, "b": 20}
    assert bucket.measure(RATE, BURST, 0) == -10
    release_failed(q, charged, ["b", "zz"])  # b failed at the controller: its 20 come back
    assert bucket.measure(RATE, BURST, 0) == 10 and charged == {"a": 100}
