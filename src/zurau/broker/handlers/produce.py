"""Produce: validate each partition's record batches once and append them as received.

Per partition: the topic must exist, the payload must be a valid run of v2 batches (CRC-32C,
sizes, magic), each batch within ``max.message.bytes``; idempotent producers are checked for
epoch and sequence by the log's producer state (a retried batch is answered with its original
offsets). Errors are per partition; the broker never drops the connection for a bad batch.
``acks=0`` gets no response at all, as Kafka clients expect; if any partition failed, the
connection is closed instead (Kafka's way of telling such a client to refresh its metadata).
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._common import error_of, resolve_topic
from zurau.broker.request_context import CloseConnection, RequestContext
from zurau.protocol.errors import (
    CorruptRecordError,
    InvalidRequiredAcksError,
    KafkaError,
    UnknownTopicOrPartitionError,
)

API_KEY = 0


def _partition_error(index: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any] | None:
    acks = req["acks"]
    rm = ctx.replica_manager
    responses = []
    for td in req["topic_data"]:
        name = td.get("name")
        topic_id = td.get("topic_id")
        parts_out = []
        try:
            topic = resolve_topic(ctx, name, topic_id)
            terr: KafkaError | None = None
        except KafkaError as e:
            topic, terr = None, e
        for pd in td["partition_data"]:
            index = pd["index"]
            try:
                if acks not in (-1, 0, 1):
                    raise InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
                if terr is not None:
                    raise terr
                assert topic is not None
                if not 0 <= index < topic.partitions:
                    raise UnknownTopicOrPartitionError(f"{topic.name} has no partition {index}")
                records = pd["records"]
                if records is None or len(records) == 0:
                    raise CorruptRecordError("produce request carries no record batches")
                # The request buffer is ours alone (see broker/connection): patch it in place.
                r = rm.append(topic.name, index, records, acks, in_place=True)
                parts_out.append(
                    {
                        "index": index,
                        "error_code": 0,
                        "base_offset": r.base_offset,
                        "log_append_time_ms": r.log_append_time_ms,
                        "log_start_offset": r.log_start_offset,
                        "record_errors": [],
                        "error_message": None,
                    }
                )
            except Exception as e:  # every failure is this partition's error code
                code, msg = error_of(e)
                parts_out.append(_partition_error(index, code, msg))
        responses.append({"name": name, "topic_id": topic_id, "partition_responses": parts_out})
    if acks == 0:
        failed = [p for r in responses for p in r["partition_responses"] if p["error_code"]]
        if failed:
            raise CloseConnection(
                f"acks=0 produce failed for {len(failed)} partition(s) (first error code {failed[0]['error_code']})"
            )
        return None
    return {"responses": responses, "throttle_time_ms": 0}
