"""UpdateRaftVoter (KIP-853): a voter tells the leader its current listeners and supported
kraft.version range, which the leader writes into the voter set. Handled like
AddRaftVoter (:mod:`zurau.broker.handlers.add_raft_voter`)."""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.messages import UpdateRaftVoterRequest, UpdateRaftVoterResponse

API_KEY = ApiKey.UPDATE_RAFT_VOTER


async def handle(ctx: RequestContext, req: UpdateRaftVoterRequest) -> UpdateRaftVoterResponse:
    quorum = ctx.services.quorum
    if quorum is None:  # (the response has no error message)
        return {"throttle_time_ms": 0, "error_code": UnsupportedVersionError.code}
    return await quorum.update_raft_voter(ctx.api_version, req)
