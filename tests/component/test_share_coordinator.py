"""The share coordinator served by a broker (KIP-932 share-group state, api keys 83-87), over the
wire with Zurau's own client.

One embedded broker for the module, with ``share.coordinator.snapshot.update.records.per.snapshot``
3 so that a few writes cross a snapshot. Each test uses its own group id, so tests do not share
state. Checked: FindCoordinator key type 2 (SHARE) names this broker and creates
``__share_group_state`` with KIP-932's settings; initialize, several writes merged and read back
exactly; the fences (leader epoch, state epoch); uninitialized and unknown share-partitions; the
summary; delete; NOT_COORDINATOR for a ``__share_group_state`` partition this broker does not
serve; ApiVersions advertising the five APIs; CLUSTER_ACTION required (handlers called directly
with a denying authorizer).
"""

from __future__ import annotations

import asyncio
import importlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from zurau.broker.request_context import RequestContext
from zurau.client.connection import BrokerConnection
from zurau.client.typed_api import (
    API_VERSIONS,
    DELETE_SHARE_GROUP_STATE,
    FIND_COORDINATOR,
    INITIALIZE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE_SUMMARY,
    WRITE_SHARE_GROUP_STATE,
)
from zurau.coordinator.share.share_state_records import (
    SHARE_GROUP_STATE_TOPIC,
    coordinator_key,
    partition_for_key,
)
from zurau.embedded import EmbeddedBroker
from zurau.protocol.acl import AclOperation
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.frame import RequestHeader
from zurau.protocol.share_states import RecordState

TOPIC = "share-state-t"
NONE, UNKNOWN_TOPIC, NOT_COORDINATOR, INVALID_REQUEST, FENCED_LEADER, FENCED_STATE = 0, 3, 16, 42, 74, 124
RETRIABLE = {14, 15}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (topic being created)
ACKED, AVAILABLE, ARCHIVED = int(RecordState.ACKNOWLEDGED), int(RecordState.AVAILABLE), int(RecordState.ARCHIVED)


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(**{"share.coordinator.snapshot.update.records.per.snapshot": 3}) as b:
        b.create_topic(TOPIC, partitions=4)
        yield b


@pytest.fixture
async def conn(broker: EmbeddedBroker) -> AsyncIterator[BrokerConnection]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    c = await BrokerConnection(host, int(port)).connect()
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def topic_id(broker: EmbeddedBroker) -> uuid.UUID:
    t = broker.broker.image.get(TOPIC)
    assert t is not None
    return t.topic_id


def codes(resp: dict[str, Any]) -> list[int]:
    return [p["error_code"] for r in resp["results"] for p in r["partitions"]]


async def until_served(send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """``send()`` again while the share coordinator is still being created or loaded."""
    for _ in range(100):
        resp = await send()
        if not RETRIABLE & set(codes(resp)):
            return resp
        await asyncio.sleep(0.05)
    raise AssertionError(f"never served: {resp}")


def batch(first: int, last: int, state: int, count: int) -> dict[str, int]:
    return {"first_offset": first, "last_offset": last, "delivery_state": state, "delivery_count": count}


class Share:
    """The five APIs for one group, one topic."""

    def __init__(self, conn: BrokerConnection, group: str, topic_id: uuid.UUID) -> None:
        self.conn, self.group, self.topic_id = conn, group, topic_id

    def _body(self, partitions: list[dict[str, Any]]) -> Any:
        return {"group_id": self.group, "topics": [{"topic_id": self.topic_id, "partitions": partitions}]}

    async def initialize(self, partition: int, state_epoch: int = 1, start_offset: int = 0) -> int:
        body = self._body([{"partition": partition, "state_epoch": state_epoch, "start_offset": start_offset}])
        resp = await until_served(lambda: self.conn.call(INITIALIZE_SHARE_GROUP_STATE(body)))
        return codes(resp)[0]

    async def write(
        self,
        partition: int,
        batches: list[dict[str, int]],
        *,
        start_offset: int = -1,
        state_epoch: int = 1,
        leader_epoch: int = 1,
    ) -> int:
        body = self._body(
            [
                {
                    "partition": partition,
                    "state_epoch": state_epoch,
                    "leader_epoch": leader_epoch,
                    "start_offset": start_offset,
                    "delivery_complete_count": -1,
                    "state_batches": batches,
                }
            ]
        )
        resp = await until_served(lambda: self.conn.call(WRITE_SHARE_GROUP_STATE(body)))
        return codes(resp)[0]

    async def read(self, partition: int, leader_epoch: int = 1) -> dict[str, Any]:
        body = self._body([{"partition": partition, "leader_epoch": leader_epoch}])
        resp = await until_served(lambda: self.conn.call(READ_SHARE_GROUP_STATE(body)))
        part: dict[str, Any] = resp["results"][0]["partitions"][0]
        return part

    async def summary(self, partition: int) -> dict[str, Any]:
        body = self._body([{"partition": partition, "leader_epoch": -1}])
        resp = await until_served(lambda: self.conn.call(READ_SHARE_GROUP_STATE_SUMMARY(body)))
        part: dict[str, Any] = resp["results"][0]["partitions"][0]
        return part

    async def delete(self, partition: int) -> int:
        body = self._body([{"partition": partition}])
        resp = await until_served(lambda: self.conn.call(DELETE_SHARE_GROUP_STATE(body)))
        return codes(resp)[0]


def group() -> str:
    return f"sg-{uuid.uuid4().hex[:8]}"


async def test_api_versions_advertise_the_share_state_apis(conn: BrokerConnection) -> None:
    resp = await conn.call(API_VERSIONS({}), version=3)
    keys = {k["api_key"]: k for k in resp["api_keys"]}
    for key in (83, 84, 85, 86, 87):
        assert key in keys, key
    assert keys[ApiKey.WRITE_SHARE_GROUP_STATE]["max_version"] == 1
    assert keys[ApiKey.READ_SHARE_GROUP_STATE_SUMMARY]["max_version"] == 1


async def test_find_coordinator_share_key(broker: EmbeddedBroker, conn: BrokerConnection, topic_id: uuid.UUID) -> None:
    key = coordinator_key(group(), topic_id, 0)

    async def find() -> dict[str, Any]:
        resp = await conn.call(FIND_COORDINATOR({"key_type": 2, "coordinator_keys": [key]}), version=6)
        return {"results": [{"partitions": resp["coordinators"]}], **resp}

    resp = await until_served(find)
    (found,) = resp["coordinators"]
    assert (found["error_code"], found["node_id"]) == (NONE, broker.broker.node_id)
    assert f"{found['host']}:{found['port']}" == broker.bootstrap_servers
    # __share_group_state was created on first use, with KIP-932's settings.
    t = broker.broker.image.get(SHARE_GROUP_STATE_TOPIC)
    assert t is not None and t.num_partitions == 50
    assert t.configs.get("cleanup.policy") == "delete" and t.configs.get("retention.ms") == "-1"
    assert t.configs.get("segment.bytes") == str(100 * 1024 * 1024)
    # A malformed key, and the SHARE type before v6, are invalid requests.
    bad = await conn.call(FIND_COORDINATOR({"key_type": 2, "coordinator_keys": ["no-colons"]}), version=6)
    assert bad["coordinators"][0]["error_code"] == INVALID_REQUEST
    old = await conn.call(FIND_COORDINATOR({"key_type": 2, "coordinator_keys": [key]}), version=5)
    assert old["coordinators"][0]["error_code"] == INVALID_REQUEST


async def test_initialize_write_read_merged_state(conn: BrokerConnection, topic_id: uuid.UUID) -> None:
    s = Share(conn, group(), topic_id)
    assert await s.initialize(0, state_epoch=1, start_offset=0) == NONE
    # Five writes: the fourth crosses a snapshot (3 updates per snapshot), the fifth updates it.
    assert await s.write(0, [batch(0, 4, ACKED, 1)], start_offset=0) == NONE
    assert await s.write(0, [batch(5, 9, AVAILABLE, 1)]) == NONE
    assert await s.write(0, [batch(10, 14, ARCHIVED, 5)]) == NONE
    assert await s.write(0, [batch(5, 6, ACKED, 1)], start_offset=3) == NONE
    assert await s.write(0, [batch(15, 19, ACKED, 1)]) == NONE
    got = await s.read(0)
    assert (got["error_code"], got["state_epoch"], got["start_offset"]) == (NONE, 1, 3)
    assert got["state_batches"] == [
        batch(3, 6, ACKED, 1),
        batch(7, 9, AVAILABLE, 1),
        batch(10, 14, ARCHIVED, 5),
        batch(15, 19, ACKED, 1),
    ]
    summary = await s.summary(0)
    assert (summary["error_code"], summary["state_epoch"], summary["leader_epoch"], summary["start_offset"]) == (
        NONE,
        1,
        1,
        3,
    )


async def test_fences_and_uninitialized(conn: BrokerConnection, topic_id: uuid.UUID) -> None:
    s = Share(conn, group(), topic_id)
    # Nothing initialized: write and read are invalid, the summary is empty (not an error).
    assert await s.write(1, [batch(0, 0, ACKED, 1)]) == INVALID_REQUEST
    assert (await s.read(1))["error_code"] == INVALID_REQUEST
    empty = await s.summary(1)
    assert (empty["error_code"], empty["start_offset"]) == (NONE, -1)
    assert await s.initialize(1, state_epoch=2, start_offset=10) == NONE
    # The share-partition leader of epoch 3 reads the state first (which records its epoch).
    assert (await s.read(1, leader_epoch=3))["error_code"] == NONE
    assert await s.write(1, [batch(10, 11, ACKED, 1)], state_epoch=2, leader_epoch=3) == NONE
    # A lower leader epoch, a lower state epoch: fenced; a re-initialize below the seen state epoch too.
    assert await s.write(1, [batch(12, 12, ACKED, 1)], state_epoch=2, leader_epoch=2) == FENCED_LEADER
    assert await s.write(1, [batch(12, 12, ACKED, 1)], state_epoch=1, leader_epoch=3) == FENCED_STATE
    assert (await s.read(1, leader_epoch=2))["error_code"] == FENCED_LEADER
    assert await s.initialize(1, state_epoch=1) == FENCED_STATE
    # A read by a new leader records its epoch: the old leader's write is fenced from then on.
    got = await s.read(1, leader_epoch=4)
    assert (got["error_code"], got["state_epoch"], got["start_offset"], got["state_batches"]) == (
        NONE,
        2,
        10,
        [batch(10, 11, ACKED, 1)],
    )
    assert await s.write(1, [batch(12, 12, ACKED, 1)], state_epoch=2, leader_epoch=3) == FENCED_LEADER
    assert (await s.summary(1))["leader_epoch"] == 4


async def test_unknown_topic_and_empty_group(conn: BrokerConnection, topic_id: uuid.UUID) -> None:
    assert await Share(conn, group(), uuid.uuid4()).initialize(0) == UNKNOWN_TOPIC
    assert await Share(conn, group(), topic_id).initialize(9) == UNKNOWN_TOPIC  # no partition 9
    assert await Share(conn, "", topic_id).initialize(0) == INVALID_REQUEST


async def test_delete(conn: BrokerConnection, topic_id: uuid.UUID) -> None:
    s = Share(conn, group(), topic_id)
    assert await s.initialize(2, start_offset=5) == NONE
    assert await s.write(2, [batch(5, 7, ACKED, 1)]) == NONE
    assert await s.delete(2) == NONE
    assert (await s.read(2))["error_code"] == INVALID_REQUEST
    assert (await s.summary(2))["start_offset"] == -1
    assert await s.delete(2) == NONE  # nothing left to delete: not an error
    # Initialized again from scratch: no epoch of the deleted state fences it.
    assert await s.initialize(2, state_epoch=0, start_offset=0) == NONE


async def test_not_coordinator_for_an_unserved_partition(
    broker: EmbeddedBroker, conn: BrokerConnection, topic_id: uuid.UUID
) -> None:
    s = Share(conn, group(), topic_id)
    assert await s.initialize(3) == NONE
    runtime = broker.broker.share_coordinator
    partition = partition_for_key(s.group, topic_id, 3, runtime.core.config.num_partitions)
    broker.call(runtime.unload, partition)
    try:
        assert await s.write(3, [batch(0, 0, ACKED, 1)]) == NOT_COORDINATOR
        assert (await s.read(3))["error_code"] == NOT_COORDINATOR
    finally:
        broker.call(runtime.load, partition)
    # Loaded again from the log: the state is back.
    assert (await s.read(3))["start_offset"] == 0


class _Denying:
    """An authorizer that allows nothing, remembering what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, ...]] = []

    def authorize(self, *args: Any) -> bool:
        self.asked.append(args)
        return False


@pytest.mark.parametrize(
    ("module", "api_key", "body"),
    [
        ("initialize_share_group_state", 83, {"partition": 0, "state_epoch": 0, "start_offset": 0}),
        ("read_share_group_state", 84, {"partition": 0, "leader_epoch": 0}),
        ("write_share_group_state", 85, {"partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
                                         "delivery_complete_count": -1, "state_batches": []}),
        ("delete_share_group_state", 86, {"partition": 0}),
        ("read_share_group_state_summary", 87, {"partition": 0, "leader_epoch": 0}),
    ],
)
async def test_cluster_action_is_required(module: str, api_key: int, body: dict[str, Any]) -> None:
    """Without CLUSTER_ACTION on the cluster (inter-broker APIs), every partition is
    CLUSTER_AUTHORIZATION_FAILED and the share coordinator is never asked."""
    handler = importlib.import_module(f"zurau.broker.handlers.{module}")
    authz = _Denying()
    services = SimpleNamespace(authorizer=authz, shares=None)
    ctx = RequestContext(RequestHeader(api_key, 0, 1, "t"), services, "127.0.0.1:5000")  # type: ignore[arg-type]
    tid = uuid.uuid4()
    resp = await handler.handle(ctx, {"group_id": "g", "topics": [{"topic_id": tid, "partitions": [body, {**body, "partition": 1}]}]})
    assert [(r["topic_id"], [(p["partition"], p["error_code"]) for p in r["partitions"]]) for r in resp["results"]] == [
        (tid, [(0, 31), (1, 31)])
    ]
    assert authz.asked and all(a[2] == AclOperation.CLUSTER_ACTION for a in authz.asked)
