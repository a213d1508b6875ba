"""AddOffsetsToTxn: make a consumer group's offset commits part of a producer's transaction.

Adds the group's ``__consumer_offsets`` partition (created if needed) to the transaction, so that
the transaction's COMMIT/ABORT marker also reaches it and commits or drops the offsets that
TxnOffsetCommit stores there. Errors as AddPartitionsToTxn; PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v2. Like AddPartitionsToTxn it waits (bounded) for a previous
transaction that is still completing rather than answering CONCURRENT_TRANSACTIONS at once:
librdkafka retries this request only after ``retry.backoff.ms``.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import GROUP, Op, allowed
from zurau.broker.handlers._groups import coordinator
from zurau.broker.handlers._txn import fenced_code, txn_coordinator, txn_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import GroupAuthorizationFailedError
from zurau.protocol.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN


async def handle(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    tid = req["transactional_id"]
    txns = txn_coordinator(ctx)
    groups = coordinator(ctx)
    err = txn_error(ctx, tid)
    if err is None and not allowed(ctx, Op.READ, GROUP, req["group_id"]):
        err = GroupAuthorizationFailedError("Group authorization failed.")
    if err is None:
        # The group's coordinator may be another broker: only the topic must exist (created here
        # on first use), as the group's partition joins the transaction whoever leads it.
        err = groups.topic_error()
    if err is not None:
        code = err.code
    else:
        code = await txns.add_offsets_to_txn(
            transactional_id=tid,
            producer_id=req["producer_id"],
            producer_epoch=req["producer_epoch"],
            offsets_partition=groups.partition_for(req["group_id"]),
        )
    return {"throttle_time_ms": 0, "error_code": fenced_code(code, ctx.api_version, 2)}
