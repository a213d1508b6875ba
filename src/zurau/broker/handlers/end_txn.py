"""EndTxn: commit or abort a producer's transaction.

Answered once the PrepareCommit/PrepareAbort record is stored; the markers and the Complete record
follow at once (:mod:`zurau.coordinator.txn.transaction_coordinator`). Only the transactional id,
producer id and epoch are checked, so any process may end a transaction it did not start (the
way a Spark driver commits what its executors wrote). Errors: INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), INVALID_TXN_STATE (no ongoing transaction,
or the opposite outcome already decided), CONCURRENT_TRANSACTIONS (retriable).

v5 is transactions v2 (KIP-890 part 2) when the cluster finalizes ``transaction.version`` >= 2:
every commit or abort bumps the producer epoch and the response carries the producer id and
epoch to use next; an abort with no partition added is allowed; a retry with the epoch before
the bump is answered with success once the transaction is complete. Below that level a v5
request behaves as v4 (the response then names the unchanged id and epoch). v0-v4 are always
transactions v1: librdkafka (confluent-kafka), kafka-python and aiokafka send those.
"""

from __future__ import annotations

from zurau.broker.handlers._txn import fenced_code, txn_coordinator, txn_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.txn.transaction_version import (
    END_TXN_TV2_VERSION,
    TV_2,
    finalized_transaction_version,
    supports_epoch_bump,
)
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import EndTxnRequest, EndTxnResponse

API_KEY = ApiKey.END_TXN


async def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    tid = req["transactional_id"]
    txns = txn_coordinator(ctx)
    err = txn_error(ctx, tid)
    pid, epoch = -1, -1
    if err is not None:
        code = err.code
    else:
        v2 = ctx.api_version >= END_TXN_TV2_VERSION and supports_epoch_bump(finalized_transaction_version(ctx.image))
        result = await txns.end_txn(
            transactional_id=tid,
            producer_id=req["producer_id"],
            producer_epoch=req["producer_epoch"],
            commit=req["committed"],
            transaction_version=TV_2 if v2 else 0,
        )
        code, pid, epoch = result.error_code, result.producer_id, result.producer_epoch
    return {
        "throttle_time_ms": 0,
        "error_code": fenced_code(code, ctx.api_version, 2),
        "producer_id": pid,
        "producer_epoch": epoch,
    }
