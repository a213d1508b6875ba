"""A deterministic driver for the group coordinator state machine: virtual clock, in-memory log.

Every write is encoded to Kafka's record bytes and decoded again before it is "committed" (kept
in ``self.log``), so the tests also exercise the ``__consumer_offsets`` formats; ``rebuild()``
replays that log into a fresh coordinator, as a broker restart does.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

from zurau.coordinator.group_coordinator import CoordinatorConfig, Effects, GroupCoordinator
from zurau.coordinator.records import (
    LogEntry,
    TransactionalRecord,
    TxnMarker,
    decode_record,
)
from zurau.protocol import errors as E


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


class Driver:
    def __init__(self, topics: FakeTopics | None = None, **config: Any) -> None:
        self.topics = topics or FakeTopics(t=6, u=3)
        self.config = CoordinatorConfig(**{**DEFAULTS, **config})
        self.core = GroupCoordinator(self.config, self.topics)
        self.now = 1_000_000
        self.log: list[LogEntry] = []
        self.replies: dict[int, Any] = {}
        self.fail_writes: E.KafkaError | None = None
        self._tokens = itertools.count(1)
        self.core.start(self.now)

    # ------------------------------------------------------------------ effects
    def run(self, fx: Effects) -> None:
        for w in fx.writes:
            err = self.fail_writes
            if err is None:
                for r in w.records:
                    again = decode_record(r.key_bytes(), r.value_bytes())
                    assert again is not None and again.key == r.key
                    self.log.append(
                        TransactionalRecord(w.producer_id, again) if w.producer_id >= 0 else again
                    )
                assert w.partition == self.core.partition_for(w.group_id)
            self.run(self.core.complete_write(w, err, self.now))
        for token, result in fx.replies:
            assert token not in self.replies, f"token {token} answered twice"
            self.replies[token] = result

    def call(self, method: str, **kwargs: Any) -> int:
        token = next(self._tokens)
        self.run(getattr(self.core, method)(token, now_ms=self.now, **kwargs))
        return token

    def reply(self, token: int) -> Any:
        assert token in self.replies, f"no reply for token {token} yet"
        return self.replies[token]

    def pending(self, token: int) -> bool:
        return token not in self.replies

    def advance(self, ms: int) -> None:
        target = self.now + ms
        while True:
            d = self.core.next_deadline()
            if d is None or d > target:
                break
            self.now = max(self.now, d)
            self.run(self.core.poll(self.now))
        self.now = target

    def marker(self, producer_id: int, group: str, commit: bool) -> None:
        """The transaction coordinator appends a marker to ``group``'s partition."""
        partition = self.core.partition_for(group)
        self.log.append(TxnMarker(producer_id, commit, partition))
        self.core.complete_transaction(producer_id, {partition}, commit)

    def rebuild(self) -> GroupCoordinator:
        """A new coordinator loaded from the committed records (a broker restart)."""
        core = GroupCoordinator(self.config, self.topics)
        core.load(self.log)
        core.start(self.now)
        return core

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
        from zurau.coordinator.group_coordinator import OffsetCommitEntry

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
