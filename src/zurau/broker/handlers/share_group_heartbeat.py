"""ShareGroupHeartbeat (KIP-932): join, heartbeat in and leave a share group.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`; otherwise neither served nor
advertised). A member joins with epoch 0 and a member id it generated itself (v1), heartbeats
with its epoch and leaves with -1; the response carries its epoch, the heartbeat interval and,
when it changed (or on a full request), the share partitions assigned to it (the ``simple``
assignor; only partitions whose share state is initialized are assigned). Authorization, as
Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every subscribed topic
(TOPIC_AUTHORIZATION_FAILED). Other errors: INVALID_REQUEST (with a message), UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH (rejoin with epoch 0), GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND (the id is
a classic or consumer group's), and the coordinator errors (NOT_COORDINATOR ...).

Share-state initialization: the coordinator's result lists in ``to_initialize`` the partitions
whose state the share coordinator must initialize; the group coordinator's service does it in the
background after answering (InitializeShareGroupState, see
:class:`~zurau.coordinator.group.service.RuntimeGroupCoordinatorService`), and they stay
unassigned until it is recorded: a later heartbeat assigns them.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import client_host, client_id, coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.share_group import ShareGroupHeartbeatResult
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError
from zurau.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
ENABLED_BY = "group.share.enable"


def _response(r: ShareGroupHeartbeatResult) -> ShareGroupHeartbeatResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": r.error_code,
        "error_message": r.error_message,
        "member_id": r.member_id,
        "member_epoch": r.member_epoch,
        "heartbeat_interval_ms": r.heartbeat_interval_ms,
        "assignment": None if r.assignment is None else {"topic_partitions": list(r.assignment)},
    }


async def handle(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    member_id = req["member_id"]
    err = group_error(ctx, req["group_id"])
    if err is not None:
        return _response(ShareGroupHeartbeatResult(err.code, err.message, member_id or None, -1))
    names = req["subscribed_topic_names"]
    if names and len(allowed_names(ctx, Op.DESCRIBE, TOPIC, names)) < len(set(names)):
        return _response(
            ShareGroupHeartbeatResult(TopicAuthorizationFailedError.code, None, member_id or None, -1)
        )
    result = await coordinator(ctx).share_group_heartbeat(
        group_id=req["group_id"],
        member_id=member_id,
        member_epoch=req["member_epoch"],
        rack_id=req["rack_id"],
        subscribed_topic_names=names,
        client_id=client_id(ctx),
        client_host=client_host(ctx),
    )
    return _response(result)
