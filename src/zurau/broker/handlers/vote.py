"""Vote (KIP-595): a message between members of the KRaft quorum, answered by this node's
Raft state machine (:mod:`zurau.metadata.raft_client`) in Kafka's wire format."""

from __future__ import annotations

from zurau.broker.handlers._quorum import ask_raft
from zurau.broker.request_context import RequestContext
from zurau.client.typed_api import VOTE
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import VoteRequest, VoteResponse

API_KEY = ApiKey.VOTE


async def handle(ctx: RequestContext, req: VoteRequest) -> VoteResponse:
    return await ask_raft(ctx, VOTE, req)
