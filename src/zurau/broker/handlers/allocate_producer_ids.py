"""AllocateProducerIds (KIP-730): a broker asks the active controller for a block of producer ids;
the controller records the block (ProducerIdsRecord) so no id is handed out twice."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, controller_listener_allowed
from zurau.broker.handlers._common import error_of
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import AllocateProducerIdsRequest, AllocateProducerIdsResponse

API_KEY = ApiKey.ALLOCATE_PRODUCER_IDS


async def handle(ctx: RequestContext, req: AllocateProducerIdsRequest) -> AllocateProducerIdsResponse:
    if not controller_listener_allowed(ctx):  # node-to-node only; other fields take their defaults
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED}
    quorum = ctx.services.quorum
    assert quorum is not None, "every node has a quorum service (a single node is its own)"
    try:
        first, count = await quorum.allocate_producer_ids(
            req["broker_id"], req["broker_epoch"], forward=not ctx.on_controller_listener
        )
    except Exception as e:
        return _answer(error_of(e)[0])
    return _answer(0, first, count)


def _answer(code: int, first: int = -1, count: int = 0) -> AllocateProducerIdsResponse:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id_start": first, "producer_id_len": count}
