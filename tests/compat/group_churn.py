"""Consumers under churn, for the static-membership and cooperative-rebalancing compat tests.

Each :class:`Member` runs one client (confluent-kafka or kafka-python) in a thread of its own: the
test sends it commands (subscribe, unsubscribe, close, abandon) that the thread runs between
polls, so only that thread touches the client, and one member blocked in its client (a close or
a destroy that waits) holds up nobody else. A member's rebalance callbacks report to the shared
:class:`Ownership`, which keeps who owns each partition and records every violation of the
cooperative protocol's promise: a partition handed to a member while another still owns it, or a
record consumed by a member that does not own its partition.

``abandon`` drops the client without closing it: for confluent-kafka that is what garbage
collection of an unclosed ``Consumer`` does (``rd_kafka_destroy`` with NO_CONSUMER_CLOSE: no
LeaveGroup), so the coordinator learns of it only when its session times out.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Ownership:
    owner: dict[int, str] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    consumed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def assign(self, name: str, parts: list[int]) -> None:
        with self.lock:
            for p in parts:
                current = self.owner.get(p)
                if current is not None and current != name:
                    self.violations.append(f"partition {p} assigned to {name} while {current} owns it")
                self.owner[p] = name

    def release(self, name: str, parts: list[int] | None = None) -> None:
        with self.lock:
            for p in list(self.owner) if parts is None else parts:
                if self.owner.get(p) == name:
                    del self.owner[p]

    def record(self, name: str, partition: int) -> None:
        with self.lock:
            self.consumed += 1
            if self.owner.get(partition) != name:
                self.violations.append(
                    f"{name} consumed from partition {partition}, owned by {self.owner.get(partition)}"
                )

    def snapshot(self) -> dict[int, str]:
        with self.lock:
            return dict(self.owner)


class Client:
    """What a member needs of a consumer client; callbacks go to ``member``."""

    def subscribe(self) -> None: ...
    def unsubscribe(self) -> None: ...
    def poll(self) -> None: ...
    def close(self) -> None: ...
    def member_id(self) -> str:
        return ""

    def abandon(self) -> None:
        """Drop the consumer without closing it, here and now (its callbacks refer back to this
        object, so only clearing the one reference frees it at once rather than at some later
        garbage collection in whatever thread runs it)."""
        self.consumer: Any = None


class ConfluentClient(Client):
    def __init__(self, member: Member, conf: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        self.member = member
        self.cooperative = conf.get("partition.assignment.strategy") == "cooperative-sticky"
        self.consumer: Any = Consumer({"log_level": 3, "auto.offset.reset": "earliest", **conf})

    def _on_assign(self, consumer: Any, parts: list[Any]) -> None:
        self.member.assigned([tp.partition for tp in parts])
        if self.cooperative:
            consumer.incremental_assign(parts)
        else:
            consumer.assign(parts)

    def _on_revoke(self, consumer: Any, parts: list[Any]) -> None:
        self.member.revoked([tp.partition for tp in parts])
        if self.cooperative:
            consumer.incremental_unassign(parts)
        else:
            consumer.unassign()

    def subscribe(self) -> None:
        self.consumer.subscribe(
            [self.member.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def unsubscribe(self) -> None:
        self.consumer.unsubscribe()

    def poll(self) -> None:
        for m in self.consumer.consume(200, 0.05):
            if m.error() is None:
                self.member.consumed(m.partition())

    def close(self) -> None:
        self.consumer.close()

    def member_id(self) -> str:
        return str(self.consumer.memberid() or "")


class KafkaPythonClient(Client):
    """kafka-python (3.x, whose CooperativeStickyAssignor implements KIP-429).

    Its assignor keeps advertising the partitions of its last assignment as owned after
    ``unsubscribe()`` (kafka-python 3.0.12), so a later ``subscribe()`` claims partitions that
    other members now own and the leader hands them out twice. Leaving and joining is therefore
    done with a fresh consumer: ``unsubscribe`` closes it (LeaveGroup), ``subscribe`` makes a new
    one.
    """

    def __init__(self, member: Member, conf: dict[str, Any]) -> None:
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        self.member = member
        self.conf = conf
        self.consumer: Any = None

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                member.revoked([tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.assigned([tp.partition for tp in assigned])

            def on_partitions_lost(self, lost: Any) -> None:
                member.revoked([tp.partition for tp in lost])

        self.listener = Listener()

    def subscribe(self) -> None:
        from kafka import KafkaConsumer

        if self.consumer is None:
            self.consumer = KafkaConsumer(auto_offset_reset="earliest", **self.conf)
        self.consumer.subscribe(topics=[self.member.topic], listener=self.listener)

    def unsubscribe(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None
        self.member.revoked(None)

    def poll(self) -> None:
        if self.consumer is None:
            time.sleep(0.05)
            return
        for tp, records in self.consumer.poll(timeout_ms=50, max_records=200).items():
            for _ in records:
                self.member.consumed(tp.partition)

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()


class Member:
    """One client in its own thread (see the module doc)."""

    def __init__(self, name: str, topic: str, ownership: Ownership, make: Callable[[Member], Client]) -> None:
        self.name = name
        self.topic = topic
        self.ownership = ownership
        self.subscribed = False
        self.done = threading.Event()
        self.callbacks = 0  # rebalance callbacks run so far
        self.errors: list[BaseException] = []
        self._make = make
        self._commands: queue.SimpleQueue[tuple[str, threading.Event]] = queue.SimpleQueue()
        self._member_id = ""
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ callbacks (member thread)
    def assigned(self, parts: list[int]) -> None:
        self.callbacks += 1
        self.ownership.assign(self.name, parts)

    def revoked(self, parts: list[int] | None) -> None:
        self.callbacks += 1
        self.ownership.release(self.name, parts)

    def consumed(self, partition: int) -> None:
        self.ownership.record(self.name, partition)

    # ------------------------------------------------------------------ commands (test thread)
    def _command(self, name: str, wait: bool = True) -> None:
        ran = threading.Event()
        self._commands.put((name, ran))
        if wait and not ran.wait(60):
            raise AssertionError(f"{self.name}: {name} did not run within 60 s")

    def subscribe(self) -> None:
        self.subscribed = True
        self._command("subscribe")

    def unsubscribe(self) -> None:
        self.subscribed = False
        self._command("unsubscribe")

    def close(self) -> None:
        self.subscribed = False
        self._command("close")
        self.done.wait(60)

    def abandon(self) -> None:
        """Drop the client without closing it (returns at once: the drop may block its thread)."""
        self.subscribed = False
        self._command("abandon", wait=False)

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def owned(self) -> set[int]:
        return {p for p, who in self.ownership.snapshot().items() if who == self.name}

    # ------------------------------------------------------------------ the member thread
    def _run(self) -> None:
        client: Client | None = None
        try:
            client = self._make(self)
            while True:
                try:
                    cmd, ran = self._commands.get_nowait()
                except queue.Empty:
                    client.poll()
                    self._member_id = client.member_id()
                    continue
                if cmd == "subscribe":
                    client.subscribe()
                elif cmd == "unsubscribe":
                    client.unsubscribe()
                elif cmd == "close":
                    client.close()
                    self.ownership.release(self.name)
                    ran.set()
                    return
                elif cmd == "abandon":
                    self.ownership.release(self.name)  # it consumes no more
                    ran.set()
                    client.abandon()
                    return
                ran.set()
        except BaseException as e:  # reported by the test
            self.errors.append(e)
        finally:
            self.done.set()


def wait_until(cond: Callable[[], bool], timeout: float, what: str, diag: Callable[[], str] = str) -> float:
    """Seconds until ``cond()`` held; AssertionError after ``timeout``."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; {diag()}")
        time.sleep(0.02)
    return time.monotonic() - start
