"""``zurau storage random-uuid|format`` (kafka-storage.sh) and the broker's start-up checks of
formatted directories."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zurau.app import Broker
from zurau.cli.main import app
from zurau.config import BrokerConfig
from zurau.metadata.metadata_log import MetaProperties, valid_cluster_id
from zurau.protocol.errors import KafkaStorageError

runner = CliRunner()


def _props(tmp_path: Path, node_id: int = 2, voters: int = 3) -> Path:
    ids = ",".join(f"{i}@127.0.0.1:{19090 + i}" for i in range(1, voters + 1))
    path = tmp_path / "server.properties"
    path.write_text(
        f"node.id={node_id}\nprocess.roles=broker,controller\ncontroller.quorum.voters={ids}\n"
        f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{19090 + node_id}\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"log.dirs={tmp_path / 'a'},{tmp_path / 'b'}\nmetadata.log.dir={tmp_path / 'meta'}\n"
    )
    return path


def test_random_uuid_prints_only_a_valid_cluster_id() -> None:
    out = runner.invoke(app, ["storage", "random-uuid"])
    assert out.exit_code == 0 and valid_cluster_id(out.stdout.strip()) and len(out.stdout.split()) == 1


def test_format_writes_meta_properties_everywhere_and_refuses_twice(tmp_path: Path) -> None:
    cid = runner.invoke(app, ["storage", "random-uuid"]).stdout.strip()
    props = _props(tmp_path)
    out = runner.invoke(app, ["storage", "format", "--cluster-id", cid, "--config", str(props)])
    assert out.exit_code == 0, out.output
    for d in ("a", "b", "meta"):
        assert MetaProperties.read(tmp_path / d / "meta.properties") == MetaProperties(cid, 2)
    again = runner.invoke(app, ["storage", "format", "--cluster-id", cid, "--config", str(props)])
    assert again.exit_code == 1 and "already formatted" in again.output
    assert runner.invoke(app, ["storage", "format", "-t", cid, "-c", str(props), "--ignore-formatted"]).exit_code == 0
    other = runner.invoke(app, ["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", str(props), "-g"])
    assert other.exit_code == 1 and "for cluster" in other.output


def test_format_refuses_bad_ids_and_dynamic_flags(tmp_path: Path) -> None:
    props = _props(tmp_path)
    bad = runner.invoke(app, ["storage", "format", "-t", "not-a-uuid", "-c", str(props)])
    assert bad.exit_code == 1 and "valid UUID" in bad.output
    dyn = runner.invoke(app, ["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", str(props), "--standalone"])
    assert dyn.exit_code == 1 and "dynamic quorums" in dyn.output
    assert not (tmp_path / "a" / "meta.properties").exists()


def test_a_multi_node_config_refuses_unformatted_dirs_and_never_leads_alone(tmp_path: Path) -> None:
    from zurau.config import load_properties

    cfg = BrokerConfig.from_props(dict(load_properties(_props(tmp_path))))

    async def start() -> None:
        await Broker(cfg).start()

    with pytest.raises(KafkaStorageError, match="must be formatted first"):
        asyncio.run(start())
    cid = runner.invoke(app, ["storage", "random-uuid"]).stdout.strip()
    assert runner.invoke(app, ["storage", "format", "-t", cid, "-c", str(_props(tmp_path))]).exit_code == 0

    async def waits_for_the_quorum() -> None:
        broker = Broker(cfg)
        task = asyncio.create_task(broker.start())
        await asyncio.sleep(2.5)  # more than an election timeout with its jitter
        # Alone, one of three voters never elects itself: it waits for a majority.
        assert not task.done()
        assert broker.kraft is not None and broker.kraft.raft.leader_id is None
        assert not broker.kraft.channel.active
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(waits_for_the_quorum())


# ---------------------------------------------------------------------- --add-scram (KIP-900)

SCRAM_ARGS = [
    "--add-scram", "SCRAM-SHA-512=[name=broker,password=broker-secret]",
    "-S", "SCRAM-SHA-256=[name=alice,iterations=8192,password=alice-secret]",
]


def test_add_scram_writes_the_bootstrap_metadata_of_a_controller(tmp_path: Path) -> None:
    from zurau.metadata.bootstrap_metadata import read_bootstrap_metadata
    from zurau.metadata.records import UserScramCredentialRecord

    cid = runner.invoke(app, ["storage", "random-uuid"]).stdout.strip()
    out = runner.invoke(app, ["storage", "format", "-t", cid, "-c", str(_props(tmp_path)), *SCRAM_ARGS])
    assert out.exit_code == 0, out.output
    assert "2 SCRAM credential(s)" in out.output
    records = read_bootstrap_metadata(tmp_path / "meta")
    assert [(r.name, r.mechanism, r.iterations) for r in records if isinstance(r, UserScramCredentialRecord)] == [
        ("broker", 2, 4096),
        ("alice", 1, 8192),
    ]
    assert len(records) == 2
    # Only the metadata directory gets it; the data directories do not.
    assert not (tmp_path / "a" / "bootstrap.checkpoint").exists()


def test_add_scram_refuses_a_bad_argument_before_touching_any_directory(tmp_path: Path) -> None:
    props = str(_props(tmp_path))
    bad = runner.invoke(
        app, ["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", props, "-S", "SCRAM-SHA-1=[name=a,password=b]"]
    )
    assert bad.exit_code == 1 and "The add-scram mechanism SCRAM-SHA-1 is not supported" in bad.output
    few = runner.invoke(
        app,
        ["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", props, "-S", "SCRAM-SHA-256=[name=a,password=b,iterations=100]"],
    )
    assert few.exit_code == 1 and "'iterations' value must be >= 4096" in few.output
    assert not (tmp_path / "meta" / "meta.properties").exists() and not (tmp_path / "a").exists()


def test_add_scram_on_a_broker_only_node_is_checked_but_not_written(tmp_path: Path) -> None:
    path = _props(tmp_path, node_id=4)
    path.write_text(
        path.read_text()
        .replace("process.roles=broker,controller", "process.roles=broker")
        .replace("CONTROLLER://127.0.0.1:19094", "")
        .replace("listeners=PLAINTEXT://127.0.0.1:0,", "listeners=PLAINTEXT://127.0.0.1:0")
    )
    out = runner.invoke(app, ["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", str(path), *SCRAM_ARGS])
    assert out.exit_code == 0, out.output
    assert "no controller role" in out.output
    assert (tmp_path / "meta" / "meta.properties").exists()
    assert not (tmp_path / "meta" / "bootstrap.checkpoint").exists()
    bad = runner.invoke(app, ["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", str(path), "-g", "-S", "x"])
    assert bad.exit_code == 1 and "Failed to find equals sign" in bad.output


def test_a_single_node_starts_with_its_bootstrap_credentials_once(tmp_path: Path) -> None:
    """A node that is its own cluster appends the bootstrap records to its new metadata log; a
    restart finds them in the log and does not write them again."""
    from zurau.config import load_properties
    from zurau.protocol.sasl import ScramMechanism

    path = tmp_path / "server.properties"
    path.write_text(
        "node.id=1\nprocess.roles=broker,controller\ncontroller.quorum.voters=1@127.0.0.1:19191\n"
        "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    cid = runner.invoke(app, ["storage", "random-uuid"]).stdout.strip()
    assert runner.invoke(app, ["storage", "format", "-t", cid, "-c", str(path), *SCRAM_ARGS]).exit_code == 0
    cfg = BrokerConfig.from_props(dict(load_properties(path)))

    async def run() -> tuple[set[tuple[str, ScramMechanism]], int]:
        broker = Broker(cfg)
        await broker.start()
        try:
            assert not broker.clustered
            image = broker.controller.image
            return set(image.scram_credentials), image.offset
        finally:
            await broker.stop()

    first, offset = asyncio.run(run())
    assert first == {("broker", ScramMechanism.SCRAM_SHA_512), ("alice", ScramMechanism.SCRAM_SHA_256)}
    again, offset_again = asyncio.run(run())
    assert again == first and offset_again == offset


def test_a_standalone_dynamic_controller_bootstraps_its_log_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """KRaft: the active controller of an empty log (here over the dynamic quorum's 0-0 voters
    checkpoint) writes the bootstrap credentials as the log's first batch; restarted, it finds
    them in the log and writes nothing again."""
    import logging

    from zurau.config import load_properties
    from zurau.embedded import free_ports
    from zurau.protocol.sasl import ScramMechanism

    (port,) = free_ports(1)
    path = tmp_path / "server.properties"
    path.write_text(
        f"node.id=1\nprocess.roles=broker,controller\ncontroller.quorum.bootstrap.servers=127.0.0.1:{port}\n"
        f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    cid = runner.invoke(app, ["storage", "random-uuid"]).stdout.strip()
    out = runner.invoke(app, ["storage", "format", "-t", cid, "-c", str(path), "--standalone", *SCRAM_ARGS])
    assert out.exit_code == 0, out.output
    cfg = BrokerConfig.from_props(dict(load_properties(path)))

    async def run() -> set[tuple[str, ScramMechanism]]:
        broker = Broker(cfg)
        await broker.start()
        try:
            assert broker.kraft is not None
            channel = broker.kraft.channel
            for _ in range(200):
                if channel.image.scram_credentials:
                    break
                await asyncio.sleep(0.05)
            return set(channel.image.scram_credentials)
        finally:
            await broker.stop()

    with caplog.at_level(logging.INFO, logger="zurau.controller"):
        first = asyncio.run(run())
        again = asyncio.run(run())
    assert first == again == {("broker", ScramMechanism.SCRAM_SHA_512), ("alice", ScramMechanism.SCRAM_SHA_256)}
    assert sum("found the metadata log empty" in r.getMessage() for r in caplog.records) == 1
