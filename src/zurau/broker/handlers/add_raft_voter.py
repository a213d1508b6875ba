"""AddRaftVoter (KIP-853): add a controller to a dynamic quorum's voter set. Any node accepts it
and passes it to the quorum's leader, which answers once the new voter set is committed (or with
the reason it refuses: DUPLICATE_VOTER, a new voter that is not fetching or not caught up,
another change in flight, a static quorum)."""

from __future__ import annotations

from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError

API_KEY = ApiKey.ADD_RAFT_VOTER


async def change_voters(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    """Shared by AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter."""
    quorum = ctx.services.quorum
    if quorum is None:
        return {
            "throttle_time_ms": 0,
            "error_code": UnsupportedVersionError.code,
            "error_message": "this node runs no KRaft quorum",
        }
    return await quorum.change_voters(ctx.header.api_key, ctx.api_version, req)


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    return await change_voters(ctx, req)
