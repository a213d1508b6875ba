"""FetchSnapshot (KIP-630): a quorum member that fell behind the leader's log start copies the
leader's newest metadata snapshot in chunks, then fetches the log from the snapshot's end."""

from __future__ import annotations

from zurau.broker.handlers._quorum import to_raft
from zurau.broker.handlers._untyped import as_message
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import FetchSnapshotRequest, FetchSnapshotResponse

API_KEY = ApiKey.FETCH_SNAPSHOT


async def handle(ctx: RequestContext, req: FetchSnapshotRequest) -> FetchSnapshotResponse:
    return as_message(FetchSnapshotResponse, await to_raft(ctx, API_KEY, req))
