"""FindCoordinator: which broker coordinates a group (or a transactional id).

v0-v3 ask for one key, v4+ for a batch (``coordinator_keys``), answered one entry per key. A group
maps to partition ``abs(hash(group)) % offsets.topic.num.partitions`` of ``__consumer_offsets``,
which is created on the first request; the leader of that partition is the coordinator (on a
single node: this broker). Key type 1 (transactional ids) maps the same way to a partition of
``__transaction_state`` (created on the first request). Share groups (key type 2) are not
supported: INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._groups import coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidRequestError, KafkaError

API_KEY = ApiKey.FIND_COORDINATOR

GROUP, TRANSACTION = 0, 1


def _lookup(ctx: RequestContext, key: str, key_type: int) -> tuple[KafkaError | None, dict[str, Any]]:
    err: KafkaError | None
    if key_type == GROUP:
        err = coordinator(ctx).coordinator_error(key)
    elif key_type == TRANSACTION:
        err = ctx.txns.coordinator_error(key)
    else:
        err = InvalidRequestError(f"unsupported coordinator key type {key_type}")
    if err is not None:
        return err, {"node_id": -1, "host": "", "port": -1}
    host, port = ctx.advertised
    return None, {"node_id": ctx.node_id, "host": host, "port": port}


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    key_type = req.get("key_type", GROUP)
    if ctx.api_version >= 4:
        coordinators = []
        for key in req["coordinator_keys"]:
            err, node = _lookup(ctx, key, key_type)
            coordinators.append(
                {
                    "key": key,
                    **node,
                    "error_code": 0 if err is None else err.code,
                    "error_message": None if err is None else err.message,
                }
            )
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    err, node = _lookup(ctx, req["key"], key_type)
    return {
        "throttle_time_ms": 0,
        "error_code": 0 if err is None else err.code,
        "error_message": None if err is None else err.message,
        **node,
    }
