"""WriteTxnMarkers: append COMMIT/ABORT markers for producers to partitions this broker leads.

Sent by a transaction coordinator on another broker, or by an admin tool to abort a *hanging*
transaction (one that no coordinator will end: ``zurau transactions abort``, like
``kafka-transactions.sh abort``). This broker's own coordinator writes its markers in-process
through the same path (:meth:`~zurau.coordinator.txn.transaction_runtime.TransactionRuntime.write_markers`),
which also commits or drops pending offsets when the partition is one of ``__consumer_offsets``.
Each partition is answered once its marker is committed (below the high watermark):
UNKNOWN_TOPIC_OR_PARTITION if it does not exist, INVALID_PRODUCER_EPOCH if the producer already
wrote with a newer epoch, else 0 (a marker for a producer without an open transaction there ends
nothing, harmlessly). v2 names the transaction's version: with transactions v2 (2) the marker's
epoch must be above the producer's epoch in the partition (the coordinator bumped it), else
INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.handlers._txn import by_topic, known_partition, requested_partitions, txn_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseMarkers,
)

API_KEY = ApiKey.WRITE_TXN_MARKERS


async def handle(ctx: RequestContext, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    txns = txn_coordinator(ctx)
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # brokers only
        return {"markers": [
            {"producer_id": m["producer_id"], "topics": [
                {"name": t["name"], "partitions": [
                    {"partition_index": p, "error_code": CLUSTER_AUTHORIZATION_FAILED} for p in t["partition_indexes"]]}
                for t in m["topics"]]}
            for m in req["markers"]]}
    out: list[WriteTxnMarkersResponseMarkers] = []
    for m in req["markers"]:
        parts = requested_partitions((t["name"], t["partition_indexes"]) for t in m["topics"])
        valid = [tp for tp in parts if known_partition(ctx, tp)]
        written = await txns.write_txn_markers(
            producer_id=m["producer_id"],
            producer_epoch=m["producer_epoch"],
            commit=m["transaction_result"],
            coordinator_epoch=m["coordinator_epoch"],
            partitions=valid,
            transaction_version=m.get("transaction_version", 0),
        )
        codes = {
            tp: (UnknownTopicOrPartitionError.code if tp not in written else (e.code if e is not None else 0))
            for tp in parts
            for e in [written.get(tp)]
        }
        out.append(
            {
                "producer_id": m["producer_id"],
                "topics": [
                    {"name": t, "partitions": [{"partition_index": p, "error_code": c} for p, c in plist]}
                    for t, plist in by_topic(codes)
                ],
            }
        )
    return {"markers": out}
