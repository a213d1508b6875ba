"""Feature levels on a three-node EmbeddedCluster: ApiVersions reports them on every node (client
and controller listeners), UpdateFeatures sent to any node changes them everywhere (forwarded to
the active controller), Kafka's error codes, and ``zurau features`` (CLI) end to end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.support.cli_results import failed, ok
from zurau.cli.main import app
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedCluster
from zurau.protocol.api_keys import ApiKey

runner = CliRunner()
INVALID_UPDATE_VERSION = 95
DEFAULTS = {
    "metadata.version": 29,
    "transaction.version": 2,
    "group.version": 1,
    "eligible.leader.replicas.version": 1,
    "share.version": 1,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster(3, data_dir=tmp_path_factory.mktemp("features"))
    with c:
        yield c


def _address(c: EmbeddedCluster, node: int, listener: str = "PLAINTEXT") -> tuple[str, int]:
    return c.node(node).server.bound[listener]  # type: ignore[union-attr]


async def _request(
    address: tuple[str, int], api_key: int, body: dict[str, Any], version: int
) -> dict[str, Any]:
    conn = await BrokerConnection(*address).connect()
    try:
        return await conn.request(api_key, body, version=version)
    finally:
        await conn.close()


def api_versions(
    c: EmbeddedCluster, node: int, version: int = 4, listener: str = "PLAINTEXT"
) -> dict[str, Any]:
    return c.call(_request, _address(c, node, listener), ApiKey.API_VERSIONS, {}, version)


def finalized(c: EmbeddedCluster, node: int, listener: str = "PLAINTEXT") -> dict[str, int]:
    resp = api_versions(c, node, listener=listener)
    return {f["name"]: f["max_version_level"] for f in resp["finalized_features"]}


def update(
    c: EmbeddedCluster, node: int, updates: list[dict[str, Any]], version: int = 2, **extra: Any
) -> dict[str, Any]:
    body = {"timeout_ms": 10000, "feature_updates": updates, **extra}
    return c.call(_request, _address(c, node), ApiKey.UPDATE_FEATURES, body, version)


def wait_everywhere(c: EmbeddedCluster, expected: dict[str, int], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        seen = {n: finalized(c, n) for n in (1, 2, 3)}
        if all(s == expected for s in seen.values()):
            return
        assert time.monotonic() < deadline, seen
        time.sleep(0.1)


def cli(c: EmbeddedCluster, *args: str) -> Result:
    return runner.invoke(app, ["features", *args, "--bootstrap-server", c.bootstrap_servers])


def test_every_node_reports_the_bootstrapped_levels(cluster: EmbeddedCluster) -> None:
    wait_everywhere(cluster, DEFAULTS)
    v3 = api_versions(cluster, 2, version=3)
    # Clients before v4 cannot read a minimum of 0: only metadata.version is listed to them.
    assert v3["supported_features"] == [{"name": "metadata.version", "min_version": 7, "max_version": 29}]
    assert {f["name"]: f["max_version_level"] for f in v3["finalized_features"]} == DEFAULTS
    assert v3["finalized_features_epoch"] >= 0
    v4 = api_versions(cluster, 3)
    supported = {f["name"]: (f["min_version"], f["max_version"]) for f in v4["supported_features"]}
    assert supported["group.version"] == (0, 1) and supported["kraft.version"] == (0, 1)
    assert supported["transaction.version"] == (0, 2)  # transactions v2
    assert finalized(cluster, 1, listener="CONTROLLER") == DEFAULTS
    # Every broker registered its range of every feature.
    reg = cluster.node(1).image.brokers[2]
    assert {f.name for f in reg.features} >= {"metadata.version", "group.version", "share.version"}


def test_downgrade_and_upgrade_reach_every_node(cluster: EmbeddedCluster) -> None:
    wait_everywhere(cluster, DEFAULTS)
    # v1 through a node that may not be the active controller: forwarded; one result per feature.
    down = update(
        cluster, 2, [{"feature": "group.version", "max_version_level": 0, "upgrade_type": 2}], version=1
    )
    assert down["error_code"] == 0 and down["results"] == [
        {"feature": "group.version", "error_code": 0, "error_message": None}
    ]
    without = {k: v for k, v in DEFAULTS.items() if k != "group.version"}
    wait_everywhere(cluster, without)
    # validate_only changes nothing.
    dry = update(cluster, 3, [{"feature": "group.version", "max_version_level": 1}], validate_only=True)
    assert dry["error_code"] == 0
    assert finalized(cluster, 1) == without
    # v0 says a downgrade with allow_downgrade; here it is an upgrade.
    up = update(
        cluster,
        3,
        [{"feature": "group.version", "max_version_level": 1, "allow_downgrade": False}],
        version=0,
    )
    assert up["error_code"] == 0 and up["results"][0]["error_code"] == 0
    wait_everywhere(cluster, DEFAULTS)


def test_refusals_carry_kafkas_codes(cluster: EmbeddedCluster) -> None:
    wait_everywhere(cluster, DEFAULTS)
    r = update(cluster, 1, [{"feature": "share.version", "max_version_level": 2}])
    assert r["error_code"] == INVALID_UPDATE_VERSION and "only supports versions 0-1" in r["error_message"]
    r = update(cluster, 2, [{"feature": "group.version", "max_version_level": 0}])
    assert (
        r["error_code"] == INVALID_UPDATE_VERSION and "without setting the upgrade type" in r["error_message"]
    )
    r = update(cluster, 3, [{"feature": "metadata.version", "max_version_level": 22, "upgrade_type": 2}])
    assert (
        r["error_code"] == INVALID_UPDATE_VERSION
        and "might delete metadata information" in r["error_message"]
    )
    r = update(cluster, 3, [{"feature": "kraft.version", "max_version_level": 1}])
    assert r["error_code"] == INVALID_UPDATE_VERSION
    r = update(cluster, 1, [{"feature": "no.such.version", "max_version_level": 1}], version=1)
    assert (
        r["error_code"] == INVALID_UPDATE_VERSION and r["results"][0]["error_code"] == INVALID_UPDATE_VERSION
    )
    assert finalized(cluster, 2) == DEFAULTS


def test_the_features_command(cluster: EmbeddedCluster) -> None:
    wait_everywhere(cluster, DEFAULTS)
    out = ok(cli(cluster, "describe"))
    lines = out.strip().splitlines()
    assert [ln.split("\t")[0] for ln in lines] == [
        "Feature: eligible.leader.replicas.version",
        "Feature: group.version",
        "Feature: kraft.version",
        "Feature: metadata.version",
        "Feature: share.version",
        "Feature: transaction.version",
    ]
    mv = next(ln for ln in lines if ln.startswith("Feature: metadata.version"))
    assert (
        "SupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.2-IV1\tFinalizedVersionLevel: 4.2-IV1\tEpoch: "
        in mv
    )
    assert ok(cli(cluster, "downgrade", "--feature", "share.version=0", "--dry-run")) == (
        "share.version can be downgraded to 0.\n"
    )
    assert finalized(cluster, 1) == DEFAULTS
    assert ok(cli(cluster, "disable", "--feature", "share.version")) == "share.version was disabled.\n"
    wait_everywhere(cluster, {k: v for k, v in DEFAULTS.items() if k != "share.version"})
    # metadata.version 4.1-IV1 (27) is a safe downgrade: no metadata change lies between.
    assert (
        ok(cli(cluster, "downgrade", "--metadata", "4.1")) == "metadata.version was downgraded to 4.1-IV1.\n"
    )
    failed(cli(cluster, "upgrade", "--feature", "share.version=3"), "Could not upgrade share.version to 3.")
    out = ok(cli(cluster, "upgrade", "--release-version", "4.2"))
    assert "metadata.version was upgraded to 4.2-IV1." in out and "share.version was upgraded to 1." in out
    wait_everywhere(cluster, DEFAULTS)
