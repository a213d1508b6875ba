"""Vote (KIP-595): a message between members of the KRaft quorum, answered by this node's
Raft state machine (:mod:`zurau.metadata.raft_client`) in Kafka's wire format."""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._quorum import to_raft
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey

API_KEY = ApiKey.VOTE


async def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    return await to_raft(ctx, API_KEY, req)
