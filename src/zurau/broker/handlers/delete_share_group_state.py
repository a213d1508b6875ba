"""DeleteShareGroupState (key 86, KIP-932): the group coordinator removes share-partitions' state
(a deleted share group, or offsets deleted with DeleteShareGroupOffsets).

Each partition is answered by the share coordinator of its ``groupId:topicId:partition`` key
(NOT_COORDINATOR from a broker that does not lead that key's ``__share_group_state``
partition), once its tombstone is committed; unknown state is not an error. CLUSTER_ACTION on
the cluster is required (see ``_share_state``).
"""

from __future__ import annotations

from zurau.broker.handlers._share_state import error_results, share_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import DeleteShareGroupStateRequest, DeleteShareGroupStateResponse

API_KEY = ApiKey.DELETE_SHARE_GROUP_STATE


async def handle(ctx: RequestContext, req: DeleteShareGroupStateRequest) -> DeleteShareGroupStateResponse:
    service, err = share_coordinator(ctx)
    if service is None:
        assert err is not None
        return {"results": error_results(req["topics"], err)}
    return {"results": await service.delete_state(req["group_id"], req["topics"])}
