"""DescribeProducers: the producers a partition leader remembers (its producer state).

Per producer: id, epoch, last sequence, last timestamp, coordinator epoch and the first offset of
its open transaction in the partition (-1 if none). A producer with an open transaction that its
coordinator does not list is a *hanging* transaction (see ``zurau transactions abort``).
Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, allowed_names
from zurau.broker.handlers._common import error_of
from zurau.broker.handlers._txn import known_partition
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersResponseTopicsPartitions,
    DescribeProducersResponseTopicsPartitionsActiveProducers,
)

API_KEY = ApiKey.DESCRIBE_PRODUCERS


def _partition(ctx: RequestContext, topic: str, index: int) -> DescribeProducersResponseTopicsPartitions:
    try:
        if not known_partition(ctx, (topic, index)):
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{index}")
        producers: list[DescribeProducersResponseTopicsPartitionsActiveProducers] = [
            {
                "producer_id": e.producer_id,
                "producer_epoch": e.producer_epoch,
                "last_sequence": e.last_seq,
                "last_timestamp": e.last_timestamp,
                "coordinator_epoch": e.coordinator_epoch,
                "current_txn_start_offset": e.current_txn_first_offset,
            }
            for e in ctx.replica_manager.active_producers(topic, index)
        ]
    except Exception as e:
        code, msg = error_of(e)
        return {"partition_index": index, "error_code": code, "error_message": msg, "active_producers": []}
    return {"partition_index": index, "error_code": 0, "error_message": None, "active_producers": producers}


def handle(ctx: RequestContext, req: DescribeProducersRequest) -> DescribeProducersResponse:
    readable = allowed_names(ctx, Op.READ, TOPIC, (t["name"] for t in req["topics"]))
    return {
        "throttle_time_ms": 0,
        "topics": [
            {"name": t["name"], "partitions": [
                _partition(ctx, t["name"], i) if t["name"] in readable
                else {"partition_index": i, "error_code": TOPIC_AUTHORIZATION_FAILED, "active_producers": []}
                for i in t["partition_indexes"]]}
            for t in req["topics"]
        ],
    }
