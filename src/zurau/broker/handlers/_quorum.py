"""Shared by the KRaft quorum handlers: hand the request to the node's quorum service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, controller_listener_allowed
from zurau.broker.request_context import RequestContext
from zurau.client.typed_api import Api

Q = TypeVar("Q", bound=Mapping[str, Any])
R = TypeVar("R")


async def to_raft(ctx: RequestContext, api_key: int, req: Mapping[str, Any]) -> dict[str, Any]:
    """A Raft request (Vote, BeginQuorumEpoch, EndQuorumEpoch, metadata Fetch, FetchSnapshot) for
    this node's quorum service (a single node's refuses them: it is a quorum of one), by api key:
    the Raft client reads and answers them by key (:mod:`zurau.raft.wire`)."""
    quorum = ctx.services.quorum
    assert quorum is not None, "every node has a quorum service (a single node is its own)"
    if not controller_listener_allowed(ctx):  # the other fields take their defaults
        return {"error_code": CLUSTER_AUTHORIZATION_FAILED}
    return await quorum.handle_raft_request(api_key, ctx.api_version, req)


async def ask_raft(ctx: RequestContext, api: Api[Q, R], req: Q) -> R:
    """:func:`to_raft` for a handler with typed messages: the answer as ``api``'s response (the
    Raft client answers each key with that key's response body, or the refusal above, whose
    one field every Raft response has)."""
    call = api(req)
    return call.answer(await to_raft(ctx, call.api_key, call.body))
