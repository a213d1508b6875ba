"""RemoveRaftVoter (KIP-853): remove a controller (id and directory id) from a dynamic quorum's
voter set; a leader that removes itself hands leadership on once the change is committed. Handled like
AddRaftVoter (:mod:`zurau.broker.handlers.add_raft_voter`)."""

from __future__ import annotations

from zurau.broker.handlers.add_raft_voter import NO_QUORUM
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.messages import RemoveRaftVoterRequest, RemoveRaftVoterResponse

API_KEY = ApiKey.REMOVE_RAFT_VOTER


async def handle(ctx: RequestContext, req: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
    quorum = ctx.services.quorum
    if quorum is None:
        return {"throttle_time_ms": 0, "error_code": UnsupportedVersionError.code, "error_message": NO_QUORUM}
    return await quorum.remove_raft_voter(ctx.api_version, req)
