"""AddRaftVoter (KIP-853): add a controller to a dynamic quorum's voter set. Any node accepts it
and passes it to the quorum's leader, which answers once the new voter set is committed (or with
the reason it refuses: DUPLICATE_VOTER, a new voter that is not fetching or not caught up,
another change in flight, a static quorum)."""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.messages import AddRaftVoterRequest, AddRaftVoterResponse

API_KEY = ApiKey.ADD_RAFT_VOTER

NO_QUORUM = "this node runs no KRaft quorum"


async def handle(ctx: RequestContext, req: AddRaftVoterRequest) -> AddRaftVoterResponse:
    quorum = ctx.services.quorum
    if quorum is None:
        return {"throttle_time_ms": 0, "error_code": UnsupportedVersionError.code, "error_message": NO_QUORUM}
    return await quorum.add_raft_voter(ctx.api_version, req)
