"""Client quotas, pure parts: Kafka's sampled rate and throttle maths, the precedence of quota
entities, the controller's validation and DescribeClientQuotas matching, and the records, image
and snapshot round trip."""

from __future__ import annotations

from typing import Any

import pytest

from zurau.broker.quotas.client_quota_manager import ClientQuotaManager, resolve_quota, user_of
from zurau.broker.quotas.rate import SampledRate, record_and_throttle, throttle_time_ms
from zurau.broker.quotas.throttling import exempt, request_throttle_ms
from zurau.metadata.controller.quota_control import alter_client_quotas, describe_client_quotas
from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import ClientQuotaRecord, quota_entity
from zurau.metadata.snapshot import image_records
from zurau.protocol.errors import InvalidRequestError, UnsupportedVersionError

Q = 1_048_576  # 1 MiB/s


# ----------------------------------------------------------------------------- rate maths
def test_new_rate_is_measured_over_at_least_one_window() -> None:
    r = SampledRate(11, 1000, 200)
    r.record(Q, 200)
    # Windows start on whole windows: the first one at 0; a first request is measured over 1 s.
    assert r.window_size_ms(200) == 1000
    assert r.measure(200) == pytest.approx(Q)
    r.record(1, 200)
    assert r.measure(200) > Q
    assert r.window_size_ms(5_500) == 5_500


def test_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    assert throttle_time_ms(Q, Q, 10_000) == 0
    assert throttle_time_ms(0.5 * Q, Q, 10_000) == 0
    assert throttle_time_ms(1.5 * Q, Q, 10_000) == 5_000  # (1.5 - 1) / 1 * 10 s
    r = SampledRate(11, 1000, 0)
    throttle = record_and_throttle(r, 3 * Q, Q, 0)
    assert throttle == 2_000  # (3 - 1) / 1 * 1 s
    assert r.measure(throttle) == pytest.approx(1.5 * Q)  # still over: the span was 1 s...
    assert record_and_throttle(r, 0, Q, 3_000) == 0  # ...3 MiB over 3 s is the quota


def test_old_windows_expire_and_the_window_rolls() -> None:
    r = SampledRate(3, 1000, 0)
    r.record(100, 0)
    r.record(100, 1500)
    r.record(100, 2500)
    assert r.total(2500) == 300
    r.record(0, 3100)  # reuses the oldest slot
    assert r.total(3100) == 200
    assert r.total(10_000) == 0  # everything older than 3 windows is gone


@pytest.mark.parametrize("chunk", [64 * 1024, 256 * 1024, Q])
def test_greedy_client_is_held_to_its_quota_over_any_30_s(chunk: int) -> None:
    """A client that sends its next request as soon as each throttle ends (what a producer at
    full speed does) gets the quota within 5 % over every 30 s, from its first request on."""
    r = SampledRate(11, 1000, 0)
    sent_at: list[int] = []
    t = 0
    while t < 90_000:
        throttle = record_and_throttle(r, chunk, Q, t)
        sent_at.append(t)
        t += throttle or 5
    for start in range(0, 60_000, 500):
        sent = chunk * sum(1 for at in sent_at if start <= at < start + 30_000)
        assert sent / 30 == pytest.approx(Q, rel=0.05)


# ----------------------------------------------------------------------------- precedence
def _quotas(*items: tuple[dict[str, str | None], dict[str, float]]) -> dict[Any, Any]:
    return {quota_entity(e.items()): v for e, v in items}


def test_most_specific_entity_wins_in_kafkas_order() -> None:
    p = "producer_byte_rate"
    levels = [
        ({"user": "alice", "client-id": "app"}, ("alice", "app")),
        ({"user": "alice", "client-id": None}, ("alice", "app")),
        ({"user": "alice"}, ("alice", "")),
        ({"user": None, "client-id": "app"}, ("alice", "app")),
        ({"user": None, "client-id": None}, ("alice", "app")),
        ({"user": None}, ("alice", "")),
        ({"client-id": "app"}, ("", "app")),
        ({"client-id": None}, ("", "app")),
    ]
    # Every level configured: the first wins; drop it and the next wins, and so on.
    for i, (_entity, tags) in enumerate(levels):
        quotas = _quotas(*[(e, {p: float(j + 1)}) for j, (e, _t) in enumerate(levels) if j >= i])
        assert resolve_quota(quotas, p, "alice", "app") == (float(i + 1), *tags)
    assert resolve_quota({}, p, "alice", "app") is None
    # A quota for another key does not match; another user's or client's neither.
    quotas = _quotas(({"user": "alice"}, {"consumer_byte_rate": 5.0}), ({"user": "bob"}, {p: 7.0}),
                     ({"client-id": "other"}, {p: 9.0}))
    assert resolve_quota(quotas, p, "alice", "app") is None
    assert resolve_quota(quotas, "consumer_byte_rate", "alice", "app") == (5.0, "alice", "")


def test_manager_shares_sensors_per_matched_entity_and_has_a_fast_path() -> None:
    now = [0]
    quotas: dict[Any, Any] = {}
    m = ClientQuotaManager(lambda: quotas, 11, 1, lambda: now[0])
    assert not m.enabled
    quotas.update(_quotas(({"client-id": "app"}, {"producer_byte_rate": float(Q)})))
    assert m.enabled
    assert m.record("producer_byte_rate", "alice", "app", Q // 2) == 0
    # bob's client "app" shares alice's client-id quota
    assert m.record("producer_byte_rate", "bob", "app", Q) == 500
    assert m.record("producer_byte_rate", "bob", "other", 100 * Q) == 0
    assert m.max_value_in_window("producer_byte_rate", "x", "app") == Q
    assert m.max_value_in_window("consumer_byte_rate", "x", "app") is None
    assert user_of("User:alice") == "alice" and user_of("User:CN=a:b") == "CN=a:b"


def test_request_percentage_and_throttle_time_in_the_response() -> None:
    quotas = _quotas(({"user": None}, {"request_percentage": 10.0}))
    m = ClientQuotaManager(lambda: quotas, 11, 1, lambda: 0)
    response: dict[str, Any] = {"throttle_time_ms": 0}
    # 0.05 s of broker time = 5 %-seconds, over 1 s: 5 % -> within 10 %
    assert request_throttle_ms(m, "User:alice", "c", 0.05, response) == 0
    t = request_throttle_ms(m, "User:alice", "c", 1.0, response)
    assert t == 1000 and response["throttle_time_ms"] == 1000  # bounded by one window
    assert exempt(18, {}) and exempt(1, {"replica_id": 2}) and not exempt(1, {"replica_id": -1})


def test_connection_creation_rate_per_ip_with_default() -> None:
    quotas = _quotas(({"ip": None}, {"connection_creation_rate": 2.0}),
                     ({"ip": "10.0.0.1"}, {"connection_creation_rate": 100.0}))
    m = ClientQuotaManager(lambda: quotas, 11, 1, lambda: 0)
    accepted = sum(1 for _ in range(30) if m.connection_throttle_ms("127.0.0.1") == 0)
    assert accepted == 2  # 2 per second
    assert all(m.connection_throttle_ms("10.0.0.1") == 0 for _ in range(30))


# ----------------------------------------------------------------------------- controller
def _entry(entity: dict[str, str | None], **ops: float | None) -> dict[str, Any]:
    return {
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops.items()],
    }


def _alter(image: MetadataImage, *entries: dict[str, Any], validate_only: bool = False) -> tuple[MetadataImage, list[Any]]:
    result = alter_client_quotas(image, list(entries), validate_only)
    return image.apply(result.records), [(r["error_code"], r["error_message"]) for r in result.response]


def test_alter_validation_as_kafka() -> None:
    img = MetadataImage("c")
    bad = {
        "Invalid empty client quota entity": _entry({}, producer_byte_rate=1),
        "Unhandled client quota entity type: group": _entry({"group": "g"}, producer_byte_rate=1),
        "Empty user not supported": _entry({"user": ""}, producer_byte_rate=1),
        "Invalid configuration key connection_creation_rate": _entry({"user": "a"}, connection_creation_rate=1),
        "Invalid configuration key producer_byte_rate": _entry({"ip": "127.0.0.1"}, producer_byte_rate=1),
        "Configuration producer_byte_rate must be a Long value": _entry({"client-id": "c"}, producer_byte_rate=1.5),
        "nope is not a valid IP or resolvable host.": _entry({"ip": "nope"}, connection_creation_rate=1),
        "Invalid configuration key bogus": _entry({"user": "b"}, bogus=1),
    }
    combo = _entry({"ip": "127.0.0.1", "user": "x"}, connection_creation_rate=1)
    good = _entry({"user": "alice", "client-id": None}, producer_byte_rate=1024, request_percentage=12.5)
    new, results = _alter(img, *bad.values(), combo, good)
    for (code, message), expected in zip(results, [*bad, "Invalid empty client quota entity", None], strict=True):
        if expected is None:
            assert code == 0
        else:
            assert (code, message) == (InvalidRequestError.code, expected)
    assert new.client_quotas == {(("client-id", None), ("user", "alice")): {"producer_byte_rate": 1024.0,
                                                                           "request_percentage": 12.5}}
    dup_key = {**_entry({"user": "d"}), "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}] * 2}
    _img, results = _alter(img, dup_key, _entry({"user": "e"}, producer_byte_rate=1), _entry({"user": "e"}, producer_byte_rate=2))
    assert results[0][0] == InvalidRequestError.code and results[0][1].startswith("Duplicate quota key producer_byte_rate")
    assert results[1] == (InvalidRequestError.code, "Ignoring duplicate entity ClientQuotaEntity(entries={user=e})")
    assert len(results) == 2 and not _img.client_quotas


def test_remove_validate_only_and_unchanged_values() -> None:
    img, _ = _alter(MetadataImage("c"), _entry({"user": "a"}, producer_byte_rate=10, consumer_byte_rate=20))
    assert alter_client_quotas(img, [_entry({"user": "a"}, producer_byte_rate=10)], False).records == []
    assert alter_client_quotas(img, [_entry({"user": "a"}, producer_byte_rate=11)], True).records == []
    img2, results = _alter(img, _entry({"user": "a"}, producer_byte_rate=None, request_percentage=None))
    assert results == [(0, None)]
    assert dict(img2.client_quotas[(("user", "a"),)]) == {"consumer_byte_rate": 20.0}
    img3, _ = _alter(img2, _entry({"user": "a"}, consumer_byte_rate=None))
    assert not img3.client_quotas  # an entity with no quota left is gone


def _described(img: MetadataImage, components: list[tuple[str, int, str | None]], strict: bool = False) -> Any:
    body = [{"entity_type": t, "match_type": m, "match": v} for t, m, v in components]
    resp = describe_client_quotas(img, body, strict)
    if resp["error_code"]:
        return resp["error_code"], resp["error_message"]
    found = [{e["entity_type"]: e["entity_name"] for e in entry["entity"]} for entry in resp["entries"]]
    return sorted(found, key=lambda e: sorted((t, n or "") for t, n in e.items()))


def test_describe_matching_exact_default_any_and_strict() -> None:
    img, _ = _alter(
        MetadataImage("c"),
        _entry({"user": "alice"}, producer_byte_rate=1),
        _entry({"user": None}, producer_byte_rate=2),
        _entry({"user": "alice", "client-id": "app"}, producer_byte_rate=3),
        _entry({"client-id": "app"}, producer_byte_rate=4),
        _entry({"ip": None}, connection_creation_rate=5),
        _entry({"ip": "127.0.0.1"}, connection_creation_rate=6),
    )
    assert len(_described(img, [])) == 6
    assert _described(img, [("user", 0, "alice")]) == [{"client-id": "app", "user": "alice"}, {"user": "alice"}]
    assert _described(img, [("user", 0, "alice")], strict=True) == [{"user": "alice"}]
    assert _described(img, [("user", 1, None)]) == [{"user": None}]
    assert _described(img, [("user", 2, None)], strict=True) == [{"user": None}, {"user": "alice"}]
    assert _described(img, [("client-id", 2, None)]) == [{"client-id": "app"}, {"client-id": "app", "user": "alice"}]
    assert _described(img, [("ip", 2, None)]) == [{"ip": None}, {"ip": "127.0.0.1"}]
    assert _described(img, [("user", 0, None)]) == (InvalidRequestError.code, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
    assert _described(img, [("user", 1, "x")])[0] == InvalidRequestError.code
    assert _described(img, [("user", 2, None), ("user", 0, "a")])[0] == InvalidRequestError.code
    assert _described(img, [("ip", 2, None), ("user", 0, "a")])[0] == InvalidRequestError.code
    assert _described(img, [("group", 2, None)]) == (UnsupportedVersionError.code, "Unsupported entity type group")
    assert _described(img, [("user", 7, None)])[0] == UnsupportedVersionError.code


def test_records_image_and_snapshot_round_trip() -> None:
    rec = ClientQuotaRecord(quota_entity([("user", "alice"), ("client-id", None)]), "producer_byte_rate", 1024.0)
    assert decode_record(encode_record(rec)) == rec
    removal = ClientQuotaRecord(rec.entity, "producer_byte_rate", remove=True)
    assert decode_record(encode_record(removal)) == removal
    img = MetadataImage("c").apply([rec, ClientQuotaRecord((("ip", None),), "connection_creation_rate", 3.0)])
    again = MetadataImage("c").apply(image_records(img))
    assert again.client_quotas == img.client_quotas
    assert not img.apply([removal]).client_quotas.get(rec.entity)
