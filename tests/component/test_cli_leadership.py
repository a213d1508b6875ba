"""``zurau leader-election``, ``zurau reassign-partitions`` and the reassignment and filter parts
of ``zurau topics describe``, in-process (typer's CliRunner) against a three-node EmbeddedCluster."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.support.cli_results import failed, ok
from zurau.cli.main import app
from zurau.embedded import EmbeddedCluster
from zurau.metadata.image import PartitionRegistration

pytestmark = pytest.mark.timeout(180)

runner = CliRunner()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster(
        3,
        data_dir=tmp_path_factory.mktemp("cli-leadership"),
        **{
            "replica.lag.time.max.ms": "1500",
            "replica.fetch.wait.max.ms": "200",
            "broker.heartbeat.interval.ms": "500",
            "auto.leader.rebalance.enable": "false",
        },
    )
    with c:
        yield c


def cli(c: EmbeddedCluster, *args: str) -> Result:
    return runner.invoke(app, [*args, "--bootstrap-server", c.bootstrap_servers])


def new_topic(c: EmbeddedCluster, rf: int) -> str:
    name = f"lead-{uuid.uuid4().hex[:8]}"
    ok(cli(c, "topics", "create", name, "--partitions", "1", "--replication-factor", str(rf)))
    wait(c, name, lambda p: len(p.isr) == rf)
    return name


def part(c: EmbeddedCluster, topic: str, node: int | None = None) -> PartitionRegistration:
    nodes = [node] if node is not None else [b.node_id for b in c.brokers if b is not None]
    t = c.node(nodes[0]).image.get(topic)
    assert t is not None
    return t.partitions[0]


def wait(c: EmbeddedCluster, topic: str, check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    running = [b.node_id for b in c.brokers if b is not None]
    while True:
        try:
            if all(check(part(c, topic, n)) for n in running):
                return
        except AssertionError:
            pass
        assert time.monotonic() < deadline, f"{topic}: condition not reached, now {part(c, topic)}"
        time.sleep(0.05)


def write(tmp_path: Path, doc: Any) -> str:
    path = tmp_path / f"{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_preferred_leader_election(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    t = new_topic(cluster, 3)
    a, b, c3 = part(cluster, t).replicas
    # Reorder the replicas: b becomes the preferred replica while a still leads.
    plan = write(tmp_path, {"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": [b, a, c3]}]})
    ok(cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", plan))
    wait(cluster, t, lambda p: p.replicas == (b, a, c3) and p.leader == a)

    out = ok(cli(cluster, "leader-election", "--election-type", "PREFERRED", "--topic", t, "--partition", "0"))
    assert out == f"Successfully completed leader election (PREFERRED) for partitions {t}-0\n"
    wait(cluster, t, lambda p: p.leader == b)
    out = ok(cli(cluster, "leader-election", "--election-type", "preferred", "--path-to-json-file",
                 write(tmp_path, {"partitions": [{"topic": t, "partition": 0}]})))
    assert out == f"Valid replica already elected for partitions {t}-0\n"
    assert f"{t}-0" not in ok(cli(cluster, "leader-election", "--election-type", "PREFERRED", "--all-topic-partitions"))

    res = cli(cluster, "leader-election", "--election-type", "UNCLEAN", "--topic", t, "--partition", "0")
    assert res.stdout == f"Valid replica already elected for partitions {t}-0\n" and res.exit_code == 0
    res = cli(cluster, "leader-election", "--election-type", "PREFERRED", "--topic", t, "--partition", "7")
    assert f"Error completing leader election (PREFERRED) for partition: {t}-7:" in res.stdout
    assert "UNKNOWN_TOPIC_OR_PARTITION" in res.stdout
    failed(res, "1 replica(s) could not be elected")
    assert cli(cluster, "leader-election", "--election-type", "PREFERRED").exit_code == 2
    assert cli(cluster, "leader-election", "--election-type", "BEST", "--all-topic-partitions").exit_code == 2
    assert cli(cluster, "leader-election", "--election-type", "PREFERRED", "--topic", t).exit_code == 2


def test_reassign_generate_execute_verify(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    t = new_topic(cluster, 1)
    moving = write(tmp_path, {"topics": [{"topic": t}], "version": 1})
    out = ok(cli(cluster, "reassign-partitions", "--generate", "--topics-to-move-json-file", moving, "--broker-list", "1,2,3"))
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    current = json.loads(lines[1])
    assert current["partitions"] == [{"topic": t, "partition": 0, "replicas": list(part(cluster, t).replicas), "log_dirs": ["any"]}]
    proposed = json.loads(lines[4])["partitions"]
    assert len(proposed) == 1 and len(proposed[0]["replicas"]) == 1 and proposed[0]["replicas"][0] in (1, 2, 3)

    (first,) = part(cluster, t).replicas
    target = [first] + [n for n in (1, 2, 3) if n != first]
    plan = write(tmp_path, {"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": target}]})
    out = ok(cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", plan))
    assert out.splitlines()[0] == "Current partition replica assignment"
    assert json.loads(out.splitlines()[2])["partitions"][0]["replicas"] == [first]
    assert out.splitlines()[-1] == f"Successfully started partition reassignment for {t}-0"
    wait(cluster, t, lambda p: p.replicas == tuple(target) and not p.reassigning)
    out = ok(cli(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", plan))
    assert out.startswith(
        f"Status of partition reassignment:\nReassignment of partition {t}-0 is completed.\n"
        f"Clearing broker-level throttles on brokers 1,2,3\nClearing topic-level throttles on topic {t}\n"
    )
    text = ok(cli(cluster, "topics", "describe", t))
    assert re.search(rf"Partition: 0\tLeader: {first}\tReplicas: {','.join(map(str, target))}\tIsr: [123],[123],[123]\t", text)
    assert ok(cli(cluster, "topics", "describe", t, "--under-replicated-partitions")) == ""

    bad = write(tmp_path, {"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": [1, 9]}]})
    failed(cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", bad), f"{t}-0", "INVALID_REPLICA_ASSIGNMENT")
    failed(cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file",
               write(tmp_path, {"version": 1, "partitions": [{"topic": t, "partition": 4, "replicas": [1]}]})),
           f"Topic {t} has no partition 4")
    assert cli(cluster, "reassign-partitions", "--list", "--execute").exit_code == 2
    assert cli(cluster, "reassign-partitions", "--verify").exit_code == 2


def test_list_describe_and_cancel_a_stuck_reassignment(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    t = new_topic(cluster, 1)
    (first,) = part(cluster, t).replicas
    down = next(n for n in (1, 2, 3) if n != first)
    cluster.call(cluster.stop_node, down)
    try:
        plan = write(tmp_path, {"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": [first, down]}]})
        ok(cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", plan))
        wait(cluster, t, lambda p: p.reassigning)
        listed = ok(cli(cluster, "reassign-partitions", "--list"))
        assert f"Current partition reassignments:\n{t}-0: replicas: {first},{down}. adding: {down}. removing: .\n" in listed
        text = ok(cli(cluster, "topics", "describe", t))
        assert f"Replicas: {first},{down}\tIsr: {first}\tAdding Replicas: {down}\tRemoving Replicas: \t" in text
        assert f"Offline: {down}" in text
        under = ok(cli(cluster, "topics", "describe", t, "--under-replicated-partitions"))
        assert under.startswith(f"\tTopic: {t}\tPartition: 0\t") and len(under.splitlines()) == 1
        doc = json.loads(ok(cli(cluster, "topics", "describe", t, "--json")))
        assert doc[0]["partitions"][0]["reassignment"] == {"adding_replicas": [down], "removing_replicas": []}
        out = ok(cli(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", plan))
        assert f"Reassignment of partition {t}-0 is still in progress." in out

        out = ok(cli(cluster, "reassign-partitions", "--cancel", "--reassignment-json-file", plan))
        assert out == f"Successfully cancelled partition reassignment for: {t}-0\n"
        wait(cluster, t, lambda p: p.replicas == (first,) and not p.reassigning)
        assert ok(cli(cluster, "reassign-partitions", "--list")) == "No partition reassignments found.\n"
        out = ok(cli(cluster, "reassign-partitions", "--cancel", "--reassignment-json-file", plan))
        assert out == "None of the specified partition reassignments are active.\n"
        out = ok(cli(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", plan))
        assert f"There is no active reassignment of partition {t}-0, but replica set is {first} rather than {first},{down}." in out
    finally:
        cluster.call(cluster.start_node, down)


LEADER_THROTTLED = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"


def throttles(c: EmbeddedCluster, topic: str) -> tuple[str | None, str | None]:
    running = next(b for b in c.brokers if b is not None)  # a test may have stopped node 1
    t = running.image.get(topic)
    assert t is not None
    return t.configs.get(LEADER_THROTTLED), t.configs.get(FOLLOWER_THROTTLED)


def test_a_throttled_reassignment_sets_the_throttled_replicas_and_verify_clears_them(
    cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    t = new_topic(cluster, 1)
    (first,) = part(cluster, t).replicas
    other = next(n for n in (1, 2, 3) if n != first)
    plan = write(tmp_path, {"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": [other, first]}]})
    out = ok(cli(cluster, "reassign-partitions", "--execute", "--throttle", "50000000", "--reassignment-json-file", plan))
    lines = out.splitlines()
    assert lines[0].startswith("Warning: You must run --verify periodically")
    assert "The inter-broker throttle limit was set to 50000000 B/s" in lines
    assert lines[-1] == f"Successfully started partition reassignment for {t}-0"
    # Leaders: the replicas before the move; followers: the replicas it gains.
    assert throttles(cluster, t) == (f"0:{first}", f"0:{other}")
    wait(cluster, t, lambda p: p.replicas == (other, first) and not p.reassigning)
    out = ok(cli(cluster, "reassign-partitions", "--verify", "--preserve-throttles", "--reassignment-json-file", plan))
    assert "Clearing" not in out and throttles(cluster, t) == (f"0:{first}", f"0:{other}")
    out = ok(cli(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", plan))
    assert f"Reassignment of partition {t}-0 is completed." in out
    assert f"Clearing topic-level throttles on topic {t}" in out
    wait(cluster, t, lambda _p: throttles(cluster, t) == (None, None))
    assert cli(cluster, "reassign-partitions", "--verify", "--throttle", "5", "--reassignment-json-file", plan).exit_code == 2


def test_additional_starts_a_reassignment_while_another_is_in_progress(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    name = f"lead-{uuid.uuid4().hex[:8]}"
    ok(cli(cluster, "topics", "create", name, "--partitions", "2", "--replication-factor", "1"))
    wait(cluster, name, lambda p: len(p.isr) == 1)
    t = cluster.node(1).image.get(name)
    assert t is not None
    first0 = t.partitions[0].replicas[0]
    first1 = t.partitions[1].replicas[0]
    down = next(n for n in (1, 2, 3) if n not in (first0, first1))
    cluster.call(cluster.stop_node, down)
    try:
        stuck = write(tmp_path, {"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": [first0, down]}]})
        ok(cli(cluster, "reassign-partitions", "--execute", "--throttle", "1000000", "--reassignment-json-file", stuck))
        wait(cluster, name, lambda p: p.reassigning)
        target1 = next(n for n in (1, 2, 3) if n not in (first1, down))
        more = write(tmp_path, {"version": 1, "partitions": [{"topic": name, "partition": 1, "replicas": [target1]}]})
        failed(cli(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", more),
               "Cannot execute because there is an existing partition assignment. Use --additional")
        out = ok(cli(cluster, "reassign-partitions", "--execute", "--additional", "--throttle", "1000000",
                     "--reassignment-json-file", more))
        assert out.splitlines()[-1] == f"Successfully started partition reassignment for {name}-1"
        # The throttle of the reassignment in progress is kept next to the new one's.
        assert throttles(cluster, name) == (f"0:{first0},1:{first1}", f"0:{down},1:{target1}")
        deadline = time.monotonic() + 30
        while cluster.node(first0).image.get(name).partitions[1].replicas != (target1,):  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        out = ok(cli(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", stuck))
        assert "still in progress" in out and "Clearing" not in out
        ok(cli(cluster, "reassign-partitions", "--cancel", "--reassignment-json-file", stuck))
    finally:
        cluster.call(cluster.start_node, down)


def test_cluster_unregister(cluster: EmbeddedCluster) -> None:
    failed(cli(cluster, "cluster", "unregister", "--id", "42"), "BROKER_ID_NOT_REGISTERED")
    down = 3
    cluster.call(cluster.stop_node, down)
    try:
        assert ok(cli(cluster, "cluster", "unregister", "--id", str(down))) == f"Broker {down} is no longer registered.\n"
        deadline = time.monotonic() + 10
        while down in cluster.node(1).image.brokers:
            assert time.monotonic() < deadline, "the registration is still in the metadata"
            time.sleep(0.05)
        failed(cli(cluster, "cluster", "unregister", "--id", str(down)), "BROKER_ID_NOT_REGISTERED")
    finally:
        cluster.call(cluster.start_node, down)
    deadline = time.monotonic() + 30
    while down not in cluster.node(1).image.brokers:  # the restarted broker registers again
        assert time.monotonic() < deadline
        time.sleep(0.05)
