"""DescribeQuorum (KIP-595, v1 KIP-836, v2 KIP-853): the metadata quorum as its leader sees it --
leader, epoch, high watermark, and every voter's and observer's log end offset and fetch times.
Any node answers: one that is not the leader asks the leader (``kafka-metadata-quorum.sh``
talks to any broker)."""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidRequestError
from zurau.protocol.messages import DescribeQuorumRequest, DescribeQuorumResponse
from zurau.raft.wire import describe_quorum_request_ok, describe_quorum_response

API_KEY = ApiKey.DESCRIBE_QUORUM


async def handle(ctx: RequestContext, req: DescribeQuorumRequest) -> DescribeQuorumResponse:
    if not describe_quorum_request_ok(req):
        body = describe_quorum_response(ctx.api_version, None)
        body["error_code"] = InvalidRequestError.code
        if ctx.api_version >= 2:
            body["error_message"] = "DescribeQuorum describes __cluster_metadata partition 0 only"
        return body
    quorum = ctx.services.quorum
    assert quorum is not None
    return await quorum.describe_quorum(ctx.api_version, req)
