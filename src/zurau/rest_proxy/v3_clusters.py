"""v3 clusters, brokers and broker configs (Confluent's REST Admin API v3).

Routes, under ``/v3/clusters`` (answers: a v3 resource or collection, or 204 for changes):

* ``GET /v3/clusters`` (``KafkaClusterList``), ``GET /{cluster_id}`` (``KafkaCluster``);
* ``GET /{cluster_id}/brokers`` (``KafkaBrokerList``), ``GET .../brokers/{broker_id}``
  (``KafkaBroker``), ``GET .../brokers/{broker_id}/partition-replicas`` (``KafkaReplicaList``);
* ``GET .../brokers/-/configs`` (every broker's) and ``GET .../brokers/{broker_id}/configs``
  (``KafkaBrokerConfigList``), ``GET|PUT|DELETE .../brokers/{broker_id}/configs/{name}``
  (``KafkaBrokerConfig``, 204, 204), ``POST .../brokers/{broker_id}/configs:alter`` (204);
* ``GET .../broker-configs`` (``KafkaClusterConfigList``), ``GET|PUT|DELETE
  .../broker-configs/{name}`` (``KafkaClusterConfig``, 204, 204), ``POST
  .../broker-configs:alter`` (204).

Invariants:

* Every answer describes the cluster as its Metadata says at the time of the request (one
  Metadata request each: brokers, controller, and for partition replicas every topic).
* A path's cluster id must be this cluster's (404 "Cluster X cannot be found."); a path's broker
  id is a Kafka int32 (400 otherwise) naming a broker of the cluster (404 "Broker N cannot be
  found."); a config name that the resource does not list is 404 on GET, and on PUT, DELETE and
  ``configs:alter`` of a broker ("Config X cannot be found for BROKER N in cluster C."): as
  Confluent's proxy, those check that the config exists before altering it. The cluster-wide
  resource (Kafka's default BROKER resource, name ``""``) lists only the configs set at that
  level, so its PUT, DELETE and ``:alter`` go to the cluster without that check (an upsert).
* Config entries are DescribeConfigs answers with synonyms, shown as :mod:`.v3_configs` says;
  lists are sorted by name (by broker id, then name, across brokers).
* The cluster's refusal of a change is answered with the broker's own message and the status
  :func:`~zurau.rest_proxy.errors.from_kafka_error` gives it: Zurau refuses dynamic broker
  configs with INVALID_REQUEST, answered 400; INVALID_CONFIG and POLICY_VIOLATION are 400, an
  authorization failure 403.
* Request bodies (:mod:`.request_bodies`): a JSON object (400 otherwise, 413 above
  ``max.request.bytes``). An update is ``{"value": string|null}``; a batch is ``{"data":
  [{"name", "value", "operation"}...], "validate_only": bool}`` with ``operation`` SET (the
  default) or DELETE, in any case, and ``validate_only`` also ``"true"``/``"false"``. Like Jackson
  in Confluent's proxy, a number or boolean given where a string is expected is taken as its
  text; an object or array is not (400). Unknown fields are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigEntry, ConfigResource, ResourceType
from zurau.client.cluster import BrokerNode, ClusterMetadata
from zurau.edge_requests import parse_kafka_int
from zurau.protocol.errors import KafkaError
from zurau.rest_proxy.errors import KAFKA_ERROR, RestProxyError, bad_request, endpoint, not_found
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.request_bodies import json_object, json_type, optional_bool, required_text, text
from zurau.rest_proxy.v3_configs import config_fields
from zurau.rest_proxy.v3_resources import V3Links, collection, resource
from zurau.rest_proxy.v3_topics import replica_json

CLUSTER_CONFIG_TYPE = "BROKER"
"""The only ``config_type`` of cluster configs (``/broker-configs``): Kafka's default BROKER resource."""


def _json(body: Any, status: int = 200) -> Response:
    return JSONResponse(body, status_code=status)


def _no_content() -> Response:
    return Response(status_code=204)


# ------------------------------------------------------------------ config entries
async def _entries(admin: AdminClient, res: ConfigResource) -> list[ConfigEntry]:
    answer = (await admin.describe_configs([res], include_synonyms=True)).get(res)
    if answer is None:
        raise RestProxyError(500, KAFKA_ERROR, f"the cluster did not describe the configs of {_resource_text(res)}")
    if isinstance(answer, KafkaError):
        raise answer
    return sorted(answer, key=lambda e: e.name)


async def _alter(admin: AdminClient, res: ConfigResource, ops: Sequence[AlterConfigOp], validate_only: bool) -> None:
    results = await admin.incremental_alter_configs({res: list(ops)}, validate_only=validate_only)
    if res not in results:
        raise RestProxyError(500, KAFKA_ERROR, f"the cluster did not answer for the configs of {_resource_text(res)}")
    err = results[res]
    if err is not None:
        raise err


def _resource_text(res: ConfigResource) -> str:
    return f"{res.type.name} {res.name}" if res.name else f"the default {res.type.name} resource"


def _config_missing(name: str, res: ConfigResource, cluster_id: str) -> RestProxyError:
    return not_found(f"Config {name} cannot be found for {res.type.name} {res.name} in cluster {cluster_id}.")


# ------------------------------------------------------------------ request parts
async def _cluster(
    api: ProxyApi, request: Request, *, every_topic: bool = False
) -> tuple[AdminClient, ClusterMetadata, V3Links]:
    """The request's admin client, the cluster's metadata refreshed now (its brokers, and every
    topic when ``every_topic``) and the links, after checking the path's cluster id."""
    admin = (await api.clients(request)).admin
    md = await admin.cluster.refresh_metadata(None if every_topic else [])
    cid = await api.check_cluster(request)
    return admin, md, V3Links(api.base_url(request), cid)


def _broker_id(request: Request) -> int:
    return parse_kafka_int(request.path_params["broker_id"], "int32", "broker_id")


def _known_broker(md: ClusterMetadata, broker_id: int) -> BrokerNode:
    node = md.brokers.get(broker_id)
    if node is None:
        raise not_found(f"Broker {broker_id} cannot be found.")
    return node


def update_value(body: Mapping[str, Any]) -> str | None:
    """The ``value`` of an ``UpdateConfigRequestData`` body (null when absent)."""
    return text(body.get("value"), "value")


def alter_batch(body: Mapping[str, Any]) -> tuple[list[AlterConfigOp], bool]:
    """The operations and ``validate_only`` of an ``AlterConfigBatchRequestData`` body."""
    data = body.get("data")
    if not isinstance(data, list):
        raise bad_request(
            "data must be an array of {\"name\", \"value\", \"operation\"}" + ("" if data is None else f", not {json_type(data)}") + "."
        )
    ops: list[AlterConfigOp] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise bad_request(f"data[{i}] must be an object, not {json_type(item)}.")
        name = required_text(item.get("name"), f"data[{i}].name")
        operation = item.get("operation")
        if operation is None:
            op = AlterOp.SET
        elif isinstance(operation, str) and operation.upper() in ("SET", "DELETE"):
            op = AlterOp[operation.upper()]
        else:
            raise bad_request(f"data[{i}].operation must be SET or DELETE, not {operation!r}.")
        value = text(item.get("value"), f"data[{i}].value")
        ops.append(AlterConfigOp(name, op, None if op is AlterOp.DELETE else value))
    return ops, optional_bool(body.get("validate_only"), "validate_only", from_text=True)


# ------------------------------------------------------------------ resources
def cluster_data(links: V3Links, md: ClusterMetadata) -> dict[str, Any]:
    fields: dict[str, Any] = {"cluster_id": links.cluster_id}
    if md.controller_id >= 0:
        fields["controller"] = links.related("brokers", md.controller_id)
    fields.update(
        acls=links.related("acls"),
        brokers=links.related("brokers"),
        broker_configs=links.related("broker-configs"),
        consumer_groups=links.related("consumer-groups"),
        topics=links.related("topics"),
        partition_reassignments=links.related("topics", "-", "partitions", "-", "reassignment"),
    )
    return resource("KafkaCluster", links.url(), links.crn(), fields)


def broker_data(links: V3Links, node: BrokerNode) -> dict[str, Any]:
    b = node.node_id
    return resource(
        "KafkaBroker",
        links.url("brokers", b),
        links.crn(("broker", b)),
        {
            "cluster_id": links.cluster_id,
            "broker_id": b,
            "host": node.host,
            "port": node.port,
            "rack": node.rack,
            "configs": links.related("brokers", b, "configs"),
            "partition_replicas": links.related("brokers", b, "partition-replicas"),
        },
    )


def broker_config_data(links: V3Links, broker_id: int, entry: ConfigEntry) -> dict[str, Any]:
    name = entry.name
    return resource(
        "KafkaBrokerConfig",
        links.url("brokers", broker_id, "configs", name),
        links.crn(("broker", broker_id), ("config", name)),
        {"cluster_id": links.cluster_id, "broker_id": broker_id, **config_fields(entry)},
    )


def cluster_config_data(links: V3Links, entry: ConfigEntry) -> dict[str, Any]:
    name = entry.name
    return resource(
        "KafkaClusterConfig",
        links.url("broker-configs", name),
        links.crn(("broker-config", name)),
        {"cluster_id": links.cluster_id, "config_type": CLUSTER_CONFIG_TYPE, **config_fields(entry)},
    )


def _broker_resource(broker_id: int) -> ConfigResource:
    return ConfigResource(ResourceType.BROKER, str(broker_id))


CLUSTER_RESOURCE = ConfigResource(ResourceType.BROKER, "")


def _find(entries: list[ConfigEntry], name: str) -> ConfigEntry | None:
    return next((e for e in entries if e.name == name), None)


def routes(api: ProxyApi) -> list[BaseRoute]:
    # ------------------------------------------------------------ clusters
    @endpoint
    async def list_clusters(request: Request) -> Response:
        admin = (await api.clients(request)).admin
        md = await admin.cluster.refresh_metadata([])
        base = api.base_url(request)
        items = [cluster_data(V3Links(base, md.cluster_id), md)] if md.cluster_id else []
        return _json(collection("KafkaClusterList", f"{base}/v3/clusters", items))

    @endpoint
    async def get_cluster(request: Request) -> Response:
        _, md, links = await _cluster(api, request)
        return _json(cluster_data(links, md))

    # ------------------------------------------------------------ brokers
    @endpoint
    async def list_brokers(request: Request) -> Response:
        _, md, links = await _cluster(api, request)
        items = [broker_data(links, md.brokers[b]) for b in sorted(md.brokers)]
        return _json(collection("KafkaBrokerList", links.url("brokers"), items))

    @endpoint
    async def get_broker(request: Request) -> Response:
        broker_id = _broker_id(request)
        _, md, links = await _cluster(api, request)
        return _json(broker_data(links, _known_broker(md, broker_id)))

    @endpoint
    async def list_broker_replicas(request: Request) -> Response:
        broker_id = _broker_id(request)
        _, md, links = await _cluster(api, request, every_topic=True)
        _known_broker(md, broker_id)
        items = [
            replica_json(links, topic, p, broker_id)
            for topic in sorted(md.topics)
            for p in md.topics[topic].partitions
            if broker_id in p.replicas
        ]
        return _json(collection("KafkaReplicaList", links.url("brokers", broker_id, "partition-replicas"), items))

    # ------------------------------------------------------------ broker configs
    @endpoint
    async def list_all_broker_configs(request: Request) -> Response:
        admin, md, links = await _cluster(api, request)
        ids = sorted(md.brokers)
        answers = await admin.describe_configs([_broker_resource(b) for b in ids], include_synonyms=True)
        items = []
        for b in ids:
            answer = answers.get(_broker_resource(b))
            if isinstance(answer, KafkaError):
                raise answer
            if answer is None:
                raise RestProxyError(500, KAFKA_ERROR, f"the cluster did not describe the configs of broker {b}")
            items += [broker_config_data(links, b, e) for e in sorted(answer, key=lambda e: e.name)]
        return _json(collection("KafkaBrokerConfigList", links.url("brokers", "-", "configs"), items))

    @endpoint
    async def list_broker_configs(request: Request) -> Response:
        broker_id = _broker_id(request)
        admin, md, links = await _cluster(api, request)
        _known_broker(md, broker_id)
        entries = await _entries(admin, _broker_resource(broker_id))
        items = [broker_config_data(links, broker_id, e) for e in entries]
        return _json(collection("KafkaBrokerConfigList", links.url("brokers", broker_id, "configs"), items))

    async def _broker_config(request: Request) -> tuple[AdminClient, V3Links, int, str, ConfigEntry]:
        """The broker config the path names (404 when the broker or the config is unknown)."""
        broker_id = _broker_id(request)
        name = request.path_params["name"]
        admin, md, links = await _cluster(api, request)
        _known_broker(md, broker_id)
        res = _broker_resource(broker_id)
        entry = _find(await _entries(admin, res), name)
        if entry is None:
            raise _config_missing(name, res, links.cluster_id)
        return admin, links, broker_id, name, entry

    @endpoint
    async def get_broker_config(request: Request) -> Response:
        _, links, broker_id, _, entry = await _broker_config(request)
        return _json(broker_config_data(links, broker_id, entry))

    @endpoint
    async def update_broker_config(request: Request) -> Response:
        value = update_value(await json_object(api, request))
        admin, _, broker_id, name, _ = await _broker_config(request)
        await _alter(admin, _broker_resource(broker_id), [AlterConfigOp(name, AlterOp.SET, value)], False)
        return _no_content()

    @endpoint
    async def reset_broker_config(request: Request) -> Response:
        admin, _, broker_id, name, _ = await _broker_config(request)
        await _alter(admin, _broker_resource(broker_id), [AlterConfigOp(name, AlterOp.DELETE)], False)
        return _no_content()

    @endpoint
    async def alter_broker_configs(request: Request) -> Response:
        ops, validate_only = alter_batch(await json_object(api, request))
        broker_id = _broker_id(request)
        admin, md, links = await _cluster(api, request)
        _known_broker(md, broker_id)
        res = _broker_resource(broker_id)
        known = {e.name for e in await _entries(admin, res)}
        for op in ops:
            if op.name not in known:
                raise _config_missing(op.name, res, links.cluster_id)
        await _alter(admin, res, ops, validate_only)
        return _no_content()

    # ------------------------------------------------------------ cluster-wide broker configs
    @endpoint
    async def list_cluster_configs(request: Request) -> Response:
        admin, _, links = await _cluster(api, request)
        items = [cluster_config_data(links, e) for e in await _entries(admin, CLUSTER_RESOURCE)]
        return _json(collection("KafkaClusterConfigList", links.url("broker-configs"), items))

    @endpoint
    async def get_cluster_config(request: Request) -> Response:
        name = request.path_params["name"]
        admin, _, links = await _cluster(api, request)
        entry = _find(await _entries(admin, CLUSTER_RESOURCE), name)
        if entry is None:
            raise not_found(f"Config {name} cannot be found for the cluster-wide broker configs of cluster {links.cluster_id}.")
        return _json(cluster_config_data(links, entry))

    @endpoint
    async def update_cluster_config(request: Request) -> Response:
        value = update_value(await json_object(api, request))
        name = request.path_params["name"]
        admin, _, _ = await _cluster(api, request)
        await _alter(admin, CLUSTER_RESOURCE, [AlterConfigOp(name, AlterOp.SET, value)], False)
        return _no_content()

    @endpoint
    async def reset_cluster_config(request: Request) -> Response:
        name = request.path_params["name"]
        admin, _, _ = await _cluster(api, request)
        await _alter(admin, CLUSTER_RESOURCE, [AlterConfigOp(name, AlterOp.DELETE)], False)
        return _no_content()

    @endpoint
    async def alter_cluster_configs(request: Request) -> Response:
        ops, validate_only = alter_batch(await json_object(api, request))
        admin, _, _ = await _cluster(api, request)
        await _alter(admin, CLUSTER_RESOURCE, ops, validate_only)
        return _no_content()

    c = "/v3/clusters/{cluster_id}"
    b = c + "/brokers/{broker_id}"
    return [
        Route("/v3/clusters", list_clusters, methods=["GET"]),
        Route(c, get_cluster, methods=["GET"]),
        Route(c + "/brokers", list_brokers, methods=["GET"]),
        # Before the {broker_id} routes: "-" means every broker here.
        Route(c + "/brokers/-/configs", list_all_broker_configs, methods=["GET"]),
        Route(b, get_broker, methods=["GET"]),
        Route(b + "/partition-replicas", list_broker_replicas, methods=["GET"]),
        Route(b + "/configs", list_broker_configs, methods=["GET"]),
        Route(b + "/configs:alter", alter_broker_configs, methods=["POST"]),
        Route(b + "/configs/{name}", get_broker_config, methods=["GET"]),
        Route(b + "/configs/{name}", update_broker_config, methods=["PUT"]),
        Route(b + "/configs/{name}", reset_broker_config, methods=["DELETE"]),
        Route(c + "/broker-configs", list_cluster_configs, methods=["GET"]),
        Route(c + "/broker-configs:alter", alter_cluster_configs, methods=["POST"]),
        Route(c + "/broker-configs/{name}", get_cluster_config, methods=["GET"]),
        Route(c + "/broker-configs/{name}", update_cluster_config, methods=["PUT"]),
        Route(c + "/broker-configs/{name}", reset_cluster_config, methods=["DELETE"]),
    ]
