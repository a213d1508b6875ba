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
