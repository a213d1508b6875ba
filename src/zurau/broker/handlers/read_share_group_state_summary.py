"""ReadShareGroupStateSummary (key 87, KIP-932): the group coordinator reads share-partitions'
start offsets and epochs (DescribeShareGroupOffsets, share-group lag) without their batches.

Each partition is answered by the share coordinator of its ``groupId:topicId:partition`` key
(NOT_COORDINATOR from a broker that does not lead that key's ``__share_group_state``
partition); an uninitialized share-partition is start offset -1, not an error. v1 adds
``delivery_complete_count`` (KIP-1226). CLUSTER_ACTION on the cluster is required (see
``_share_state``).
"""

from __future__ import annotations

from zurau.broker.handlers._share_state import error_results, share_coordinator
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse

API_KEY = ApiKey.READ_SHARE_GROUP_STATE_SUMMARY


async def handle(
    ctx: RequestContext, req: ReadShareGroupStateSummaryRequest
) -> ReadShareGroupStateSummaryResponse:
    service, err = share_coordinator(ctx)
    if service is None:
        assert err is not None
        return {
            "results": error_results(
                req["topics"], err, state_epoch=0, leader_epoch=0, start_offset=-1, delivery_complete_count=-1
            )
        }
    return {"results": await service.read_state_summary(req["group_id"], req["topics"])}
