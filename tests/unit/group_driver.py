"""A deterministic driver for the group coordinator: the real runtime on a virtual clock and an
in-memory log.

The driver runs :class:`~zurau.coordinator.group.group_runtime.GroupCoordinatorRuntime` with a
:class:`~zurau.clock.ManualClock` and a :class:`~tests.unit.memory_writer.MemoryPartitionWriter`,
every partition of ``__consumer_offsets`` loaded. Every write is encoded to Kafka's record bytes,
appended, and decoded again when the state machine loads it, so the tests also exercise the
``__consumer_offsets`` formats; ``self.log`` is what was committed. ``rebuild()`` starts a second
runtime on the same log, as a broker restart does; assigning its state machine to ``d.core``
makes it the driver's runtime.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, replace
from typing import Any

from tests.unit.memory_writer import MemoryPartitionWriter
from zurau.clock import ManualClock
from zurau.config import BrokerConfig
from zurau.coordinator.group.group_coordinator_shard import GroupCoordinatorShard
from zurau.coordinator.group.group_runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from zurau.coordinator.group.records import LogEntry, TxnMarker, iter_log_batches
from zurau.protocol import errors as E

BROKER_CONFIG = BrokerConfig({})


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int


class FakeTopics:
    def __init__(self, **partitions: int) -> None:
        self._by_name: dict[str, Topic] = {}
        for name, n in partitions.items():
            self.add(name, n)

    def add(self, name: str, partitions: int) -> Topic:
        t = Topic(name, uuid.uuid5(uuid.NAMESPACE_DNS, name), partitions)
        self._by_name[name] = t
        return t

    def get(self, name: str) -> Topic | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self._by_name.values() if t.topic_id == topic_id), None)

    def names(self) -> list[str]:
        return sorted(self._by_name)


DEFAULTS: dict[str, Any] = dict(
    initial_rebalance_delay_ms=3000,
    min_session_timeout_ms=6000,
    consumer_session_timeout_ms=45_000,
    consumer_heartbeat_interval_ms=5000,
)


def no_create(name: str, partitions: int, replication_factor: int, configs: dict[str, str | None]) -> None:
    raise AssertionError("the driver's runtime never creates topics")


class Driver:
    def __init__(
        self, topics: FakeTopics | None = None, writer: MemoryPartitionWriter | None = None, **config: Any
    ) -> None:
        self.topics = topics or FakeTopics(t=6, u=3)
        self.config = replace(BROKER_CONFIG.group_coordinator, **{**DEFAULTS, **config})
        if self.topics.get(OFFSETS_TOPIC) is None:
            self.topics.add(OFFSETS_TOPIC, self.config.num_partitions)
        self.writer = writer or MemoryPartitionWriter()
        self.replies: dict[int, Any] = {}
        self._tokens = itertools.count(1)
        self.rt = self.new_runtime(ManualClock(1_000_000))
        self._spare: GroupCoordinatorRuntime | None = None

    def new_runtime(self, clock: ManualClock, *, load: bool = True) -> GroupCoordinatorRuntime:
        """A runtime on this driver's log, every partition loaded (unless not ``load``)."""
        rt = GroupCoordinatorRuntime(self.config, self.writer, self.topics, no_create, clock)
        if load:
            for i in range(self.config.num_partitions):
                rt.load(i)
        return rt

    # ------------------------------------------------------------------ state and time
    @property
    def clock(self) -> ManualClock:
        clock = self.rt.clock
        assert isinstance(clock, ManualClock)
        return clock

    @property
    def core(self) -> GroupCoordinatorShard:
        return self.rt.core

    @core.setter
    def core(self, core: GroupCoordinatorShard) -> None:
        """Switch to the runtime that ``rebuild()`` made (the old one stops)."""
        assert self._spare is not None and self._spare.core is core, "not a rebuilt coordinator"
        self.rt.stop()
        self.rt, self._spare = self._spare, None

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    @property
    def fail_writes(self) -> E.KafkaError | None:
        return self.writer.fail_topics.get(OFFSETS_TOPIC)

    @fail_writes.setter
    def fail_writes(self, err: E.KafkaError | None) -> None:
        if err is None:
            self.writer.fail_topics.pop(OFFSETS_TOPIC, None)
        else:
            self.writer.fail_topics[OFFSETS_TOPIC] = err

    @property
    def log(self) -> list[LogEntry]:
        """The committed ``__consumer_offsets`` records, in the order they were appended."""
        out: list[LogEntry] = []
        for (topic, partition), data in self.writer.committed():
            if topic != OFFSETS_TOPIC:
                continue
            for _nxt, entries in iter_log_batches(data):
                for _offset, rec in entries:
                    assert rec is not None
                    out.append(
                        TxnMarker(rec.producer_id, rec.commit, partition)
                        if isinstance(rec, TxnMarker)
                        else rec
                    )
        return out

    # ------------------------------------------------------------------ requests
    def call(self, method: str, **kwargs: Any) -> int:
        """Send a request through the runtime; returns the handle to read its reply with."""
        key = kwargs.get("group_id")
        if key is None:
            key = next((g for g in kwargs.get("group_ids", []) if g), "")
        handle = next(self._tokens)

        def done(result: Any, err: E.KafkaError | None) -> None:
            assert handle not in self.replies, f"request {handle} answered twice"
            self.replies[handle] = result if err is None else err

        rt = self.rt
        rt.request(key, lambda token, now: getattr(rt.core, method)(token, now_ms=now, **kwargs), done)
        return handle

    def reply(self, token: int) -> Any:
        assert token in self.replies, f"no reply for request {token} yet"
        return self.replies[token]

    def pending(self, token: int) -> bool:
        return token not in self.replies

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    def marker(self, producer_id: int, group: str, commit: bool) -> None:
        """The transaction coordinator writes a marker to ``group``'s partition."""
        outcome: list[E.KafkaError | None] = []
        self.rt.write_txn_marker(self.core.partition_for(group), producer_id, 0, commit, 0, outcome.append)
        assert outcome == [None]

    def rebuild(self) -> GroupCoordinatorShard:
        """A second runtime loaded from the committed records (a broker restart); assign its
        state machine to ``d.core`` to carry on with it."""
        self._spare = self.new_runtime(ManualClock(self.now))
        return self._spare.core

    # ------------------------------------------------------------------ classic helpers
    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        protocols: list[tuple[str, bytes]] | None = None,
        instance: str | None = None,
        session: int = 10_000,
        rebalance: int = 30_000,
        version: int = 5,
        client_id: str = "c",
    ) -> int:
        return self.call(
            "join_group",
            group_id=group,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=protocols if protocols is not None else [("range", b"meta-" + client_id.encode())],
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            client_id=client_id,
            client_host="/127.0.0.1",
            require_known_member_id=version >= 4,
            api_version=version,
        )

    def join_with_id(self, group: str, **kw: Any) -> tuple[str, int]:
        """The MEMBER_ID_REQUIRED round trip: returns (member id, token of the second join)."""
        t = self.join(group, **kw)
        r = self.reply(t)
        assert r.error_code == E.MemberIdRequiredError.code and r.member_id
        return r.member_id, self.join(group, r.member_id, **kw)

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        instance: str | None = None,
    ) -> int:
        return self.call(
            "sync_group",
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=None,
            protocol_name=None,
            assignments=assignments or {},
        )

    def heartbeat(self, group: str, member_id: str, generation: int, instance: str | None = None) -> int:
        t = self.call(
            "heartbeat",
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
        )
        return self.reply(t)

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        metadata: str | None = "",
        instance: str | None = None,
        api_version: int = 8,
    ) -> dict[Any, int]:
        from zurau.coordinator.group.results import OffsetCommitEntry

        t = self.call(
            "commit_offsets",
            group_id=group,
            member_id=member_id,
            generation_id=generation,
            group_instance_id=instance,
            offsets=[OffsetCommitEntry(tp[0], tp[1], o, 3, metadata) for tp, o in offsets.items()],
            api_version=api_version,
        )
        return self.reply(t)

    def committed(self, group: str, topic: str = "t", partitions: range = range(6)) -> dict[int, int]:
        r = self.core.fetch_offsets(group, [(topic, list(partitions))])
        assert r.error_code == 0
        return {f.partition: f.offset for f in r.topics[0][1]}

    # ------------------------------------------------------------------ KIP-848 helpers
    def cg(
        self,
        group: str,
        member_id: str,
        epoch: int,
        *,
        topics: list[str] | None = None,
        owned: list[dict[str, Any]] | None = None,
        rebalance: int = -1,
        instance: str | None = None,
        assignor: str | None = None,
        regex: str | None = None,
    ) -> Any:
        t = self.call(
            "consumer_group_heartbeat",
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=instance,
            rebalance_timeout_ms=rebalance,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            owned=owned,
            client_id="rdkafka",
            client_host="/127.0.0.1",
        )
        return self.reply(t)

    def cg_join(self, group: str, member_id: str, topics: list[str], **kw: Any) -> Any:
        return self.cg(
            group, member_id, 0, topics=topics, owned=[], rebalance=kw.pop("rebalance", 30_000), **kw
        )

    def tp(self, assignment: list[dict[str, Any]] | None) -> set[tuple[str, int]]:
        """A heartbeat assignment as {(topic name, partition)}."""
        out = set()
        for item in assignment or []:
            t = self.topics.by_id(item["topic_id"])
            assert t is not None
            out.update((t.name, p) for p in item["partitions"])
        return out

    def owned(self, parts: set[tuple[str, int]]) -> list[dict[str, Any]]:
        by: dict[uuid.UUID, list[int]] = {}
        for name, p in parts:
            t = self.topics.get(name)
            assert t is not None
            by.setdefault(t.topic_id, []).append(p)
        return [{"topic_id": k, "partitions": sorted(v)} for k, v in by.items()]
