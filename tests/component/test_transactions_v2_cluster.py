"""Transactions v2 when the transaction coordinator is another broker (three-node EmbeddedCluster,
real sockets): the partition leader adds the partition with AddPartitionsToTxn v5
(``verify_only=false``) on a producer's first Produce v12 batch, the coordinator's markers reach
it with WriteTxnMarkers v2 at the bumped epoch, and the old epoch is refused there afterwards."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.component.test_txn_verification_cluster import CONFIGS, TOPIC, _produce, remote_leader
from zurau.embedded import EmbeddedCluster
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import FeatureLevelRecord
from zurau.protocol import errors as E
from zurau.protocol.api_keys import ApiKey

pytestmark = pytest.mark.timeout(120)


async def _finalize_transaction_version(c: EmbeddedCluster, level: int) -> None:
    """Commit ``transaction.version=level`` through the active controller; wait until every node has it."""

    def op(image: MetadataImage) -> ControllerResult[None]:
        return ControllerResult([FeatureLevelRecord("transaction.version", level)], None)

    kraft = c.node(c.controller_id).kraft
    assert kraft is not None
    await kraft.channel._run(op)
    deadline = time.monotonic() + 30
    while any(c.node(n).image.features.get("transaction.version") != level for n in (1, 2, 3)):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_remote_leader_adds_the_partition_and_gets_the_bumped_marker(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **dict[str, Any](CONFIGS)) as c:
        await _finalize_transaction_version(c, 2)
        tid = "tv2-remote"
        r = await remote_leader(c, tid)
        coord, leader, partition, pid, epoch = r.coord, r.leader, r.partition, r.pid, r.epoch
        log = c.node(r.leader_id).replica_manager.partition(TOPIC, partition).log

        # No AddPartitionsToTxn: the leader has the coordinator add the partition.
        assert await _produce(leader, tid, pid, epoch, 0, partition, 12) == 0
        assert await _produce(leader, tid, pid, epoch, 1, partition, 12) == 0
        end = await coord.request(
            ApiKey.END_TXN,
            {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True},
            version=5,
        )
        assert (end["error_code"], end["producer_id"], end["producer_epoch"]) == (0, pid, epoch + 1)
        deadline = time.monotonic() + 30
        while log.last_stable_offset < 3:  # two records and the COMMIT marker (epoch + 1)
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        entry = log.producer_entry(pid)
        assert entry is not None and entry.producer_epoch == epoch + 1
        assert await _produce(leader, tid, pid, epoch, 2, partition, 12) == E.InvalidProducerEpochError.code
        assert await _produce(leader, tid, pid, epoch + 1, 0, partition, 12) == 0  # the next transaction
        await r.close()
