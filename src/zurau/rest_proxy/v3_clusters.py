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
* Config entries are DescribeConfigs answers with synonyms, in the broker's order of priority:
  a sensitive value is null (the broker never sends it), ``is_default`` is true exactly when the
  source is ``DEFAULT_CONFIG`` (as Kafka's Java client says), sources the v3 API does not name
  are ``UNKNOWN``; lists are sorted by name (by broker id, then name, across brokers).
* The cluster's refusal of a change is answered with the broker's own message and the status
  :func:`~zurau.rest_proxy.errors.from_kafka_error` gives it: Zurau refuses dynamic broker
  configs with INVALID_REQUEST, answered 400; INVALID_CONFIG and POLICY_VIOLATION are 400, an
  authorization failure 403.
* Request bodies: a JSON object (400 otherwise, 413 above ``max.request.bytes``). An update is
  ``{"value": string|null}``; a batch is ``{"data": [{"name", "value", "operation"}...],
  "validate_only": bool}`` with ``operation`` SET (the default) or DELETE. Like Jackson in
  Confluent's proxy, a number or boolean given where a string is expected is taken as its text;
  an object or array is not (400). Unknown fields are ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from zurau.client import typed_api
from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ConfigSource, ResourceType
from zurau.client.cluster import BrokerNode, ClusterMetadata
from zurau.edge_requests import parse_json, parse_kafka_int, read_body
from zurau.protocol.errors import KafkaError, for_code
from zurau.protocol.messages import DescribeConfigsResponseResultsConfigs
from zurau.rest_proxy.errors import KAFKA_ERROR, RestProxyError, bad_request, endpoint, not_found
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.v3_resources import V3Links, collection, resource

CLUSTER_CONFIG_TYPE = "BROKER"
"""The only ``config_type`` of cluster configs (``/broker-configs``): Kafka's default BROKER resource."""

# The ConfigSource names of the v3 API; others (CLIENT_METRICS_CONFIG, GROUP_CONFIG) are UNKNOWN.
_V3_SOURCES = frozenset(
    {
        "DYNAMIC_TOPIC_CONFIG",
        "DYNAMIC_BROKER_LOGGER_CONFIG",
        "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
    }
)


def _json(body: Any, status: int = 200) -> Response:
    return JSONResponse(body, status_code=status)


def _no_content() -> Response:
    return Response(status_code=204)


# ------------------------------------------------------------------ config entries
def source_name(code: int | None) -> str:
    """A DescribeConfigs source code as the v3 API names it (``UNKNOWN`` for the rest)."""
    try:
        name = ConfigSource(code).name if code is not None else "UNKNOWN"
    except ValueError:
        return "UNKNOWN"
    return name if name in _V3_SOURCES else "UNKNOWN"


def config_fields(entry: DescribeConfigsResponseResultsConfigs) -> dict[str, Any]:
    """The fields every v3 config resource has (``AbstractConfigData``), from one DescribeConfigs
    entry asked with synonyms."""
    code = entry.get("config_source")
    if code is None or code < 0:  # DescribeConfigs v0 (no source): Kafka's client guesses as here
        code = int(ConfigSource.DEFAULT_CONFIG if entry.get("is_default") else ConfigSource.UNKNOWN)
    source = source_name(code)
    return {
        "name": entry["name"],
        "value": entry.get("value"),
        "is_default": source == "DEFAULT_CONFIG",
        "is_read_only": bool(entry.get("read_only")),
        "is_sensitive": bool(entry.get("is_sensitive")),
        "source": source,
        "synonyms": [
            {"name": s["name"], "value": s.get("value"), "source": source_name(s.get("source"))}
            for s in entry.get("synonyms") or ()
        ],
    }


async def describe_configs(
    admin: AdminClient, resources: Sequence[ConfigResource]
) -> dict[ConfigResource, list[DescribeConfigsResponseResultsConfigs] | KafkaError]:
    """DescribeConfigs with synonyms (which :meth:`AdminClient.describe_configs` does not ask
    for), a broker's resource sent to that broker as Kafka requires, the rest to any broker.
    Each resource's entries, or its error."""
    brokers = admin.cluster.metadata.brokers
    by_node: dict[int | None, list[ConfigResource]] = {}
    for r in resources:
        node: int | None = None
        if r.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and r.name:
            try:
                node = int(r.name)
            except ValueError:
                node = None
            if node not in brokers:
                node = None
        by_node.setdefault(node, []).append(r)
    out: dict[ConfigResource, list[DescribeConfigsResponseResultsConfigs] | KafkaError] = {}

    async def one(node: int | None, rs: list[ConfigResource]) -> None:
        call = typed_api.DESCRIBE_CONFIGS(
            {
                "resources": [
                    {"resource_type": int(r.type), "resource_name": r.name, "configuration_keys": None}
                    for r in rs
                ],
                "include_synonyms": True,
                "include_documentation": False,
            }
        )
        resp = await admin.cluster.call(node, call)
        for res in resp["results"]:
            key = ConfigResource(ResourceType(res["resource_type"]), res["resource_name"])
            code = res["error_code"]
            if code:
                out[key] = for_code(code)(res.get("error_message") or f"cannot describe the configs of {key.name!r}")
            else:
                out[key] = list(res["configs"])

    await asyncio.gather(*(one(n, rs) for n, rs in by_node.items()))
    return out


async def _entries(admin: AdminClient, res: ConfigResource) -> list[DescribeConfigsResponseResultsConfigs]:
    answer = (await describe_configs(admin, [res])).get(res)
    if answer is None:
        raise RestProxyError(500, KAFKA_ERROR, f"the cluster did not describe the configs of {_resource_text(res)}")
    if isinstance(answer, KafkaError):
        raise answer
    return sorted(answer, key=lambda e: e["name"])


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


async def _body(api: ProxyApi, request: Request) -> dict[str, Any]:
    raw = await read_body(request, api.config.max_request_bytes)
    if not raw.strip():
        raise bad_request("The request body is empty: a JSON object is expected.")
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise bad_request(f"The request body must be a JSON object, not {_json_type(body)}.")
    return body


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _text(value: Any, field: str) -> str | None:
    """A JSON value bound for a string field: strings and null as they are, numbers and booleans
    as their text (as Jackson coerces scalars), objects and arrays refused."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise bad_request(f"{field} must be a string, not {_json_type(value)}.")


def _flag(value: Any, field: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise bad_request(f"{field} must be a boolean, not {_json_type(value)}.")


def update_value(body: Mapping[str, Any]) -> str | None:
    """The ``value`` of an ``UpdateConfigRequestData`` body (null when absent)."""
    return _text(body.get("value"), "value")


def alter_batch(body: Mapping[str, Any]) -> tuple[list[AlterConfigOp], bool]:
    """The operations and ``validate_only`` of an ``AlterConfigBatchRequestData`` body."""
    data = body.get("data")
    if not isinstance(data, list):
        raise bad_request(
            "data must be an array of {\"name\", \"value\", \"operation\"}" + ("" if data is None else f", not {_json_type(data)}") + "."
        )
    ops: list[AlterConfigOp] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise bad_request(f"data[{i}] must be an object, not {_json_type(item)}.")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request(f"data[{i}].name must be a non-empty string.")
        operation = item.get("operation")
        if operation is None:
            op = AlterOp.SET
        elif isinstance(operation, str) and operation.upper() in ("SET", "DELETE"):
            op = AlterOp[operation.upper()]
        else:
            raise bad_request(f"data[{i}].operation must be SET or DELETE, not {operation!r}.")
        value = _text(item.get("value"), f"data[{i}].value")
        ops.append(AlterConfigOp(name, op, None if op is AlterOp.DELETE else value))
    return ops, _flag(body.get("validate_only"), "validate_only")


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


def broker_config_data(links: V3Links, broker_id: int, entry: DescribeConfigsResponseResultsConfigs) -> dict[str, Any]:
    name = entry["name"]
    return resource(
        "KafkaBrokerConfig",
        links.url("brokers", broker_id, "configs", name),
        links.crn(("broker", broker_id), ("config", name)),
        {"cluster_id": links.cluster_id, "broker_id": broker_id, **config_fields(entry)},
    )


def cluster_config_data(links: V3Links, entry: DescribeConfigsResponseResultsConfigs) -> dict[str, Any]:
    name = entry["name"]
    return resource(
        "KafkaClusterConfig",
        links.url("broker-configs", name),
        links.crn(("broker-config", name)),
        {"cluster_id": links.cluster_id, "config_type": CLUSTER_CONFIG_TYPE, **config_fields(entry)},
    )


def _broker_resource(broker_id: int) -> ConfigResource:
    return ConfigResource(ResourceType.BROKER, str(broker_id))


CLUSTER_RESOURCE = ConfigResource(ResourceType.BROKER, "")


def _find(entries: list[DescribeConfigsResponseResultsConfigs], name: str) -> DescribeConfigsResponseResultsConfigs | None:
    return next((e for e in entries if e["name"] == name), None)


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
        items = []
        for topic in sorted(md.topics):
            for p in md.topics[topic].partitions:
                if broker_id not in p.replicas:
                    continue
                items.append(
                    resource(
                        "KafkaReplica",
                        links.url("topics", topic, "partitions", p.partition, "replicas", broker_id),
                        links.crn(("topic", topic), ("partition", p.partition), ("replica", broker_id)),
                        {
                            "cluster_id": links.cluster_id,
                            "topic_name": topic,
                            "partition_id": p.partition,
                            "broker_id": broker_id,
                            "is_leader": p.leader == broker_id,
                            "is_in_sync": broker_id in p.isr,
                            "broker": links.related("brokers", broker_id),
                        },
                    )
                )
        return _json(collection("KafkaReplicaList", links.url("brokers", broker_id, "partition-replicas"), items))

    # ------------------------------------------------------------ broker configs
    @endpoint
    async def list_all_broker_configs(request: Request) -> Response:
        admin, md, links = await _cluster(api, request)
        ids = sorted(md.brokers)
        answers = await describe_configs(admin, [_broker_resource(b) for b in ids])
        items = []
        for b in ids:
            answer = answers.get(_broker_resource(b))
            if isinstance(answer, KafkaError):
                raise answer
            if answer is None:
                raise RestProxyError(500, KAFKA_ERROR, f"the cluster did not describe the configs of broker {b}")
            items += [broker_config_data(links, b, e) for e in sorted(answer, key=lambda e: e["name"])]
        return _json(collection("KafkaBrokerConfigList", links.url("brokers", "-", "configs"), items))

    @endpoint
    async def list_broker_configs(request: Request) -> Response:
        broker_id = _broker_id(request)
        admin, md, links = await _cluster(api, request)
        _known_broker(md, broker_id)
        entries = await _entries(admin, _broker_resource(broker_id))
        items = [broker_config_data(links, broker_id, e) for e in entries]
        return _json(collection("KafkaBrokerConfigList", links.url("brokers", broker_id, "configs"), items))

    async def _broker_config(request: Request) -> tuple[AdminClient, V3Links, int, str, DescribeConfigsResponseResultsConfigs]:
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
        value = update_value(await _body(api, request))
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
        ops, validate_only = alter_batch(await _body(api, request))
        broker_id = _broker_id(request)
        admin, md, links = await _cluster(api, request)
        _known_broker(md, broker_id)
        res = _broker_resource(broker_id)
        known = {e["name"] for e in await _entries(admin, res)}
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
        value = update_value(await _body(api, request))
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
        ops, validate_only = alter_batch(await _body(api, request))
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
