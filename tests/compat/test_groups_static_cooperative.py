"""Static membership (KIP-345) and incremental cooperative rebalancing (KIP-429) with real clients.

Static membership, librdkafka: a member with ``group.instance.id`` sends no LeaveGroup when it
closes; when it comes back within its session timeout (JoinGroup with no member id and the same
instance id) the coordinator gives it a new member id and its old slot, so it gets the same
partitions back while the other member sees nothing at all: no rebalance callback, the group
never leaves Stable, the generation stays. The old member id is fenced. A static member that does
not come back is removed when its session times out; an operator can remove it earlier with
LeaveGroup naming its instance id.

Cooperative rebalancing: three consumers with ``cooperative-sticky`` and rebalance callbacks
(incremental assign / unassign) share a topic that a producer keeps writing; two of them
unsubscribe and subscribe again, in turn, and the third is abandoned (never closed: its session
must time out). Every rebalance must settle (each partition owned by exactly one subscribed
member, the group Stable) well within the session timeout, except the one that has to wait for
the abandoned member's session to expire; and no partition may ever be owned, or consumed, by two
members at once. Settling within half the session timeout is a liveness property here, not a
performance figure: a coordinator that loses track of a cooperative rebalance waits for a session
or rebalance timeout.

librdkafka and kafka-python (3.x has KIP-429) run the cooperative scenario; aiokafka has no
cooperative assignor.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.compat.group_churn import (
    ConfluentClient,
    KafkaPythonClient,
    Member,
    Ownership,
    wait_until,
)
from tests.compat.group_probe import GroupProbe, StateMonitor
from zurau.embedded import EmbeddedBroker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "300"}
FENCED_INSTANCE_ID = 82
HEARTBEAT_MS = 500


# ====================================================================== static membership


def _static_member(
    broker: EmbeddedBroker, topic: str, group: str, name: str, strategy: str, session_ms: int, own: Ownership
) -> Member:
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "group.id": group,
        "group.instance.id": f"inst-{name}",
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": HEARTBEAT_MS,
        "partition.assignment.strategy": strategy,
        "enable.auto.commit": False,
    }
    m = Member(name, topic, own, lambda member: ConfluentClient(member, conf))
    m.subscribe()
    return m


def _static_pair(
    broker: EmbeddedBroker, strategy: str, session_ms: int
) -> tuple[str, Ownership, Member, Member, GroupProbe]:
    """Static members a (the leader: it is alone at first) and b sharing 4 partitions, Stable."""
    topic = f"static-{uuid.uuid4().hex[:6]}"
    group = f"g-static-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, 4)
    own = Ownership()
    a = _static_member(broker, topic, group, "a", strategy, session_ms, own)
    wait_until(lambda: a.owned == {0, 1, 2, 3}, 30, "a owning every partition")
    b = _static_member(broker, topic, group, "b", strategy, session_ms, own)
    wait_until(
        lambda: len(a.owned) == 2 and len(b.owned) == 2 and bool(a.member_id) and bool(b.member_id),
        30,
        "a and b sharing the partitions",
        lambda: f"{own.snapshot()}",
    )
    host, port = broker.broker.advertised
    probe = GroupProbe(host, port, group)
    wait_until(lambda: probe.describe()["group_state"] == "Stable", 10, "a Stable group")
    return topic, own, a, b, probe


@pytest.mark.parametrize("restart", ["leader", "follower"])
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_static_member_back_within_its_session_timeout_gets_its_partitions_without_a_rebalance(
    tmp_path: Path, strategy: str, restart: str
) -> None:
    session_ms = 10_000
    with EmbeddedBroker(tmp_path / "data", **BROKER_CONFIGS) as broker:
        topic, own, a, b, probe = _static_pair(broker, strategy, session_ms)
        leaving, staying = (a, b) if restart == "leader" else (b, a)
        generation = probe.generation(staying.member_id, f"inst-{staying.name}")
        old_id, partitions = leaving.member_id, leaving.owned
        staying_callbacks = staying.callbacks
        monitor = StateMonitor(probe)
        leaving.close()  # static: no LeaveGroup
        time.sleep(1.0)
        again = _static_member(broker, topic, probe.group, leaving.name, strategy, session_ms, own)
        wait_until(
            lambda: again.owned == partitions and bool(again.member_id),
            session_ms / 1000,
            f"the restarted member getting {sorted(partitions)} back",
            lambda: f"{own.snapshot()}",
        )
        time.sleep(2.0)  # a rebalance, had one started, would show now
        states = monitor.stop()
        try:
            assert states == ["Stable"], f"the group left Stable: {states}"
            assert staying.callbacks == staying_callbacks, "the other member saw a rebalance"
            assert staying.owned == {0, 1, 2, 3} - partitions
            assert probe.generation(staying.member_id, f"inst-{staying.name}") == generation
            members = {m["member_id"]: m["group_instance_id"] for m in probe.describe()["members"]}
            assert members == {
                staying.member_id: f"inst-{staying.name}",
                again.member_id: f"inst-{again.name}",
            }
            assert again.member_id != old_id
            assert probe.heartbeat(old_id, generation, f"inst-{again.name}") == FENCED_INSTANCE_ID
            assert own.violations == []
        finally:
            for m in (staying, again):
                m.close()
            assert not staying.errors and not again.errors, (staying.errors, again.errors)


def test_static_member_gone_for_good_is_removed_at_its_session_timeout(tmp_path: Path) -> None:
    session_ms = 6000
    with EmbeddedBroker(tmp_path / "data", **BROKER_CONFIGS) as broker:
        _topic, own, a, b, probe = _static_pair(broker, "cooperative-sticky", session_ms)
        generation = probe.generation(a.member_id, "inst-a")
        b.close()
        # b's slot stays (a keeps its two partitions) until b's session expires; then a rebalance
        # gives a everything.
        time.sleep(session_ms / 2000)
        assert len(a.owned) == 2, own.snapshot()
        wait_until(lambda: a.owned == {0, 1, 2, 3}, session_ms / 1000 + 10, "a taking b's partitions")
        assert probe.generation(a.member_id, "inst-a") > generation
        assert [m["group_instance_id"] for m in probe.describe()["members"]] == ["inst-a"]
        a.close()
        assert own.violations == [] and not a.errors


def test_leave_group_by_instance_id_removes_a_static_member_at_once(tmp_path: Path) -> None:
    session_ms = 60_000  # far beyond the wait below: only the LeaveGroup can free b's partitions
    with EmbeddedBroker(tmp_path / "data", **BROKER_CONFIGS) as broker:
        _topic, own, a, b, probe = _static_pair(broker, "cooperative-sticky", session_ms)
        b.close()
        assert probe.leave(["inst-b", "inst-nobody"]) == [
            {"member_id": "", "group_instance_id": "inst-b", "error_code": 0},
            {"member_id": "", "group_instance_id": "inst-nobody", "error_code": 25},  # UNKNOWN_MEMBER_ID
        ]
        wait_until(lambda: a.owned == {0, 1, 2, 3}, session_ms / 2000, "a taking b's partitions")
        a.close()
        assert own.violations == [] and not a.errors


# ====================================================================== cooperative churn

PARTITIONS = 6
SESSION_MS = 6000
CYCLES = 6
ABANDON_AT = 2


class ProcessMember:
    """A member in a process of its own (tests.compat.group_member), to be killed with SIGKILL:
    how a kafka-python consumer is abandoned (in-process, its heartbeat thread would live on).
    It reports its assignment as it polls, later than callbacks would: its partitions count for
    the settling of the group but are kept out of the ownership checks."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str, log: Path) -> None:
        self.name = "proc"
        self.assigned: list[int] = []
        self._log = open(log, "wb")  # noqa: SIM115 - closed in kill()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.compat.group_member",
                client,
                bootstrap,
                topic,
                group,
                str(SESSION_MS),
                "classic",
                "cooperative-sticky",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = json.loads(line)
            if ev["ev"] == "assigned":
                self.assigned = ev["parts"]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._reader.join(10)
        self._log.close()
        self.assigned = []


def _cooperative_member(
    client: str, name: str, bootstrap: str, group: str, topic: str, own: Ownership
) -> Member:
    if client == "confluent":
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "partition.assignment.strategy": "cooperative-sticky",
        }
        return Member(name, topic, own, lambda m: ConfluentClient(m, conf))
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

    kconf: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "client_id": name,
        "session_timeout_ms": SESSION_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "partition_assignment_strategy": (CooperativeStickyAssignor,),
    }
    return Member(name, topic, own, lambda m: KafkaPythonClient(m, kconf))


class Producing:
    """Writes records round-robin over the partitions until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self._p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            for _ in range(PARTITIONS * 4):
                self._p.produce(self._topic, value=b"r%d" % i, partition=i % PARTITIONS)
                i += 1
            self._p.poll(0)
            time.sleep(0.05)
        self._p.flush(30)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_cooperative_sticky_churn_settles_and_never_double_assigns(tmp_path: Path, client: str) -> None:
    topic = f"coop-{uuid.uuid4().hex[:6]}"
    group = f"g-coop-{client}-{uuid.uuid4().hex[:6]}"
    with EmbeddedBroker(tmp_path / "data", **BROKER_CONFIGS) as broker:
        broker.create_topic(topic, PARTITIONS)
        host, port = broker.broker.advertised
        probe = GroupProbe(host, port, group)
        bootstrap = broker.bootstrap_servers
        own = Ownership()
        producing = Producing(bootstrap, topic)
        c0 = _cooperative_member(client, "c0", bootstrap, group, topic, own)
        c1 = _cooperative_member(client, "c1", bootstrap, group, topic, own)
        members = [c0, c1]
        third: Member | ProcessMember
        if client == "confluent":
            third = _cooperative_member(client, "c2", bootstrap, group, topic, own)
            members.append(third)
        else:
            third = ProcessMember(client, bootstrap, topic, group, tmp_path / "proc.log")
        for m in members:
            m.subscribe()
        abandoned = False

        def subscribed() -> set[str]:
            names = {m.name for m in members if m.subscribed}
            if isinstance(third, ProcessMember) and not abandoned:
                names.add(third.name)
            return names

        def owners() -> dict[int, str]:
            found = own.snapshot()
            if isinstance(third, ProcessMember) and not abandoned:
                for p in third.assigned:
                    found.setdefault(p, third.name)
            return found

        def settled() -> bool:
            found = owners()
            if sorted(found) != list(range(PARTITIONS)) or set(found.values()) != subscribed():
                return False
            if isinstance(third, ProcessMember) and not abandoned:
                if any(own.snapshot().get(p) not in (None, third.name) for p in third.assigned):
                    return False
            described = probe.describe()
            return described["group_state"] == "Stable" and len(described["members"]) == len(subscribed())

        def diag() -> str:
            return f"owners {owners()}, subscribed {sorted(subscribed())}, state {probe.describe()['group_state']}"

        timings: list[tuple[str, float]] = []
        try:
            timings.append(("initial", wait_until(settled, 30, "the first assignment", diag)))
            for cycle in range(CYCLES):
                m = members[cycle % 2]
                # A cooperative rebalance is two rounds, each reached through a heartbeat and the
                # client's next poll; on a loaded 2-core machine that takes seconds. The failures
                # this catches are far longer: a rebalance that waits out a member's rebalance
                # timeout (max.poll.interval.ms, 300 s) or never settles.
                bound = SESSION_MS / 1000
                if cycle == ABANDON_AT:
                    # The third member goes without a word: only its session expiry frees its
                    # partitions, so this rebalance may take up to the session timeout.
                    if isinstance(third, ProcessMember):
                        third.kill()
                    else:
                        third.abandon()
                        members.remove(third)
                    abandoned = True
                    bound += SESSION_MS / 1000
                m.unsubscribe()
                timings.append(
                    (f"{cycle}: {m.name} out", wait_until(settled, bound, "a settled group", diag))
                )
                m.subscribe()
                timings.append(
                    (f"{cycle}: {m.name} in", wait_until(settled, SESSION_MS / 1000, "a settled group", diag))
                )
        finally:
            producing.stop()
            for m in members:
                m.close()
            if isinstance(third, ProcessMember):
                third.kill()
        print(client, [(what, round(t, 2)) for what, t in timings])
        assert own.violations == [], own.violations[:5]
        assert own.consumed > 0
        for m in members:
            assert not m.errors, (m.name, m.errors)
