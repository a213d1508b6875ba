"""Shared by the KRaft quorum handlers: hand the request to the node's quorum service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, controller_listener_allowed
from zurau.broker.handlers._untyped import as_dict
from zurau.broker.request_context import RequestContext


async def to_raft(ctx: RequestContext, api_key: int, req: Mapping[str, Any]) -> dict[str, Any]:
    """A Raft request (Vote, BeginQuorumEpoch, EndQuorumEpoch, metadata Fetch, FetchSnapshot) for
    this node's quorum service (a single node's refuses them: it is a quorum of one)."""
    quorum = ctx.services.quorum
    assert quorum is not None, "every node has a quorum service (a single node is its own)"
    if not controller_listener_allowed(ctx):  # the other fields take their defaults
        return {"error_code": CLUSTER_AUTHORIZATION_FAILED}
    return await quorum.handle_raft_request(api_key, ctx.api_version, as_dict(req))
