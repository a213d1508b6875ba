"""ReadShareGroupState (key 84, KIP-932): a share-partition leader reads the persisted state of a
share-partition (state epoch, start offset, state batches) when it starts leading it.

Each partition is answered by the share coordinator of its ``groupId:topicId:partition`` key
(NOT_COORDINATOR from a broker that does not lead that key's ``__share_group_state``
partition). A leader epoch above the highest seen is recorded first (it fences the previous
leader: FENCED_LEADER_EPOCH for lower epochs afterwards). CLUSTER_ACTION on the cluster is
required (see ``_share_state``).
"""

from __future__ import annotations

from zurau.broker.handlers._share_state import error_results, share_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ReadShareGroupStateRequest, ReadShareGroupStateResponse

API_KEY = ApiKey.READ_SHARE_GROUP_STATE


async def handle(ctx: RequestContext, req: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse:
    service, err = share_coordinator(ctx)
    if service is None:
        assert err is not None
        return {
            "results": error_results(req["topics"], err, state_epoch=0, start_offset=-1, state_batches=[])
        }
    return {"results": await service.read_state(req["group_id"], req["topics"])}
