"""ListTransactions: the transactional ids this coordinator knows, filtered.

Filters (all must match; an empty one matches everything): state names (unknown names are echoed
in ``unknown_state_filters``), producer ids, v1 ``duration_filter`` (running longer than that many
ms), v2 ``transactional_id_pattern`` (a regular expression matching the whole id;
INVALID_REGULAR_EXPRESSION if it does not compile).
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TRANSACTIONAL_ID, Op, allowed_names
from zurau.broker.handlers._txn import txn_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ListTransactionsRequest, ListTransactionsResponse

API_KEY = ApiKey.LIST_TRANSACTIONS


async def handle(ctx: RequestContext, req: ListTransactionsRequest) -> ListTransactionsResponse:
    result = await txn_coordinator(ctx).list_transactions(
        states=req["state_filters"],
        producer_ids=req["producer_id_filters"],
        duration_ms=req.get("duration_filter", -1),
        pattern=req.get("transactional_id_pattern"),
    )
    listed = list(result.transactions)
    if ctx.services.authorizer is not None:
        visible = allowed_names(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, (t.transactional_id for t in listed), log=False)
        listed = [t for t in listed if t.transactional_id in visible]
    return {
        "throttle_time_ms": 0,
        "error_code": result.error_code,
        "unknown_state_filters": list(result.unknown_state_filters),
        "transaction_states": [
            {
                "transactional_id": t.transactional_id,
                "producer_id": t.producer_id,
                "transaction_state": t.state,
            }
            for t in listed
        ],
    }
