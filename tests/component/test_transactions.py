"""Transaction APIs through real sockets against an in-process broker (ephemeral port, temp dir).

FindCoordinator (transactional ids), InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn, WriteTxnMarkers, DescribeTransactions, ListTransactions and
DescribeProducers at the versions real clients use (and flexible ones), together with Produce
(partition verification), Fetch (read_committed: last stable offset, aborted transactions) and
OffsetFetch (require_stable), plus broker restarts with prepared and ongoing transactions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.protocol import errors as E
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.record import decode_batch_records

PRODUCE, FETCH, OFFSET_FETCH, FIND_COORDINATOR, CREATE_TOPICS = 0, 1, 9, 10, 19
INIT_PID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_MARKERS, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 27, 28
DESCRIBE_PRODUCERS, DESCRIBE_TXNS, LIST_TXNS = 61, 65, 66
TOPIC = "data"


class Env:
    def __init__(self, data_dir: Path, **props: str) -> None:
        self.data_dir = data_dir
        self.props = props
        self.broker: Broker
        self.clients: list[KafkaWireClient] = []

    async def start(self) -> None:
        props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(self.data_dir), **self.props}
        self.broker = Broker(BrokerConfig.from_props(props))
        await self.broker.start()
        self.c = await self.client()

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def stop(self) -> None:
        for c in self.clients:
            await c.close()
        self.clients.clear()
        await self.broker.stop()

    async def client(self) -> KafkaWireClient:
        host, port = self.broker.listen_addresses[0]
        c = await KafkaWireClient.connect(host, port)
        self.clients.append(c)
        return c

    async def create(self, name: str, partitions: int) -> None:
        body = {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "configs": []}],
            "timeout_ms": 5000,
        }
        r = await self.c.request(CREATE_TOPICS, 5, body)
        assert r["topics"][0]["error_code"] == 0, r

    # ------------------------------------------------------------------ transaction APIs
    async def init(
        self, tid: str | None, version: int = 4, timeout: int = 60_000, pid: int = -1, epoch: int = -1
    ) -> dict[str, Any]:
        body = {
            "transactional_id": tid,
            "transaction_timeout_ms": timeout,
            "producer_id": pid,
            "producer_epoch": epoch,
        }
        return await self.c.request(INIT_PID, version, body)

    async def add(
        self, tid: str, pid: int, epoch: int, parts: dict[str, list[int]], version: int = 3
    ) -> dict[tuple[str, int], int]:
        body = {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in parts.items()],
        }
        r = await self.c.request(ADD_PARTITIONS, version, body)
        return {
            (t["name"], p["partition_index"]): p["partition_error_code"]
            for t in r["results_by_topic_v3_and_below"]
            for p in t["results_by_partition"]
        }

    async def add_offsets(self, tid: str, pid: int, epoch: int, group: str, version: int = 3) -> int:
        body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
        return (await self.c.request(ADD_OFFSETS, version, body))["error_code"]

    async def txn_commit(
        self, tid: str, pid: int, epoch: int, group: str, offsets: dict[int, int], version: int = 3
    ) -> dict[int, int]:
        body = {
            "transactional_id": tid,
            "group_id": group,
            "producer_id": pid,
            "producer_epoch": epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": o,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p, o in offsets.items()
                    ],
                }
            ],
        }
        r = await self.c.request(TXN_OFFSET_COMMIT, version, body)
        return {p["partition_index"]: p["error_code"] for p in r["topics"][0]["partitions"]}

    async def end(self, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
        body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
        return (await self.c.request(END_TXN, version, body))["error_code"]

    async def produce(
        self,
        pid: int,
        epoch: int,
        seq: int,
        values: list[bytes],
        partition: int = 0,
        tid: str | None = "tx",
        txn: bool = True,
    ) -> int:
        batch = build_batch(
            [(None, v, (), int(time.time() * 1000)) for v in values],  # now: no time-based roll
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=txn,
        )
        body = {
            "transactional_id": tid,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}],
        }
        r = await self.c.request(PRODUCE, 9, body)
        return r["responses"][0]["partition_responses"][0]["error_code"]

    async def fetch(self, partition: int = 0, read_committed: bool = True) -> dict[str, Any]:
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 1 if read_committed else 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        }
        r = await self.c.request(FETCH, 11, body)
        return r["responses"][0]["partitions"][0]

    async def offset_fetch(
        self, group: str, partitions: list[int], require_stable: bool = True
    ) -> dict[int, tuple[int, int]]:
        body = {
            "group_id": group,
            "topics": [{"name": TOPIC, "partition_indexes": partitions}],
            "require_stable": require_stable,
        }
        r = await self.c.request(OFFSET_FETCH, 7, body)
        return {
            p["partition_index"]: (p["committed_offset"], p["error_code"])
            for p in r["topics"][0]["partitions"]
        }

    async def describe(self, tid: str) -> dict[str, Any]:
        return (await self.c.request(DESCRIBE_TXNS, 0, {"transactional_ids": [tid]}))["transaction_states"][0]


def values_of(entry: dict[str, Any]) -> list[bytes]:
    """Values of a fetch answer as a read_committed consumer keeps them (Kafka's client logic:
    a producer's batches are dropped from its aborted transaction's first offset to its marker)."""
    data = bytes(entry["records"])
    pending = sorted((a["first_offset"], a["producer_id"]) for a in entry["aborted_transactions"] or [])
    aborting: set[int] = set()
    out = []
    for pos, h in iter_batches(data):
        while pending and pending[0][0] <= h.last_offset:
            aborting.add(pending.pop(0)[1])
        if h.is_control:
            aborting.discard(h.producer_id)  # (only ABORT markers end an aborted range here)
            continue
        if h.producer_id in aborting:
            continue
        out.extend(bytes(r.value) for r in decode_batch_records(memoryview(data)[pos : pos + h.size]))
    return out


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    e = Env(tmp_path, **{"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"})
    await e.start()
    await e.create(TOPIC, 2)
    try:
        yield e
    finally:
        await e.stop()


async def test_find_coordinator_for_transactional_ids_creates_the_state_topic(env: Env) -> None:
    assert env.broker.image.get("__transaction_state") is None
    r = await env.c.request(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["a", "b"]})
    assert [(c["key"], c["error_code"], c["node_id"]) for c in r["coordinators"]] == [
        ("a", 0, env.broker.node_id),
        ("b", 0, env.broker.node_id),
    ]
    t = env.broker.image.get("__transaction_state")
    assert t is not None and t.num_partitions == 3 and t.configs["cleanup.policy"] == "compact"
    r = await env.c.request(FIND_COORDINATOR, 1, {"key": "a", "key_type": 1})
    assert r["error_code"] == 0 and r["port"] == env.broker.listen_addresses[0][1]


@pytest.mark.parametrize(
    "versions",
    [
        {"init": 4, "add": 3, "offsets": 3, "commit": 3, "end": 3},
        {"init": 0, "add": 0, "offsets": 0, "commit": 0, "end": 0},
    ],
)
async def test_transaction_with_offsets_commits_atomically(env: Env, versions: dict[str, int]) -> None:
    r = await env.init("tx", version=versions["init"])
    assert r["error_code"] == 0
    pid, epoch = r["producer_id"], r["producer_epoch"]
    assert await env.add("tx", pid, epoch, {TOPIC: [0, 1]}, version=versions["add"]) == {
        (TOPIC, 0): 0,
        (TOPIC, 1): 0,
    }
    assert await env.produce(pid, epoch, 0, [b"a", b"b"], partition=0) == 0
    assert await env.produce(pid, epoch, 0, [b"c"], partition=1) == 0
    assert await env.add_offsets("tx", pid, epoch, "grp", version=versions["offsets"]) == 0
    assert await env.txn_commit("tx", pid, epoch, "grp", {0: 2, 1: 1}, version=versions["commit"]) == {
        0: 0,
        1: 0,
    }
    # Nothing is visible yet: read_committed stops at the last stable offset, offsets are unstable.
    part0 = await env.fetch(0)
    assert (part0["last_stable_offset"], part0["high_watermark"], values_of(part0)) == (0, 2, [])
    assert values_of(await env.fetch(0, read_committed=False)) == [b"a", b"b"]
    unstable = E.UnstableOffsetCommitError.code
    assert await env.offset_fetch("grp", [0, 1]) == {0: (-1, unstable), 1: (-1, unstable)}
    assert await env.offset_fetch("grp", [0], require_stable=False) == {0: (-1, 0)}
    state = await env.describe("tx")
    assert state["transaction_state"] == "Ongoing" and state["producer_id"] == pid
    assert sorted((t["topic"], sorted(t["partitions"])) for t in state["topics"])[1] == (TOPIC, [0, 1])

    assert await env.end("tx", pid, epoch, True, version=versions["end"]) == 0
    part0 = await env.fetch(0)
    assert (part0["last_stable_offset"], part0["high_watermark"], values_of(part0)) == (3, 3, [b"a", b"b"])
    assert values_of(await env.fetch(1)) == [b"c"]
    assert await env.offset_fetch("grp", [0, 1]) == {0: (2, 0), 1: (1, 0)}
    assert (await env.describe("tx"))["transaction_state"] == "CompleteCommit"


async def test_aborted_transaction_is_named_to_read_committed_readers(env: Env) -> None:
    r = await env.init("tx")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    assert await env.add("tx", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
    assert await env.produce(pid, epoch, 0, [b"gone"]) == 0
    assert await env.add_offsets("tx", pid, epoch, "grp") == 0
    assert await env.txn_commit("tx", pid, epoch, "grp", {0: 1}) == {0: 0}
    assert await env.end("tx", pid, epoch, False) == 0
    part0 = await env.fetch(0)
    assert part0["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]
    assert part0["last_stable_offset"] == 2 and values_of(part0) == []
    assert await env.offset_fetch("grp", [0]) == {0: (-1, 0)}
    # The next transaction of the same producer commits normally.
    assert await env.add("tx", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
    assert await env.produce(pid, epoch, 1, [b"kept"]) == 0
    assert await env.end("tx", pid, epoch, True) == 0
    assert values_of(await env.fetch(0)) == [b"kept"]


async def test_produce_verification(env: Env) -> None:
    r = await env.init("tx")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    assert await env.produce(pid, epoch, 0, [b"x"]) == E.InvalidTxnStateError.code  # not added
    assert await env.produce(pid + 100, 0, 0, [b"x"]) == E.InvalidProducerIdMappingError.code
    assert await env.add("tx", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
    assert await env.produce(pid, epoch, 0, [b"x"], partition=1) == E.InvalidTxnStateError.code
    assert await env.produce(pid, epoch, 0, [b"x"]) == 0
    # A new producer of the id fences this one: its writes to a partition are refused.
    assert (await env.init("tx"))["error_code"] == E.ConcurrentTransactionsError.code
    r2 = await env.init("tx")
    assert (r2["error_code"], r2["producer_epoch"]) == (0, epoch + 2)
    assert await env.produce(pid, epoch, 1, [b"late"]) == E.InvalidProducerEpochError.code
    assert await env.end("tx", pid, epoch, True) == E.ProducerFencedError.code
    assert await env.end("tx", pid, epoch, True, version=1) == E.InvalidProducerEpochError.code
    assert (await env.add("tx", pid, epoch, {TOPIC: [1]}, version=1))[
        (TOPIC, 1)
    ] == E.InvalidProducerEpochError.code
    assert await env.add_offsets("tx", pid, epoch, "g", version=2) == E.ProducerFencedError.code
    stale = await env.init("tx", version=3, pid=pid, epoch=epoch)
    assert stale["error_code"] == E.InvalidProducerEpochError.code
    assert (await env.init("tx", version=4, pid=pid, epoch=epoch))["error_code"] == E.ProducerFencedError.code
    # The fenced transaction was aborted: nothing of it is visible.
    assert values_of(await env.fetch(0)) == []


async def test_add_partitions_errors_and_verify_only(env: Env) -> None:
    r = await env.init("tx")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    codes = await env.add("tx", pid, epoch, {TOPIC: [0, 7], "nope": [0]})
    assert codes == {
        (TOPIC, 0): E.OperationNotAttemptedError.code,
        (TOPIC, 7): E.UnknownTopicOrPartitionError.code,
        ("nope", 0): E.UnknownTopicOrPartitionError.code,
    }
    assert (await env.describe("tx"))["transaction_state"] == "Empty"
    assert await env.add("unknown", pid, epoch, {TOPIC: [0]}) == {
        (TOPIC, 0): E.InvalidProducerIdMappingError.code
    }
    assert await env.add("tx", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
    body = {
        "transactions": [
            {
                "transactional_id": "tx",
                "producer_id": pid,
                "producer_epoch": epoch,
                "verify_only": True,
                "topics": [{"name": TOPIC, "partitions": [0, 1]}],
            }
        ]
    }
    resp = await env.c.request(ADD_PARTITIONS, 4, body)
    (txn,) = resp["results_by_transaction"]
    codes = {
        p["partition_index"]: p["partition_error_code"]
        for p in txn["topic_results"][0]["results_by_partition"]
    }
    assert codes == {0: 0, 1: E.InvalidTxnStateError.code}
    assert (await env.describe("tx"))["topics"] == [
        {"topic": TOPIC, "partitions": [0]}
    ]  # verify changed nothing


async def test_idempotent_init_producer_id_is_unchanged(env: Env) -> None:
    a = await env.init(None, version=4, timeout=-1)  # librdkafka's idempotent producer
    b = await env.init(None, version=0)
    assert a["error_code"] == b["error_code"] == 0 and a["producer_id"] != b["producer_id"]
    assert a["producer_epoch"] == 0
    assert (await env.init("", version=4))["error_code"] == E.InvalidRequestError.code
    assert (await env.init("tx", timeout=10**9))["error_code"] == E.InvalidTransactionTimeoutError.code


async def test_admin_apis_and_aborting_a_hanging_transaction(tmp_path: Path) -> None:
    # Without partition verification a zombie can open a transaction no coordinator knows about.
    e = Env(
        tmp_path,
        **{"transaction.partition.verification.enable": "false", "transaction.state.log.num.partitions": "2"},
    )
    await e.start()
    try:
        await e.create(TOPIC, 1)
        r = await e.init("live", timeout=30_000)
        pid, epoch = r["producer_id"], r["producer_epoch"]
        assert await e.add("live", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
        assert await e.produce(pid, epoch, 0, [b"live"]) == 0
        assert await e.produce(9999, 3, 0, [b"hanging"]) == 0
        lst = await e.c.request(
            LIST_TXNS, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        )
        assert lst["error_code"] == 0 and [
            (t["transactional_id"], t["transaction_state"]) for t in lst["transaction_states"]
        ] == [("live", "Ongoing")]
        lst = await e.c.request(
            LIST_TXNS,
            2,
            {
                "state_filters": ["Empty", "Bogus"],
                "producer_id_filters": [],
                "transactional_id_pattern": "l.*",
            },
        )
        assert lst["transaction_states"] == [] and lst["unknown_state_filters"] == ["Bogus"]
        desc = await e.c.request(
            DESCRIBE_PRODUCERS, 0, {"topics": [{"name": TOPIC, "partition_indexes": [0, 5]}]}
        )
        p0, p5 = desc["topics"][0]["partitions"]
        assert p5["error_code"] == E.UnknownTopicOrPartitionError.code
        producers = {p["producer_id"]: p for p in p0["active_producers"]}
        assert producers[9999]["current_txn_start_offset"] == 1 and producers[9999]["producer_epoch"] == 3
        assert producers[pid]["current_txn_start_offset"] == 0 and producers[pid]["last_sequence"] == 0
        assert (await e.describe("nobody"))["error_code"] == E.TransactionalIdNotFoundError.code

        assert await e.end("live", pid, epoch, True) == 0
        part = await e.fetch(0)
        assert part["last_stable_offset"] == 1  # held by the hanging transaction
        # What `zurau transactions abort` sends: an ABORT marker for the hanging producer.
        body = {
            "markers": [
                {
                    "producer_id": 9999,
                    "producer_epoch": 3,
                    "transaction_result": False,
                    "topics": [
                        {"name": TOPIC, "partition_indexes": [0]},
                        {"name": "nope", "partition_indexes": [0]},
                    ],
                    "coordinator_epoch": 0,
                }
            ]
        }
        resp = await e.c.request(WRITE_MARKERS, 1, body)
        codes = {
            (t["name"], p["partition_index"]): p["error_code"]
            for t in resp["markers"][0]["topics"]
            for p in t["partitions"]
        }
        assert codes == {(TOPIC, 0): 0, ("nope", 0): E.UnknownTopicOrPartitionError.code}
        part = await e.fetch(0)
        assert part["last_stable_offset"] == part["high_watermark"] == 4
        assert values_of(part) == [b"live"]
        assert part["aborted_transactions"] == [{"producer_id": 9999, "first_offset": 1}]
    finally:
        await e.stop()


async def test_restart_completes_a_prepared_transaction(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    r = await env.init("tx")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    assert await env.add("tx", pid, epoch, {TOPIC: [0, 1]}) == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    assert await env.produce(pid, epoch, 0, [b"a"], partition=0) == 0
    assert await env.produce(pid, epoch, 0, [b"b"], partition=1) == 0
    assert await env.add_offsets("tx", pid, epoch, "grp") == 0
    assert await env.txn_commit("tx", pid, epoch, "grp", {1: 1}) == {1: 0}
    rm = env.broker.replica_manager
    real = rm.append_markers

    def failing(topic: str, index: int, *args: Any) -> Any:
        if (topic, index) == (TOPIC, 1):
            raise E.KafkaStorageError("disk trouble")
        return real(topic, index, *args)

    monkeypatch.setattr(rm, "append_markers", failing)
    assert await env.end("tx", pid, epoch, True) == 0  # PrepareCommit is stored: the outcome is decided
    assert (await env.describe("tx"))["transaction_state"] == "PrepareCommit"
    assert values_of(await env.fetch(1)) == []
    assert await env.offset_fetch("grp", [1]) == {1: (1, 0)}  # its partition got the marker
    assert (await env.init("tx"))["error_code"] == E.ConcurrentTransactionsError.code
    await env.restart()  # a new ReplicaManager: markers work again
    assert (await env.describe("tx"))["transaction_state"] == "CompleteCommit"
    assert values_of(await env.fetch(0)) == [b"a"] and values_of(await env.fetch(1)) == [b"b"]


async def test_restart_keeps_ongoing_transactions_and_pending_offsets(env: Env) -> None:
    r = await env.init("tx")
    pid, epoch = r["producer_id"], r["producer_epoch"]
    assert await env.add("tx", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
    assert await env.produce(pid, epoch, 0, [b"a"]) == 0
    assert await env.add_offsets("tx", pid, epoch, "grp") == 0
    assert await env.txn_commit("tx", pid, epoch, "grp", {0: 1}) == {0: 0}
    await env.restart()
    assert (await env.describe("tx"))["transaction_state"] == "Ongoing"
    assert await env.offset_fetch("grp", [0]) == {0: (-1, E.UnstableOffsetCommitError.code)}
    assert (await env.fetch(0))["last_stable_offset"] == 0
    assert await env.produce(pid, epoch, 1, [b"b"]) == 0  # the producer carries on
    assert await env.end("tx", pid, epoch, True) == 0
    assert values_of(await env.fetch(0)) == [b"a", b"b"]
    assert await env.offset_fetch("grp", [0]) == {0: (1, 0)}


async def test_transaction_timeout_aborts(tmp_path: Path) -> None:
    e = Env(tmp_path, **{"transaction.state.log.num.partitions": "1"})
    await e.start()
    try:
        await e.create(TOPIC, 1)
        r = await e.init("slow", timeout=300)
        pid, epoch = r["producer_id"], r["producer_epoch"]
        assert await e.add("slow", pid, epoch, {TOPIC: [0]}) == {(TOPIC, 0): 0}
        assert await e.produce(pid, epoch, 0, [b"late"]) == 0
        for _ in range(50):
            await asyncio.sleep(0.05)
            if (await e.describe("slow"))["transaction_state"] == "CompleteAbort":
                break
        state = await e.describe("slow")
        assert (state["transaction_state"], state["producer_epoch"]) == ("CompleteAbort", epoch + 1)
        part = await e.fetch(0)
        assert part["last_stable_offset"] == part["high_watermark"] == 2 and values_of(part) == []
        assert await e.end("slow", pid, epoch, True) == E.ProducerFencedError.code
    finally:
        await e.stop()
