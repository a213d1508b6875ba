"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), latest tiered
(-5), or the first offset whose timestamp is at or after a given time.

"Latest" is the high watermark for read_uncommitted and the last stable offset for read_committed,
as in Kafka; a timestamp with no record at or after it answers offset -1, timestamp -1.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._common import check_leader_epoch, error_of, resolve_topic
from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import InvalidRequestError, KafkaError, UnknownTopicOrPartitionError

API_KEY = 2

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    rm = ctx.replica_manager
    read_committed = req.get("isolation_level", 0) == 1
    topics_out = []
    for rt in req["topics"]:
        name = rt["name"]
        parts_out = []
        try:
            topic, terr = resolve_topic(ctx, name, None), None
        except KafkaError as e:
            topic, terr = None, e
        for rp in rt["partitions"]:
            index = rp["partition_index"]
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": 0,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            try:
                if terr is not None:
                    raise terr
                if not 0 <= index < topic.partitions:
                    raise UnknownTopicOrPartitionError(f"{name} has no partition {index}")
                p = rm.partition(topic.name, index)
                check_leader_epoch(rp.get("current_leader_epoch", -1), p.leader_epoch)
                plog = p.log
                ts = rp["timestamp"]
                entry["leader_epoch"] = p.leader_epoch
                if ts in (EARLIEST, EARLIEST_LOCAL):
                    entry["offset"] = plog.log_start_offset
                elif ts in (LATEST, LATEST_TIERED):
                    entry["offset"] = plog.last_stable_offset if read_committed else plog.high_watermark
                    if ts == LATEST_TIERED:
                        entry["offset"] = -1  # no tiered storage: nothing is tiered
                elif ts == MAX_TIMESTAMP:
                    found = plog.max_timestamp_offset()
                    if found is not None:
                        entry["offset"], entry["timestamp"] = found
                elif ts < 0:
                    raise InvalidRequestError(f"unknown special timestamp {ts}")
                else:
                    found = plog.offset_for_timestamp(ts)
                    if found is not None:
                        offset, found_ts = found
                        limit = plog.last_stable_offset if read_committed else plog.high_watermark
                        if offset < limit:
                            entry["offset"], entry["timestamp"] = offset, found_ts
            except Exception as e:
                entry["error_code"], _ = error_of(e)
                entry["leader_epoch"] = -1
            parts_out.append(entry)
        topics_out.append({"name": name, "partitions": parts_out})
    return {"throttle_time_ms": 0, "topics": topics_out}
