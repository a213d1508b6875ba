"""ShareGroupDescribe (KIP-932): epochs, assignor (``simple``) and members of share groups.

Served only with ``group.share.enable=true`` (:data:`ENABLED_BY`). Each member is reported with
its subscription and its current assignment (topic ids with names). Authorization, as Kafka:
DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for that group); a group whose members are
assigned a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without
members, so no topic name or partition ownership leaks. Unknown groups and classic or consumer
groups: GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any, cast

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import coordinator, group_error, group_operations
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError
from zurau.protocol.messages import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponseGroups,
)

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
ENABLED_BY = "group.share.enable"

TOPICS_NOT_AUTHORIZED = "The group has described topic(s) that the client is not authorized to describe."


def _error_entry(gid: str, code: int, message: str | None, ops: int) -> ShareGroupDescribeResponseGroups:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": gid,
        "group_state": "",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": [],
        "authorized_operations": ops,
    }


def _assigned_topics(group: dict[str, Any]) -> set[str]:
    return {tp["topic_name"] for m in group["members"] for tp in m["assignment"]["topic_partitions"]}


async def handle(ctx: RequestContext, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    groups = coordinator(ctx)
    want_ops = bool(req.get("include_authorized_operations"))
    out: list[ShareGroupDescribeResponseGroups] = []
    for gid in req["group_ids"]:
        ops = group_operations(ctx, gid, want_ops)
        err = group_error(ctx, gid, Op.DESCRIBE) if gid else None
        if err is not None:
            out.append(_error_entry(gid, err.code, err.message, ops))
            continue
        (g,) = await groups.share_group_describe([gid])
        topics = _assigned_topics(g)
        if topics and len(allowed_names(ctx, Op.DESCRIBE, TOPIC, topics)) < len(topics):
            out.append(_error_entry(gid, TopicAuthorizationFailedError.code, TOPICS_NOT_AUTHORIZED, ops))
            continue
        g["authorized_operations"] = ops
        out.append(cast(ShareGroupDescribeResponseGroups, g))
    return {"throttle_time_ms": 0, "groups": out}
