"""BrokerHeartbeat (KIP-631): a registered broker keeps its session, reports how far it has
replayed the metadata log (it is unfenced once caught up), asks to be fenced or to shut down in a
controlled way. Decided by the active controller; other nodes forward it."""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, controller_listener_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse

API_KEY = ApiKey.BROKER_HEARTBEAT


async def handle(ctx: RequestContext, req: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
    if not controller_listener_allowed(ctx):  # node-to-node only; other fields take their defaults
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED}
    quorum = ctx.services.quorum
    assert quorum is not None, "every node has a quorum service (a single node is its own)"
    return await quorum.broker_heartbeat(req, forward=not ctx.on_controller_listener)
