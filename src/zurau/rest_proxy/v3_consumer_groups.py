"""Consumer groups in Confluent's v3 API: groups, their consumers, the consumers' assignments,
and the group's lags and lag summary (read-only, every path under
``/v3/clusters/{cluster_id}/consumer-groups``).

* Consumer groups are the groups Kafka's ``Admin.listConsumerGroups`` lists: classic groups whose
  protocol type is ``consumer`` (or empty: a "simple" group that only commits offsets) and
  KIP-848 ``consumer`` groups; other protocol types (Kafka Connect's, share groups) are not
  consumer groups here (404). Groups the principal may not describe are left out of the list.
* ``state`` and ``type`` are Kafka's names in Confluent's spelling (``PreparingRebalance`` ->
  ``PREPARING_REBALANCE``, ``consumer`` -> ``CONSUMER``; a state the spec does not know is
  ``UNKNOWN``); ``is_simple`` is a classic group with an empty protocol type;
  ``partition_assignor`` is the classic group's chosen protocol or the KIP-848 server assignor.
* A consumer is a group member (``consumer_id`` is the member id); its assignments are the
  partitions it owns now.
* Lags follow Confluent's proxy: one per partition the group committed an offset to, the end
  being the last stable offset (READ_COMMITTED), the lag ``end - committed`` never below 0, the
  owner the member that owns the partition now (``""`` when none does); sorted by lag, largest
  first, then topic and partition. A group without committed offsets has no lags (404), as in
  Confluent's proxy. The lag summary is the largest lag (the first such partition in topic and
  partition order) and the sum. The rows come from
  :func:`zurau.client.group_lag.lag_rows`, as the console's do, so both edges compute lag the same way.

Unknown groups, consumers, assignments and lags answer 404; a partition id that is not an
int32 answers 400.

Everything below ``consumer-groups/`` is routed on the raw, still percent-encoded path
(:func:`group_path`): group ids may hold any character and KIP-848 member ids are base64, so
either may hold a ``/``, which the ``self`` links send as ``%2F`` and the decoded path would split.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from zurau.client.group_lag import lag_rows
from zurau.client.groups_admin import CLASSIC, CONSUMER, GroupAdmin, GroupDescription, MemberDescription
from zurau.client.types import TopicPartition
from zurau.edge_requests import parse_kafka_int
from zurau.protocol.errors import GroupAuthorizationFailedError, GroupIdNotFoundError, KafkaError
from zurau.rest_proxy.errors import RestProxyError, endpoint, not_found
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.v3_resources import V3Links, collection, resource

READ_COMMITTED = 1
CONSUMER_PROTOCOL_TYPES = ("consumer", "")
STATES = {
    "PreparingRebalance": "PREPARING_REBALANCE",
    "CompletingRebalance": "COMPLETING_REBALANCE",
    "Assigning": "ASSIGNING",
    "Reconciling": "RECONCILING",
    "Stable": "STABLE",
    "Dead": "DEAD",
    "Empty": "EMPTY",
}


def _json(body: Any) -> Response:
    return Response(json.dumps(body), media_type="application/json")


def _is_consumer_group(d: GroupDescription) -> bool:
    return d.group_type == CONSUMER or d.protocol_type in CONSUMER_PROTOCOL_TYPES


async def _group(ga: GroupAdmin, group_id: str) -> GroupDescription:
    """The consumer group ``group_id`` (404 when there is none)."""
    d = (await ga.describe_groups([group_id]))[group_id]
    if isinstance(d, GroupIdNotFoundError):
        raise not_found(f"Consumer group {group_id} cannot be found.")
    if isinstance(d, KafkaError):
        raise d
    if not _is_consumer_group(d):
        raise not_found(f"Consumer group {group_id} cannot be found (it is a '{d.protocol_type}' group).")
    return d


def _member(d: GroupDescription, consumer_id: str) -> MemberDescription:
    for m in d.members:
        if m.member_id == consumer_id:
            return m
    raise not_found(f"Consumer {consumer_id} cannot be found in consumer group {d.group_id}.")


def _partition_id(raw: str) -> int:
    return parse_kafka_int(raw, "int32", "partition_id")


def group_path(request: Request) -> list[str]:
    """The decoded segments after ``.../consumer-groups/``, split on the raw (still
    percent-encoded) path: group and member ids may hold ``/`` (KIP-848 member ids are base64),
    which a ``self`` link sends as ``%2F`` and routing on the decoded path would split."""
    raw = request.scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else quote(request.url.path)
    segments = path.split("?", 1)[0].split("/")
    # "", "v3", "clusters", <cluster_id>, "consumer-groups", <segments...>
    return [unquote(p) for p in segments[5:]]


# ---------------------------------------------------------------------------- resources
def group_data(links: V3Links, d: GroupDescription) -> dict[str, Any]:
    gid = d.group_id
    return resource(
        "KafkaConsumerGroup",
        links.url("consumer-groups", gid),
        links.crn(("consumer-group", gid)),
        {
            "cluster_id": links.cluster_id,
            "consumer_group_id": gid,
            "is_simple": d.group_type == CLASSIC and d.protocol_type == "",
            "partition_assignor": d.assignor,
            "state": STATES.get(d.state, "UNKNOWN"),
            "type": d.group_type.upper() if d.group_type in (CLASSIC, CONSUMER) else "UNKNOWN",
            # A KIP-848 group with members still on the classic protocol; the group admin does
            # not report member types, and Zurau's coordinator admits no such members.
            "is_mixed_consumer_group": False,
            "coordinator": links.related("brokers", d.coordinator.node_id),
            "consumers": links.related("consumer-groups", gid, "consumers"),
            "lag_summary": links.related("consumer-groups", gid, "lag-summary"),
        },
    )


def consumer_data(links: V3Links, gid: str, m: MemberDescription) -> dict[str, Any]:
    return resource(
        "KafkaConsumer",
        links.url("consumer-groups", gid, "consumers", m.member_id),
        links.crn(("consumer-group", gid), ("consumer", m.member_id)),
        {
            "cluster_id": links.cluster_id,
            "consumer_group_id": gid,
            "consumer_id": m.member_id,
            "instance_id": m.instance_id,
            "client_id": m.client_id,
            "assignments": links.related("consumer-groups", gid, "consumers", m.member_id, "assignments"),
        },
    )


def assignment_data(links: V3Links, gid: str, consumer_id: str, tp: TopicPartition) -> dict[str, Any]:
    return resource(
        "KafkaConsumerAssignment",
        links.url("consumer-groups", gid, "consumers", consumer_id, "assignments", tp.topic, "partitions", tp.partition),
        links.crn(("consumer-group", gid), ("consumer", consumer_id), ("assignment", tp.topic), ("partition", tp.partition)),
        {
            "cluster_id": links.cluster_id,
            "consumer_group_id": gid,
            "consumer_id": consumer_id,
            "topic_name": tp.topic,
            "partition_id": tp.partition,
            "partition": links.related("topics", tp.topic, "partitions", tp.partition),
            "lag": links.related("consumer-groups", gid, "lags", tp.topic, "partitions", tp.partition),
        },
    )


async def lags(ga: GroupAdmin, d: GroupDescription) -> list[dict[str, Any]]:
    """The group's lag rows (see the module docstring), largest lag first; 404 without any."""
    _, rows = await lag_rows(ga, d.group_id, d, isolation_level=READ_COMMITTED)
    members = {m.member_id: m for m in d.members}
    out = []
    for r in rows:
        if r["committed"] is None or r["log_end"] is None:
            continue
        owner = members.get(r["member"] or "")
        out.append(
            {
                "topic_name": r["topic"],
                "partition_id": r["partition"],
                "current_offset": r["committed"],
                "log_end_offset": r["log_end"],
                "lag": max(0, r["log_end"] - r["committed"]),
                "consumer_id": owner.member_id if owner else "",
                "instance_id": owner.instance_id if owner else None,
                "client_id": owner.client_id if owner else "",
            }
        )
    if not out:
        raise not_found(f"Consumer group {d.group_id} has no committed offsets, so no lags.")
    out.sort(key=lambda r: (-r["lag"], r["topic_name"], r["partition_id"]))
    return out


def lag_data(links: V3Links, gid: str, row: dict[str, Any]) -> dict[str, Any]:
    topic, partition = row["topic_name"], row["partition_id"]
    return resource(
        "KafkaConsumerLag",
        links.url("consumer-groups", gid, "lags", topic, "partitions", partition),
        links.crn(("consumer-group", gid), ("lag", topic), ("partition", partition)),
        {"cluster_id": links.cluster_id, "consumer_group_id": gid, **row},
    )


def lag_summary_data(links: V3Links, gid: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    in_order = sorted(rows, key=lambda r: (r["topic_name"], r["partition_id"]))
    top = in_order[0]
    for r in in_order:
        if r["lag"] > top["lag"]:
            top = r
    return resource(
        "KafkaConsumerGroupLagSummary",
        links.url("consumer-groups", gid, "lag-summary"),
        links.crn(("consumer-group", gid)) + "/lag-summary",
        {
            "cluster_id": links.cluster_id,
            "consumer_group_id": gid,
            "max_lag_consumer_id": top["consumer_id"],
            "max_lag_instance_id": top["instance_id"],
            "max_lag_client_id": top["client_id"],
            "max_lag_topic_name": top["topic_name"],
            "max_lag_partition_id": top["partition_id"],
            "max_lag": top["lag"],
            "total_lag": sum(r["lag"] for r in rows),
            "max_lag_consumer": links.related("consumer-groups", gid, "consumers", top["consumer_id"]),
            "max_lag_partition": links.related("topics", top["topic_name"], "partitions", top["partition_id"]),
        },
    )


# ---------------------------------------------------------------------------- routes
def routes(api: ProxyApi) -> list[BaseRoute]:
    async def context(request: Request) -> tuple[V3Links, GroupAdmin]:
        cid = await api.check_cluster(request)
        return V3Links(api.base_url(request), cid), (await api.clients(request)).groups

    @endpoint
    async def list_groups(request: Request) -> Response:
        links, ga = await context(request)
        listings = [
            g.group_id
            for g in await ga.list_groups()
            if g.group_type in (CLASSIC, CONSUMER, None) and g.protocol_type in CONSUMER_PROTOCOL_TYPES
        ]
        described = await ga.describe_groups(listings) if listings else {}
        groups = []
        for gid in sorted(described):
            d = described[gid]
            if isinstance(d, (GroupIdNotFoundError, GroupAuthorizationFailedError)):
                continue  # gone since listed, or not ours to see
            if isinstance(d, KafkaError):
                raise d
            if _is_consumer_group(d):
                groups.append(group_data(links, d))
        return _json(collection("KafkaConsumerGroupList", links.url("consumer-groups"), groups))

    Handler = Callable[[V3Links, GroupAdmin, GroupDescription, list[str]], Awaitable[Any]]

    async def get_group(links: V3Links, ga: GroupAdmin, d: GroupDescription, _: list[str]) -> Any:
        return group_data(links, d)

    async def list_consumers(links: V3Links, ga: GroupAdmin, d: GroupDescription, _: list[str]) -> Any:
        members = sorted(d.members, key=lambda m: m.member_id)
        return collection(
            "KafkaConsumerList",
            links.url("consumer-groups", d.group_id, "consumers"),
            (consumer_data(links, d.group_id, m) for m in members),
        )

    async def get_consumer(links: V3Links, ga: GroupAdmin, d: GroupDescription, args: list[str]) -> Any:
        return consumer_data(links, d.group_id, _member(d, args[0]))

    async def list_assignments(links: V3Links, ga: GroupAdmin, d: GroupDescription, args: list[str]) -> Any:
        m = _member(d, args[0])
        return collection(
            "KafkaConsumerAssignmentList",
            links.url("consumer-groups", d.group_id, "consumers", m.member_id, "assignments"),
            (assignment_data(links, d.group_id, m.member_id, tp) for tp in sorted(m.assignment)),
        )

    async def get_assignment(links: V3Links, ga: GroupAdmin, d: GroupDescription, args: list[str]) -> Any:
        m = _member(d, args[0])
        tp = TopicPartition(args[1], _partition_id(args[2]))
        if tp not in m.assignment:
            raise not_found(f"Consumer {m.member_id} is not assigned partition {tp.partition} of topic {tp.topic}.")
        return assignment_data(links, d.group_id, m.member_id, tp)

    async def list_lags(links: V3Links, ga: GroupAdmin, d: GroupDescription, _: list[str]) -> Any:
        rows = await lags(ga, d)
        return collection(
            "KafkaConsumerLagList",
            links.url("consumer-groups", d.group_id, "lags"),
            (lag_data(links, d.group_id, r) for r in rows),
        )

    async def get_lag(links: V3Links, ga: GroupAdmin, d: GroupDescription, args: list[str]) -> Any:
        topic, partition = args[0], _partition_id(args[1])
        for r in await lags(ga, d):
            if r["topic_name"] == topic and r["partition_id"] == partition:
                return lag_data(links, d.group_id, r)
        raise not_found(f"Consumer group {d.group_id} has no committed offset for partition {partition} of topic {topic}.")

    async def get_lag_summary(links: V3Links, ga: GroupAdmin, d: GroupDescription, _: list[str]) -> Any:
        return lag_summary_data(links, d.group_id, await lags(ga, d))

    # Shapes of the segments after the group id: literals, and None for a parameter.
    shapes: list[tuple[tuple[str | None, ...], Handler]] = [
        ((), get_group),
        (("consumers",), list_consumers),
        (("consumers", None), get_consumer),
        (("consumers", None, "assignments"), list_assignments),
        (("consumers", None, "assignments", None, "partitions", None), get_assignment),
        (("lag-summary",), get_lag_summary),
        (("lags",), list_lags),
        (("lags", None, "partitions", None), get_lag),
    ]

    @endpoint
    async def in_group(request: Request) -> Response:
        segments = group_path(request)
        if not segments or not segments[0]:
            raise RestProxyError(404, 404, "HTTP 404 Not Found")
        rest = segments[1:]
        for shape, handler in shapes:
            if len(shape) == len(rest) and all(lit is None or lit == seg for lit, seg in zip(shape, rest, strict=True)):
                links, ga = await context(request)
                d = await _group(ga, segments[0])
                args = [seg for lit, seg in zip(shape, rest, strict=True) if lit is None]
                return _json(await handler(links, ga, d, args))
        raise RestProxyError(404, 404, "HTTP 404 Not Found")

    base = "/v3/clusters/{cluster_id}/consumer-groups"
    return [
        Route(base, list_groups, methods=["GET"]),
        Route(base + "/{group_path:path}", in_group, methods=["GET"]),
    ]
