"""ConsumerGroupHeartbeat (KIP-848): join, heartbeat in and leave a consumer group.

The broker computes assignments (server-side ``uniform`` or ``range`` assignor) and walks each
member toward its target: the response carries the member epoch, the heartbeat interval and,
when it changed (or on a full request), the partitions the member may own now. Errors:
INVALID_REQUEST (with a message), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (rejoin with epoch 0),
UNSUPPORTED_ASSIGNOR, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND (a
classic group with members has this id).
"""

from __future__ import annotations

from zurau.broker.handlers._groups import client_host, client_id, coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import ConsumerGroupHeartbeatResult
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT


def _response(r: ConsumerGroupHeartbeatResult) -> ConsumerGroupHeartbeatResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": r.error_code,
        "error_message": r.error_message,
        "member_id": r.member_id,
        "member_epoch": r.member_epoch,
        "heartbeat_interval_ms": r.heartbeat_interval_ms,
        "assignment": None if r.assignment is None else {"topic_partitions": r.assignment},
    }


async def handle(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    groups = coordinator(ctx)
    err = group_error(ctx, req["group_id"])
    if err is not None:
        return _response(ConsumerGroupHeartbeatResult(err.code, err.message, req["member_id"] or None, -1))
    result = await groups.consumer_group_heartbeat(
        group_id=req["group_id"],
        member_id=req["member_id"],
        member_epoch=req["member_epoch"],
        instance_id=req["instance_id"],
        rack_id=req["rack_id"],
        rebalance_timeout_ms=req["rebalance_timeout_ms"],
        subscribed_topic_names=req["subscribed_topic_names"],
        subscribed_topic_regex=req["subscribed_topic_regex"] if ctx.api_version >= 1 else None,
        server_assignor=req["server_assignor"],
        owned=req["topic_partitions"],
        client_id=client_id(ctx),
        client_host=client_host(ctx),
        api_version=ctx.api_version,
    )
    return _response(result)
