"""AddPartitionsToTxn: add partitions to a producer's ongoing transaction (starting it if needed).

v0-v3 (clients) carry one transaction; v4+ (broker-to-broker, KIP-890) a batch, each with its own
id, producer id/epoch and ``verify_only`` flag: a verify-only entry changes nothing and answers 0
for each partition already in the ongoing transaction, INVALID_TXN_STATE for the others. An entry
that is not verify-only adds its partitions; at v5 it comes from a partition leader adding them for
a transactions-v2 producer (KIP-890 part 2: Produce v12 / TxnOffsetCommit v5 need no
AddPartitionsToTxn from the client), and the transaction becomes a transactions-v2 one.

Partition checks first, as in Kafka: if any requested partition does not exist, those get
UNKNOWN_TOPIC_OR_PARTITION and every other one OPERATION_NOT_ATTEMPTED, and nothing is added.
Otherwise the coordinator's answer applies to every partition: 0, INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS (retriable: the
previous transaction is still completing; the coordinator first waits for it up to
``concurrent_wait_ms``, see ``transaction_coordinator``), or a coordinator error.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names, cluster_allowed
from zurau.broker.handlers._txn import (
    by_topic,
    fenced_code,
    known_partition,
    requested_partitions,
    txn_coordinator,
    txn_denied,
)
from zurau.broker.request_context import RequestContext
from zurau.coordinator.txn.transaction_version import ADD_PARTITIONS_TV2_VERSION, TV_2
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ClusterAuthorizationFailedError,
    OperationNotAttemptedError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTransactionsTopics,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseResultsByTransaction,
    AddPartitionsToTxnResponseResultsByTransactionTopicResults,
)
from zurau.types import TopicPartitionKey

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN


async def _one(
    ctx: RequestContext,
    tid: str,
    producer_id: int,
    producer_epoch: int,
    topics: list[AddPartitionsToTxnRequestTransactionsTopics],
    verify_only: bool,
    transaction_version: int = 0,
) -> list[AddPartitionsToTxnResponseResultsByTransactionTopicResults]:
    parts = requested_partitions((t["name"], t["partitions"]) for t in topics)
    codes: dict[TopicPartitionKey, int] = {}
    unknown = {tp for tp in parts if not known_partition(ctx, tp)}
    rt = txn_coordinator(ctx)
    denied: set[TopicPartitionKey] = set()
    if ctx.services.authorizer is not None:
        writable = allowed_names(ctx, Op.WRITE, TOPIC, (t for t, _ in parts))
        denied = {tp for tp in parts if tp[0] not in writable}
    if (auth_err := txn_denied(ctx, tid)) is not None:
        codes = dict.fromkeys(parts, auth_err.code)
    elif denied:
        codes = {tp: TopicAuthorizationFailedError.code if tp in denied else OperationNotAttemptedError.code for tp in parts}
    elif unknown:
        codes = {
            tp: UnknownTopicOrPartitionError.code if tp in unknown else OperationNotAttemptedError.code
            for tp in parts
        }
    elif (err := rt.coordinator_error(tid) if tid else None) is not None:
        codes = dict.fromkeys(parts, err.code)
    else:
        codes = await rt.add_partitions_to_txn(
            transactional_id=tid,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=parts,
            verify_only=verify_only,
            transaction_version=transaction_version,
        )
    version = ctx.api_version
    return [
        {
            "name": topic,
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": fenced_code(c, version, 2)} for p, c in plist
            ],
        }
        for topic, plist in by_topic(codes)
    ]


async def handle(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    if ctx.api_version <= 3:
        results = await _one(
            ctx,
            req["v3_and_below_transactional_id"],
            req["v3_and_below_producer_id"],
            req["v3_and_below_producer_epoch"],
            req["v3_and_below_topics"],
            False,
        )
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # v4+ is the brokers' (KIP-890 verification)
        return {"throttle_time_ms": 0, "error_code": ClusterAuthorizationFailedError.code, "results_by_transaction": []}
    out: list[AddPartitionsToTxnResponseResultsByTransaction] = []
    # v5 from a partition leader: add for a transactions-v2 producer (Kafka's ``addPartition``).
    tv = TV_2 if ctx.api_version >= ADD_PARTITIONS_TV2_VERSION else 0
    for t in req["transactions"]:
        results = await _one(
            ctx, t["transactional_id"], t["producer_id"], t["producer_epoch"], t["topics"], t["verify_only"], tv
        )
        out.append({"transactional_id": t["transactional_id"], "topic_results": results})
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": out}
