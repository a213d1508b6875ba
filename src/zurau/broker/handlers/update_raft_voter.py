"""UpdateRaftVoter (KIP-853): a voter tells the leader its current listeners and supported
kraft.version range, which the leader writes into the voter set. Handled like
AddRaftVoter (:mod:`zurau.broker.handlers.add_raft_voter`)."""

from __future__ import annotations

from zurau.broker.handlers._untyped import as_message
from zurau.broker.handlers.add_raft_voter import change_voters
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import UpdateRaftVoterRequest, UpdateRaftVoterResponse

API_KEY = ApiKey.UPDATE_RAFT_VOTER


async def handle(ctx: RequestContext, req: UpdateRaftVoterRequest) -> UpdateRaftVoterResponse:
    return as_message(UpdateRaftVoterResponse, await change_voters(ctx, req))
