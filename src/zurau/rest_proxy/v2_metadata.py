"""Confluent's v2 metadata API: topics, partitions and brokers, read from the cluster on each request.

* ``GET /topics``: the names of the topics that are not internal, sorted;
* ``GET /topics/{topic}``: ``{"name", "configs": {name: value}, "partitions": [...]}`` with every
  config of the topic (defaults included; a sensitive value is null);
* ``GET /topics/{topic}/partitions`` and ``.../partitions/{partition}``: ``{"partition",
  "leader", "replicas": [{"broker", "leader", "in_sync"}]}``;
* ``GET /topics/{topic}/partitions/{partition}/offsets``: ``{"beginning_offset", "end_offset"}``;
* ``GET /brokers``: ``{"brokers": [ids]}``, sorted.

Answers are ``application/vnd.kafka.v2+json``. A topic the cluster does not know (or whose name
it refuses) is 404/40401, a partition it does not have (or a partition id that is not a number)
404/40402, a topic the principal may not describe 403/40301.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from zurau.client.admin import EARLIEST, LATEST, ConfigResource, ResourceType
from zurau.client.cluster import PartitionMetadata, TopicMetadata
from zurau.client.types import TopicPartition
from zurau.protocol.errors import KafkaError, for_code
from zurau.rest_proxy.errors import (
    PARTITION_NOT_FOUND,
    TOPIC_NOT_FOUND,
    endpoint,
    from_kafka_error,
    not_found,
)
from zurau.rest_proxy.proxy_api import ProxyApi

V2_JSON = "application/vnd.kafka.v2+json"
_AUTHORIZATION_FAILED = {29, 31}


def v2_json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status_code=status, media_type=V2_JSON)


def partition_json(p: PartitionMetadata) -> dict[str, Any]:
    return {
        "partition": p.partition,
        "leader": p.leader,
        "replicas": [{"broker": b, "leader": b == p.leader, "in_sync": b in p.isr} for b in p.replicas],
    }


def routes(api: ProxyApi) -> list[BaseRoute]:
    async def topic_metadata(request: Request) -> TopicMetadata:
        name = request.path_params["topic"]
        admin = (await api.clients(request)).admin
        meta = (await admin.topic_metadata([name]))[name]
        if meta.error_code in _AUTHORIZATION_FAILED:
            raise from_kafka_error(for_code(meta.error_code)(f"not authorized to describe topic {name}"))
        if meta.error_code:
            raise not_found("Topic not found.", TOPIC_NOT_FOUND)
        return meta

    async def one_partition(request: Request) -> PartitionMetadata:
        meta = await topic_metadata(request)
        raw = request.path_params["partition"]
        if raw.isascii() and raw.isdigit() and len(raw) <= 10:
            for p in meta.partitions:
                if p.partition == int(raw):
                    return p
        raise not_found("Partition not found.", PARTITION_NOT_FOUND)

    @endpoint
    async def list_topics(request: Request) -> Response:
        return v2_json(await (await api.clients(request)).admin.list_topics())

    @endpoint
    async def get_topic(request: Request) -> Response:
        meta = await topic_metadata(request)
        admin = (await api.clients(request)).admin
        resource = ConfigResource(ResourceType.TOPIC, meta.name)
        found = (await admin.describe_configs([resource]))[resource]
        if isinstance(found, KafkaError):
            raise found
        configs = {c.name: c.value for c in found}
        parts = sorted(meta.partitions, key=lambda p: p.partition)
        return v2_json({"name": meta.name, "configs": configs, "partitions": [partition_json(p) for p in parts]})

    @endpoint
    async def list_partitions(request: Request) -> Response:
        meta = await topic_metadata(request)
        return v2_json([partition_json(p) for p in sorted(meta.partitions, key=lambda p: p.partition)])

    @endpoint
    async def get_partition(request: Request) -> Response:
        return v2_json(partition_json(await one_partition(request)))

    @endpoint
    async def partition_offsets(request: Request) -> Response:
        p = await one_partition(request)
        tp = TopicPartition(request.path_params["topic"], p.partition)
        admin = (await api.clients(request)).admin
        start = (await admin.list_offsets({tp: EARLIEST}))[tp]
        if isinstance(start, KafkaError):
            raise start
        end = (await admin.list_offsets({tp: LATEST}))[tp]
        if isinstance(end, KafkaError):
            raise end
        return v2_json({"beginning_offset": start.offset, "end_offset": end.offset})

    @endpoint
    async def list_brokers(request: Request) -> Response:
        cluster = (await api.clients(request)).admin.cluster
        md = await cluster.refresh_metadata([])
        return v2_json({"brokers": sorted(md.brokers)})

    return [
        Route("/topics", list_topics, methods=["GET"]),
        Route("/topics/{topic}", get_topic, methods=["GET"]),
        Route("/topics/{topic}/partitions", list_partitions, methods=["GET"]),
        Route("/topics/{topic}/partitions/{partition}", get_partition, methods=["GET"]),
        Route("/topics/{topic}/partitions/{partition}/offsets", partition_offsets, methods=["GET"]),
        Route("/brokers", list_brokers, methods=["GET"]),
    ]
