"""DescribeTransactions: state, producer id/epoch, timeout, start time and partitions of ids.

An id this coordinator does not know gets TRANSACTIONAL_ID_NOT_FOUND, an empty one INVALID_REQUEST.
Asking does not create ``__transaction_state``.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import (
    TRANSACTIONAL_ID,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Op,
    allowed_names,
)
from zurau.broker.handlers._txn import by_topic, txn_coordinator
from zurau.broker.request_context import RequestContext
from zurau.coordinator.txn.results import DescribedTransaction
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponseTransactionStates,
)

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS


async def handle(ctx: RequestContext, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    states: list[DescribeTransactionsResponseTransactionStates] = []
    described: list[tuple[str, int, DescribedTransaction | None]] = [
        (d.transactional_id, d.error_code, d)
        for d in await txn_coordinator(ctx).describe_transactions(req["transactional_ids"])
    ]
    visible = allowed_names(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, req["transactional_ids"])
    for tid, code, d in described:
        if tid not in visible:
            code, d = TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        if d is None or code:
            states.append(
                {
                    "error_code": code,
                    "transactional_id": tid,
                    "transaction_state": "",
                    "transaction_timeout_ms": 0,
                    "transaction_start_time_ms": -1,
                    "producer_id": -1,
                    "producer_epoch": -1,
                    "topics": [],
                }
            )
            continue
        states.append(
            {
                "error_code": 0,
                "transactional_id": tid,
                "transaction_state": d.state,
                "transaction_timeout_ms": d.timeout_ms,
                "transaction_start_time_ms": d.start_ms,
                "producer_id": d.producer_id,
                "producer_epoch": d.producer_epoch,
                "topics": [
                    {"topic": t, "partitions": [p for p, _c in plist]}
                    for t, plist in by_topic(dict.fromkeys(d.partitions, 0))
                ],
            }
        )
    return {"throttle_time_ms": 0, "transaction_states": states}
