"""AddRaftVoter (KIP-853): add a controller to a dynamic quorum's voter set. Any node accepts it
and passes it to the quorum's leader, which answers once the new voter set is committed (or with
the reason it refuses: DUPLICATE_VOTER, a new voter that is not fetching or not caught up,
another change in flight, a static quorum)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zurau.broker.handlers._untyped import as_dict, as_message
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.messages import AddRaftVoterRequest, AddRaftVoterResponse

API_KEY = ApiKey.ADD_RAFT_VOTER


async def change_voters(ctx: RequestContext, req: Mapping[str, Any]) -> dict[str, Any]:
    """Shared by AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter (their responses share these fields)."""
    quorum = ctx.services.quorum
    if quorum is None:
        return {
            "throttle_time_ms": 0,
            "error_code": UnsupportedVersionError.code,
            "error_message": "this node runs no KRaft quorum",
        }
    return await quorum.change_voters(ctx.header.api_key, ctx.api_version, as_dict(req))


async def handle(ctx: RequestContext, req: AddRaftVoterRequest) -> AddRaftVoterResponse:
    return as_message(AddRaftVoterResponse, await change_voters(ctx, req))
