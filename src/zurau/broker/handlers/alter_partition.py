"""AlterPartition (KIP-497, KIP-903): a partition leader asks the controller to change the ISR.

Decided by the active controller (which checks the leader and partition epochs and the
eligibility of each new member, then commits a PartitionChangeRecord); any other node forwards it
there, and a request that came in on a controller listener is never forwarded again. A node
without a controller that decides ISR changes (a single node, whose ISR is itself) answers
NOT_CONTROLLER.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, controller_listener_allowed
from zurau.broker.interfaces import AlterPartitionChannel
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import NotControllerError
from zurau.protocol.messages import AlterPartitionRequest, AlterPartitionResponse

API_KEY = ApiKey.ALTER_PARTITION


async def handle(ctx: RequestContext, req: AlterPartitionRequest) -> AlterPartitionResponse:
    if not controller_listener_allowed(ctx):  # node-to-node only; other fields take their defaults
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED}
    controller = ctx.controller
    if not isinstance(controller, AlterPartitionChannel):
        return {"throttle_time_ms": 0, "error_code": NotControllerError.code, "topics": []}
    return await controller.alter_partition(req)
