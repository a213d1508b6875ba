"""Shared by the KRaft quorum handlers: hand the request to the node's quorum service."""

from __future__ import annotations

from typing import Any

from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import InconsistentVoterSetError
from zurau.raft.wire import error_response


async def to_raft(ctx: RequestContext, api_key: int, req: dict[str, Any]) -> dict[str, Any]:
    """A Raft request (Vote, BeginQuorumEpoch, EndQuorumEpoch, metadata Fetch) for this node.
    A single node is a quorum of one: a message from another node names a voter set that
    disagrees with this one, and is refused with INCONSISTENT_VOTER_SET."""
    quorum = ctx.services.quorum
    if quorum is None:
        return error_response(api_key, ctx.api_version, InconsistentVoterSetError.code)
    return await quorum.handle_raft_request(api_key, ctx.api_version, req)
