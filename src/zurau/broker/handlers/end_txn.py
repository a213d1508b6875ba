"""EndTxn: commit or abort a producer's transaction.

Answered once the PrepareCommit/PrepareAbort record is stored; the markers and the Complete record
follow at once (:mod:`zurau.coordinator.txn.transaction_coordinator`). Only the transactional id,
producer id and epoch are checked, so any process may end a transaction it did not start (the
way a Spark driver commits what its executors wrote). Errors: INVALID_PRODUCER_ID_MAPPING,
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), INVALID_TXN_STATE (no ongoing transaction,
or the opposite outcome already decided), CONCURRENT_TRANSACTIONS (retriable).

v5 belongs to transactions v2 (an epoch bump with every transaction) and is not served.
"""

from __future__ import annotations

from zurau.broker.handlers._txn import fenced_code, txn_coordinator, txn_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import EndTxnRequest, EndTxnResponse

API_KEY = ApiKey.END_TXN
MAX_VERSION = 4


async def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    tid = req["transactional_id"]
    txns = txn_coordinator(ctx)
    err = txn_error(ctx, tid)
    if err is not None:
        code = err.code
    else:
        code = await txns.end_txn(
            transactional_id=tid,
            producer_id=req["producer_id"],
            producer_epoch=req["producer_epoch"],
            commit=req["committed"],
        )
    return {"throttle_time_ms": 0, "error_code": fenced_code(code, ctx.api_version, 2)}
