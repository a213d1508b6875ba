"""The topic-based remote log metadata manager against an in-process broker: the topic it creates,
read-your-writes, a refused transition writes nothing, a second instance (a new leader) sees the
same segments once ready (skipping a garbage record), events of another broker's manager reach a
reader, partition deletes, stopping a partition, close."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable

import pytest

from zurau.client.admin import LATEST, AdminClient, ConfigResource, ResourceType
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.producer import Producer
from zurau.client.types import TopicPartition
from zurau.embedded import EmbeddedBroker
from zurau.replication.tiered.topic_based_metadata_manager import TopicBasedRemoteLogMetadataManager
from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.storage.remote.remote_storage_manager import RemoteStorageError
from zurau.types import TopicIdPartition

S = RemoteLogSegmentState
TOPIC = "__remote_log_metadata"
PARTITIONS = 3


def segment(tip: TopicIdPartition, start: int, end: int, epoch: int = 0) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId.generate(tip),
        start_offset=start,
        end_offset=end,
        max_timestamp_ms=1_000 + end,
        broker_id=1,
        event_timestamp_ms=1,
        segment_size_in_bytes=100 * (end - start + 1),
        segment_leader_epochs=((epoch, start),),
        txn_index_empty=True,
    )


def moved(m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadata:
    return m.with_state(state, event_timestamp_ms=2, broker_id=1)


async def eventually(condition: Callable[[], bool], timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_remote_log_metadata_through_the_internal_topic(caplog: pytest.LogCaptureFixture) -> None:
    async with EmbeddedBroker() as broker:
        endpoint = ("127.0.0.1", broker.port)

        def manager() -> TopicBasedRemoteLogMetadataManager:
            return TopicBasedRemoteLogMetadataManager(1, lambda: endpoint, num_partitions=PARTITIONS)

        cluster = Cluster(ClientConfig.load(bootstrap_servers=broker.bootstrap_servers))
        await cluster.bootstrap()
        admin = AdminClient(cluster)

        async def end_offset(partition: int) -> int:
            found = (await admin.list_offsets({TopicPartition(TOPIC, partition): LATEST}))[
                TopicPartition(TOPIC, partition)
            ]
            assert not isinstance(found, BaseException)
            return found.offset

        topic_id = uuid.uuid4()
        tip, tip2 = TopicIdPartition(topic_id, "orders", 0), TopicIdPartition(topic_id, "orders", 1)
        first = manager()
        try:
            first.on_partitions_hosted([tip, tip2])
            await first.wait_ready([tip, tip2])

            # The topic, as Kafka's manager creates it (replication factor 3 fitted to one broker).
            md = (await admin.topic_metadata([TOPIC]))[TOPIC]
            assert len(md.partitions) == PARTITIONS and all(len(p.replicas) == 1 for p in md.partitions)
            resource = ConfigResource(ResourceType.TOPIC, TOPIC)
            configs = (await admin.describe_configs([resource], ["cleanup.policy", "retention.ms"]))[resource]
            assert not isinstance(configs, BaseException)
            assert {e.name: e.value for e in configs} == {"cleanup.policy": "delete", "retention.ms": "-1"}

            # Read-your-writes: each write is in the cache when it returns.
            a = segment(tip, 0, 9)
            await first.add_segment(a)
            assert first.list_segments(tip) == (a,) and first.segment_for(tip, 0, 5) is None
            a = moved(a, S.COPY_SEGMENT_FINISHED)
            await first.update_segment(a)
            assert first.segment_for(tip, 0, 5) == a and first.remote_size(tip) == 1000
            b = segment(tip, 10, 19, epoch=1)
            await first.add_segment(b)
            assert first.highest_offset_for_epoch(tip, 1) == 9

            # An invalid transition is refused and nothing is written.
            mp = first.metadata_partition(tip)
            before = await end_offset(mp)
            with pytest.raises(
                ValueError, match="COPY_SEGMENT_STARTED may not become DELETE_SEGMENT_FINISHED"
            ):
                await first.update_segment(dataclasses.replace(b, state=S.DELETE_SEGMENT_FINISHED))
            with pytest.raises(ValueError, match="already known"):
                await first.add_segment(b)
            assert await end_offset(mp) == before

            # A partition's remote data deleted: its segments are gone, going back is refused.
            c = segment(tip2, 0, 4)
            await first.add_segment(c)
            await first.put_partition_delete(
                tip2, RemotePartitionDeleteState.DELETE_PARTITION_STARTED, broker_id=1, event_timestamp_ms=3
            )
            await first.update_segment(moved(c, S.DELETE_SEGMENT_STARTED))
            await first.put_partition_delete(
                tip2, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, broker_id=1, event_timestamp_ms=4
            )
            assert first.list_segments(tip2) == ()
            assert first.partition_delete_state(tip2) == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED
            with pytest.raises(ValueError, match="may not go back"):
                await first.put_partition_delete(
                    tip2,
                    RemotePartitionDeleteState.DELETE_PARTITION_MARKED,
                    broker_id=1,
                    event_timestamp_ms=5,
                )

            # A record that is no event (another writer's garbage) is skipped by every reader.
            async with Producer(cluster, acks="all") as raw:
                await raw.send_and_wait(TOPIC, b"\x07garbage", None, partition=mp)

            # A new leader: a second manager on the same broker sees the same state once ready.
            second = manager()
            try:
                second.on_partitions_hosted([tip, tip2])
                assert not second.ready(tip)
                await second.wait_ready([tip, tip2])
                assert "is not a remote log metadata event" in caplog.text
                assert second.list_segments(tip) == first.list_segments(tip) == (a, b)
                assert second.segment_for(tip, 0, 5) == a and second.remote_size(tip) == 1000
                assert (
                    second.partition_delete_state(tip2)
                    == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED
                )
                assert second.list_segments(tip2) == ()

                # Its writes reach the first manager's cache too (it reads the same partition).
                b = moved(b, S.COPY_SEGMENT_FINISHED)
                await second.update_segment(b)
                assert second.segment_for(tip, 1, 15) == b
                await eventually(lambda: first.segment_for(tip, 1, 15) == b)
                assert first.remote_size(tip) == second.remote_size(tip) == 2000

                # Stopping a partition drops its cache.
                first.on_partitions_stopped([tip])
                assert not first.ready(tip) and first.list_segments(tip) == ()
            finally:
                await second.close()

            # After close nothing is written.
            await first.close()
            assert not first.ready(tip2)
            with pytest.raises(RemoteStorageError, match="closed"):
                await first.add_segment(segment(tip, 20, 29))
        finally:
            await first.close()
            await cluster.close()
