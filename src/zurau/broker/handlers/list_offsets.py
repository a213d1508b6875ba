"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), latest tiered
(-5), or the first offset whose timestamp is at or after a given time.

"Latest" is the high watermark for read_uncommitted and the last stable offset for read_committed,
as in Kafka; a consumer asking for it from a leader whose high watermark has not yet reached the
start of its leader epoch gets OFFSET_NOT_AVAILABLE (KIP-207; LEADER_NOT_AVAILABLE before v5),
both retriable; a timestamp with no record at or after it answers offset -1, timestamp -1. The
lookup itself is the replica manager's (``fetch_offset_for_timestamp``).
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._common import error_of, resolve_topic
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    KafkaError,
    KafkaStorageError,
    LeaderNotAvailableError,
    OffsetNotAvailableError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResponseTopics,
    ListOffsetsResponseTopicsPartitions,
)
from zurau.types import LeaderEpoch

log = logging.getLogger("zurau.broker")

API_KEY = ApiKey.LIST_OFFSETS
#: ``replica_id`` of a consumer's request (a follower or a debugging tool sends another)
CONSUMER_REPLICA_ID = -1
#: ListOffsets versions before this answer LEADER_NOT_AVAILABLE where later ones answer
#: OFFSET_NOT_AVAILABLE (KIP-207)
FIRST_OFFSET_NOT_AVAILABLE_VERSION = 5


def handle(
    ctx: RequestContext, req: ListOffsetsRequest
) -> ListOffsetsResponse | Coroutine[Any, Any, ListOffsetsResponse]:
    rm = ctx.replica_manager
    # Timestamp lookups a tiered log must also make in the remote tier (asynchronously): an
    # earlier record found there replaces the local answer (Kafka's DelayedRemoteListOffsets).
    remote: list[tuple[ListOffsetsResponseTopicsPartitions, str, Any, int]] = []  # (.., the log, ..)
    read_committed = req.get("isolation_level", 0) == 1
    client_request = req.get("replica_id", CONSUMER_REPLICA_ID) == CONSUMER_REPLICA_ID
    topics_out: list[ListOffsetsResponseTopics] = []
    described = allowed_names(ctx, Op.DESCRIBE, TOPIC, (t["name"] for t in req["topics"]))
    for rt in req["topics"]:
        name = rt["name"]
        parts_out: list[ListOffsetsResponseTopicsPartitions] = []
        try:
            if name not in described:
                raise TopicAuthorizationFailedError("Topic authorization failed.")
            topic, terr = resolve_topic(ctx, name, None), None
        except KafkaError as e:
            topic, terr = None, e
        for rp in rt["partitions"]:
            index = rp["partition_index"]
            entry: ListOffsetsResponseTopicsPartitions = {
                "partition_index": index,
                "error_code": 0,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            try:
                if terr is not None:
                    raise terr
                assert topic is not None
                if not 0 <= index < topic.num_partitions:
                    raise UnknownTopicOrPartitionError(f"{name} has no partition {index}")
                found = rm.fetch_offset_for_timestamp(
                    topic.name,
                    index,
                    rp["timestamp"],
                    isolation_level=1 if read_committed else 0,
                    current_leader_epoch=LeaderEpoch(rp.get("current_leader_epoch", -1)),
                    client_request=client_request,
                )
                entry["offset"], entry["timestamp"], entry["leader_epoch"] = found
                plog = rm.tiered_timestamp_log(topic.name, index, rp["timestamp"])
                if plog is not None:
                    remote.append((entry, topic.name, plog, rp["timestamp"]))
            except OffsetNotAvailableError:
                # Kafka's answer to versions before 5, which predate the error (aiokafka, for one,
                # does not know code 78 and would fail; it retries LEADER_NOT_AVAILABLE)
                old = ctx.api_version < FIRST_OFFSET_NOT_AVAILABLE_VERSION
                entry["error_code"] = LeaderNotAvailableError.code if old else OffsetNotAvailableError.code
                entry["leader_epoch"] = -1
            except Exception as e:
                entry["error_code"], _ = error_of(e)
                entry["leader_epoch"] = -1
            parts_out.append(entry)
        topics_out.append({"name": name, "partitions": parts_out})
    response: ListOffsetsResponse = {"throttle_time_ms": 0, "topics": topics_out}
    if not remote:
        return response
    isolation = 1 if read_committed else 0

    async def with_remote() -> ListOffsetsResponse:
        for entry, topic_name, plog, timestamp in remote:
            try:
                found = await rm.remote_offset_for_timestamp(
                    topic_name, entry["partition_index"], plog, timestamp, isolation_level=isolation
                )
            except Exception as e:  # the remote tier failed: retriable, never a wrong offset
                entry["error_code"], entry["offset"], entry["timestamp"] = KafkaStorageError.code, -1, -1
                entry["leader_epoch"] = -1
                log.warning("ListOffsets of %s-%d in the remote tier failed: %s", topic_name, entry["partition_index"], e)
                continue
            if found is not None:
                entry["offset"], entry["timestamp"], entry["leader_epoch"] = found
        return response

    return with_remote()
