"""UnregisterBroker (``kafka-cluster.sh unregister``, ``zurau cluster unregister``): handed to the
controller (forwarded to the active one in a cluster), which removes the broker's registration
(an ``UnregisterBrokerRecord``, and the broker leaves its partitions' ISRs and leaderships); see
:meth:`zurau.metadata.controller.cluster_control.ClusterControlManager.unregister_broker`. An id
with no registration is BROKER_ID_NOT_REGISTERED. Needs ALTER on the cluster, as in Kafka.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import UnregisterBrokerRequest, UnregisterBrokerResponse

API_KEY = ApiKey.UNREGISTER_BROKER


async def handle(ctx: RequestContext, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse:
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.ALTER):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed."}
    result = await ctx.controller.unregister_broker(req["broker_id"])
    return {**result, "throttle_time_ms": 0}
