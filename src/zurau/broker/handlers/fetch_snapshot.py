"""FetchSnapshot (KIP-630): a quorum member that fell behind the leader's log start copies the
leader's newest metadata snapshot in chunks, then fetches the log from the snapshot's end."""

from __future__ import annotations

from zurau.broker.handlers._quorum import ask_raft
from zurau.broker.request_context import RequestContext
from zurau.client.typed_api import FETCH_SNAPSHOT
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import FetchSnapshotRequest, FetchSnapshotResponse

API_KEY = ApiKey.FETCH_SNAPSHOT


async def handle(ctx: RequestContext, req: FetchSnapshotRequest) -> FetchSnapshotResponse:
    return await ask_raft(ctx, FETCH_SNAPSHOT, req)
