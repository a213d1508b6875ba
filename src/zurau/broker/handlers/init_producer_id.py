"""InitProducerId for idempotent producers (no transactional.id): a fresh producer id, epoch 0.

Kafka answers a request without a transactional id with a new producer id every time, even when
the request names an existing id and epoch (epoch bumps of KIP-360 apply to transactional
producers). Ids come from :class:`~zurau.metadata.producer_id_manager.ProducerIdManager`, so they
never repeat across restarts.

A transactional id needs the transaction coordinator, which this broker does not run yet (and
FindCoordinator is not advertised, so real clients stop before this point with a clear
"not supported" error). A request that still arrives with one gets INVALID_REQUEST rather than a
retriable coordinator error that would make a client retry forever.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import InvalidRequestError, InvalidTransactionTimeoutError

API_KEY = 22


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    if req.get("transactional_id") is not None:
        return {"throttle_time_ms": 0, "error_code": InvalidRequestError.code, "producer_id": -1, "producer_epoch": -1}
    if req.get("transaction_timeout_ms", 0) < 0:
        code = InvalidTransactionTimeoutError.code
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}
    pid = ctx.broker.producer_ids.next_id()
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0}
