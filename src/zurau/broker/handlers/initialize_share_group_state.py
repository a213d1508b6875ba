"""InitializeShareGroupState (key 83, KIP-932): the group coordinator sets a share-partition's
state epoch and start offset in the share coordinator, before the share group consumes it.

Each partition is answered by the share coordinator of its ``groupId:topicId:partition`` key
(NOT_COORDINATOR from a broker that does not lead that key's ``__share_group_state``
partition); FENCED_STATE_EPOCH for a state epoch below one already seen. CLUSTER_ACTION on the
cluster is required (see ``_share_state``).
"""

from __future__ import annotations

from zurau.broker.handlers._share_state import error_results, share_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import InitializeShareGroupStateRequest, InitializeShareGroupStateResponse

API_KEY = ApiKey.INITIALIZE_SHARE_GROUP_STATE


async def handle(
    ctx: RequestContext, req: InitializeShareGroupStateRequest
) -> InitializeShareGroupStateResponse:
    service, err = share_coordinator(ctx)
    if service is None:
        assert err is not None
        return {"results": error_results(req["topics"], err)}
    return {"results": await service.initialize_state(req["group_id"], req["topics"])}
