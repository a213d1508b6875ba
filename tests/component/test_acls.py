"""ACLs on a 3-node KRaft cluster, managed with ``zurau acls``.

The cluster's listeners are PLAINTEXT, so every connection's principal is ``User:ANONYMOUS``,
made a super user (as Kafka needs for a plaintext inter-broker listener). ACLs added through a
node that is not the active controller are forwarded to it, written to the metadata log and
reach every node's authorizer; ``--list`` on another node shows them in kafka-acls.sh's format;
the ``--producer`` / ``--consumer`` conveniences expand as kafka-acls.sh does; ``--remove``
deletes them everywhere; bad input is a one-line error.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from zurau.cli.main import app
from zurau.embedded import EmbeddedCluster
from zurau.protocol.acl import AclOperation, ResourceType

runner = CliRunner()
CONFIGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(3, data_dir=tmp_path_factory.mktemp("acl-cluster"), **CONFIGS) as c:
        deadline = time.monotonic() + 30
        while c.controller_id < 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.controller_id > 0
        yield c


def _cli(*args: str) -> Result:
    return runner.invoke(app, ["acls", *args])


def _follower(c: EmbeddedCluster) -> int:
    return next(i for i in (1, 2, 3) if i != c.controller_id)


def _decisions(c: EmbeddedCluster, op: AclOperation, rtype: ResourceType, name: str) -> list[bool]:
    out = []
    for i in (1, 2, 3):
        authz = c.node(i).services.authorizer
        assert authz is not None
        out.append(authz.authorize("User:alice", "127.0.0.1", op, rtype, name, log_denied=False))
    return out


def _eventually(check: object, timeout: float = 15) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_acls_are_forwarded_replicated_listed_and_removed(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    via = cluster.node(_follower(cluster)).bootstrap_servers
    added = _cli("--add", "--allow-principal", "User:alice", "--producer", "--topic", "orders",
                 "--transactional-id", "tx-", "--resource-pattern-type", "PREFIXED", "--bootstrap-server", via)
    assert added.exit_code == 0, added.output
    _eventually(lambda: _decisions(cluster, AclOperation.WRITE, ResourceType.TOPIC, "orders-eu") == [True] * 3)
    assert _decisions(cluster, AclOperation.READ, ResourceType.TOPIC, "orders-eu") == [False] * 3
    assert _decisions(cluster, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, "tx-1") == [True] * 3

    consumer = _cli("--add", "--allow-principal", "User:alice", "--consumer", "--topic", "orders", "--group", "billing",
                    "--bootstrap-server", via)
    assert consumer.exit_code == 0, consumer.output
    _eventually(lambda: _decisions(cluster, AclOperation.READ, ResourceType.GROUP, "billing") == [True] * 3)

    other = next(i for i in (1, 2, 3) if cluster.node(i).bootstrap_servers != via)
    listed = _cli("--list", "--topic", "orders", "--resource-pattern-type", "MATCH",
                  "--bootstrap-server", cluster.node(other).bootstrap_servers)
    assert listed.exit_code == 0, listed.output
    assert "ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED)" in listed.output
    assert "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)" in listed.output
    for op in ("WRITE", "DESCRIBE", "CREATE", "READ"):
        assert f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" in listed.output

    removed = _cli("--remove", "--topic", "orders", "--resource-pattern-type", "PREFIXED", "--bootstrap-server", via)
    assert removed.exit_code == 0, removed.output
    assert "Removed 3 ACL binding(s)" in removed.output
    _eventually(lambda: _decisions(cluster, AclOperation.WRITE, ResourceType.TOPIC, "orders-eu") == [False] * 3)
    assert _decisions(cluster, AclOperation.READ, ResourceType.TOPIC, "orders") == [True] * 3  # the LITERAL ones stay


def test_bad_input_is_one_line(cluster: EmbeddedCluster) -> None:
    via = cluster.node(1).bootstrap_servers
    for args, message in [
        (["--add", "--topic", "t"], "--add needs --allow-principal or --deny-principal"),
        (["--add", "--list", "--topic", "t"], "exactly one of --add, --remove, --list"),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "must be Type:name"),
        (["--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"], "unknown operation 'Fly'"),
        (["--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"], "--consumer needs --topic and --group"),
    ]:
        result = _cli(*args, "--bootstrap-server", via)
        assert result.exit_code == 1 and message in result.output, (args, result.output)
