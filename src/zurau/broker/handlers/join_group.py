"""JoinGroup: a member joins a classic group; answered when the join phase completes.

v4+ members joining without an id get MEMBER_ID_REQUIRED and their id, and must join again with it
(static members, v5+ with a ``group_instance_id``, skip that round trip). The leader's response
lists every member with its metadata for the protocol selected across members. v0 has no
rebalance timeout: the session timeout serves. See :mod:`zurau.coordinator.group.classic_groups`.
"""

from __future__ import annotations

from zurau.broker.handlers._groups import client_host, client_id, coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import JoinGroupResult
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import JoinGroupRequest, JoinGroupResponse

API_KEY = ApiKey.JOIN_GROUP


def _response(version: int, r: JoinGroupResult) -> JoinGroupResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": r.error_code,
        "generation_id": r.generation_id,
        "protocol_type": r.protocol_type,
        "protocol_name": r.protocol_name if version >= 7 else (r.protocol_name or ""),
        "leader": r.leader,
        "skip_assignment": r.skip_assignment,
        "member_id": r.member_id,
        "members": [{"member_id": m, "group_instance_id": i, "metadata": meta} for m, i, meta in r.members],
    }


async def handle(ctx: RequestContext, req: JoinGroupRequest) -> JoinGroupResponse:
    version = ctx.api_version
    groups = coordinator(ctx)
    err = group_error(ctx, req["group_id"])
    if err is not None:
        return _response(version, JoinGroupResult(err.code, member_id=req["member_id"]))
    rebalance_timeout = req["rebalance_timeout_ms"] if version >= 1 else -1
    protocols = [(p["name"], bytes(p["metadata"])) for p in req["protocols"]]
    result = await groups.join_group(
        group_id=req["group_id"],
        member_id=req["member_id"],
        group_instance_id=req["group_instance_id"] if version >= 5 else None,
        protocol_type=req["protocol_type"],
        protocols=protocols,
        session_timeout_ms=req["session_timeout_ms"],
        rebalance_timeout_ms=rebalance_timeout,
        client_id=client_id(ctx),
        client_host=client_host(ctx),
        require_known_member_id=version >= 4,
        api_version=version,
    )
    return _response(version, result)
