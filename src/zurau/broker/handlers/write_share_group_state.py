"""WriteShareGroupState (key 85, KIP-932): a share-partition leader persists changes of a
share-partition's state (start offset, state batches) to the share coordinator.

Each partition is answered by the share coordinator of its ``groupId:topicId:partition`` key
(NOT_COORDINATOR from a broker that does not lead that key's ``__share_group_state``
partition), once the record is committed; INVALID_REQUEST for an uninitialized share-partition,
FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH for a stale writer. CLUSTER_ACTION on the cluster is
required (see ``_share_state``).
"""

from __future__ import annotations

from zurau.broker.handlers._share_state import error_results, share_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import WriteShareGroupStateRequest, WriteShareGroupStateResponse

API_KEY = ApiKey.WRITE_SHARE_GROUP_STATE


async def handle(ctx: RequestContext, req: WriteShareGroupStateRequest) -> WriteShareGroupStateResponse:
    service, err = share_coordinator(ctx)
    if service is None:
        assert err is not None
        return {"results": error_results(req["topics"], err)}
    return {"results": await service.write_state(req["group_id"], req["topics"])}
