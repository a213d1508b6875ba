"""``controller_mutation_rate`` (KIP-599) against real admin clients, with a quota of 10
partitions/s (a bucket of 110 with the default 11 x 1 s windows), one client id per test.

What each client does (checked here, not assumed):

* **kafka-python 3.0** (KafkaAdminClient) sends CreateTopics v7, CreatePartitions v3 and
  DeleteTopics v6: the strict versions. A topic asked for while the bucket is in debt comes back
  with THROTTLING_QUOTA_EXCEEDED (89); ``raise_errors=True`` (the default) raises
  ``kafka.errors.ThrottlingQuotaExceededError`` at once -- a RetriableError, but the admin client
  does not retry it: the application does. The client honours the response's
  ``throttle_time_ms``: it logs "throttled by broker" and pauses the connection, and a request
  made meanwhile fails at once with ``NodeNotReadyError: Node paused: {'throttle'}`` (also
  retriable, also left to the application).
* **confluent-kafka 2.x** (librdkafka's AdminClient) sends CreateTopics v4, CreatePartitions v2
  and DeleteTopics v4, below the strict versions: its requests are never refused; the broker
  throttles the response instead, librdkafka reports it through ``throttle_cb`` and its next
  request waits for the muted connection. So error 89 never reaches a librdkafka client.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.errors import NodeNotReadyError, ThrottlingQuotaExceededError

from zurau.client.config import ClientConfig
from zurau.client.quota_admin import QuotaAdmin, QuotaAlteration
from zurau.embedded import EmbeddedBroker

RATE = 10.0
THROTTLED = 89


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _limit(broker: EmbeddedBroker, client_id: str, rate: float = RATE) -> None:
    async def main() -> None:
        async with QuotaAdmin(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as admin:
            [(_entity, error)] = await admin.alter(
                [QuotaAlteration({"client-id": client_id}, {"controller_mutation_rate": rate})]
            )
            assert error is None

    asyncio.run(main())


def _kafka_python(broker: EmbeddedBroker, client_id: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id=client_id)


def _topic_errors(result: dict[str, Any]) -> dict[str, int]:
    return {t["name"]: t["error_code"] for t in result["topics"]}


def _paused_retry(call: Callable[[], Any]) -> Any:
    """The application's retry of a kafka-python call made while the connection is paused by
    the broker's throttle time."""
    for _ in range(200):
        try:
            return call()
        except NodeNotReadyError:
            time.sleep(0.1)
    raise AssertionError("the connection stayed paused")


def _until_created(admin: KafkaAdminClient, topics: dict[str, Any]) -> int:
    """The application's retry loop for THROTTLING_QUOTA_EXCEEDED; the attempts it took."""
    for attempt in range(1, 200):
        errors = _topic_errors(_paused_retry(functools.partial(admin.create_topics, topics, raise_errors=False)))
        assert set(errors.values()) <= {0, THROTTLED}, errors
        topics = {name: spec for name, spec in topics.items() if errors[name] == THROTTLED}
        if not topics:
            return attempt
        time.sleep(0.2)
    raise AssertionError(f"still throttled: {topics}")


def _existing(broker: EmbeddedBroker) -> set[str]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    return set(admin.list_topics(timeout=10).topics)


def test_kafka_python_gets_throttling_quota_exceeded_and_succeeds_on_retry(broker: EmbeddedBroker) -> None:
    _limit(broker, "cmq-kp")
    admin = _kafka_python(broker, "cmq-kp")
    try:
        # 135 partitions in one request: the bucket (110) is not in debt when any of them is
        # asked for, so all are created (a strict quota does not cut a request short before debt).
        first = admin.create_topics({f"kp-{i}": {"num_partitions": 45, "replication_factor": 1} for i in range(3)})
        assert set(_topic_errors(first).values()) == {0}
        # Now 25 in debt (2.5 s): the next topic is refused, and the client raises.
        with pytest.raises(ThrottlingQuotaExceededError):
            admin.create_topics({"kp-late": {"num_partitions": 1, "replication_factor": 1}})
        # Meanwhile the client's connection is paused: its next call fails (NodeNotReadyError)
        # until the throttle time is over.
        with pytest.raises(NodeNotReadyError):
            admin.delete_topics(["kp-0"])
        assert "kp-late" not in _existing(broker)
        # Deleting and growing topics are charged and refused the same way while in debt (after
        # the pause the bucket is about even, so the first of these is usually accepted).
        deleted = _paused_retry(lambda: admin.delete_topics(["kp-0"], raise_errors=False))
        grown = _paused_retry(lambda: admin.create_partitions({"kp-1": 46}, raise_errors=False))
        assert {t["error_code"] for t in deleted["topics"]} <= {0, THROTTLED}
        assert {r.error_code for r in grown.results} <= {0, THROTTLED}
        # The application retries: the topic is created once the bucket has refilled.
        assert _until_created(admin, {"kp-late": {"num_partitions": 1, "replication_factor": 1}}) >= 1
        assert {"kp-1", "kp-2", "kp-late"} <= _existing(broker)
    finally:
        admin.close()


def test_kafka_python_validate_only_is_not_charged(broker: EmbeddedBroker) -> None:
    _limit(broker, "cmq-validate")
    admin = _kafka_python(broker, "cmq-validate")
    try:
        big = {"kp-validate": {"num_partitions": 500, "replication_factor": 1}}
        for _ in range(3):  # charged, the second would be refused (the bucket would be 390 in debt)
            assert set(_topic_errors(admin.create_topics(big, validate_only=True)).values()) == {0}
        assert "kp-validate" not in _existing(broker)
        created = admin.create_topics({"kp-real": {"num_partitions": 100, "replication_factor": 1}})
        assert set(_topic_errors(created).values()) == {0}
    finally:
        admin.close()


def test_confluent_kafka_is_throttled_not_refused(broker: EmbeddedBroker) -> None:
    _limit(broker, "cmq-ck")
    throttles: list[float] = []
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "client.id": "cmq-ck",
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    # 120 partitions at once (10 over the bucket): accepted, the response throttled for ~1 s.
    for f in admin.create_topics([NewTopic(f"ck-{i}", 40, 1) for i in range(3)]).values():
        f.result(30)
    # Still in debt: accepted all the same (no librdkafka request version is strict), later.
    for f in admin.create_partitions([NewPartitions("ck-0", 42)]).values():
        f.result(30)
    for f in admin.delete_topics(["ck-2"]).values():
        f.result(30)
    deadline = time.monotonic() + 10
    while not throttles and time.monotonic() < deadline:
        admin.poll(0.2)
    assert throttles and max(throttles) > 0
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).topics
    assert "ck-0" in topics and "ck-1" in topics and len(topics["ck-0"].partitions) == 42 and "ck-2" not in topics
    # The broker keeps serving this client's other requests, and everyone else's.
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "cmq-ck"})
    p.produce("ck-1", b"still served")
    assert p.flush(30) == 0
