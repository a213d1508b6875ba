"""BrokerRegistration (KIP-631): a broker joins the cluster. The active controller writes a
RegisterBrokerRecord (the broker starts fenced) and answers with the broker epoch; any other node
forwards the request to it (a request that came in on a controller listener is never forwarded)."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, controller_listener_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import BrokerRegistrationRequest, BrokerRegistrationResponse

API_KEY = ApiKey.BROKER_REGISTRATION


async def handle(ctx: RequestContext, req: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
    if not controller_listener_allowed(ctx):  # node-to-node only; other fields take their defaults
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED}
    quorum = ctx.services.quorum
    assert quorum is not None, "every node has a quorum service (a single node is its own)"
    return await quorum.register_broker(req, forward=not ctx.on_controller_listener)
