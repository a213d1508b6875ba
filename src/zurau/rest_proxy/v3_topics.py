"""The v3 topic endpoints of Confluent's REST Admin API: topics, their configs, partitions,
replicas, offsets and ongoing reassignments.

Paths under ``/v3/clusters/{cluster_id}/topics``:

* ``""``: GET (list), POST (create); ``/{topic_name}``: GET, PATCH (grow), DELETE;
* ``/-/configs``: GET (every topic's configs); ``/{topic_name}/configs``: GET;
  ``/{topic_name}/configs:alter``: POST (a batch of SET/DELETE); ``/{topic_name}/configs/{name}``:
  GET, PUT (set), DELETE (reset to the default);
* ``/{topic_name}/partitions``: GET; ``.../partitions/{partition_id}``: GET;
  ``.../{partition_id}/offset``: GET (earliest and latest); ``.../{partition_id}/replicas``: GET;
  ``.../{partition_id}/replicas/{broker_id}``: GET;
* ``/-/partitions/-/reassignment``, ``/{topic_name}/partitions/-/reassignment`` and
  ``/{topic_name}/partitions/{partition_id}/reassignment``: GET (ongoing reassignments).

Invariants, as Confluent's kafka-rest answers:

* Listings leave the broker's internal topics out (Kafka's ``listTopics`` default); asked for by
  name, an internal topic is answered with ``is_internal: true``. Topics are sorted by name,
  configs by name, partitions and replicas in the broker's order.
* A topic that does not exist (or whose name no topic can have) is 404/40401, a partition 404/40402,
  a config, replica or reassignment 404/404; a partition or broker id in a path that is not an
  int32 is 400. Creation answers 201 with ``Location`` (200 with
  ``validate_only``), built from CreateTopics' own answer: the broker's defaults
  (``num.partitions``, ``default.replication.factor``) apply to what the request leaves out, and
  ``replicas_assignments`` wins over both counts. Config changes check that the config exists
  first (404 otherwise), as Confluent's "safe" updates do.
* What the broker refuses as the client's mistake (topic exists, bad partitions, replication
  factor, assignment or config, policy, invalid request or name) is 400/40002 with the broker's
  own message; a body that is not the documented JSON is 400 before anything is sent; numbers are
  held to Kafka's ranges (partitions int32, replication factor int16) by
  :func:`~zurau.edge_requests.kafka_int`.
* Configs are described with their synonyms (DescribeConfigs ``include_synonyms``), shown as
  :mod:`.v3_configs` says. Bodies are read by :mod:`.request_bodies`: a config value is a string
  or null (a number or boolean stands for its JSON text); in ``configs:alter`` ``operation`` is
  exactly ``SET`` or ``DELETE`` and ``validate_only`` a JSON boolean.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from zurau.client import typed_api
from zurau.client.admin import (
    EARLIEST,
    LATEST,
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigEntry,
    ConfigResource,
    CreatedTopic,
    NewTopic,
    OffsetInfo,
    PartitionReassignment,
    ResourceType,
)
from zurau.client.cluster import PartitionMetadata, TopicMetadata
from zurau.client.errors import UnsupportedApiError, describe_error
from zurau.client.types import TopicPartition
from zurau.edge_requests import kafka_int, parse_kafka_int, query_flag
from zurau.protocol.acl import AclOperation
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, for_code
from zurau.rest_proxy.errors import (
    KAFKA_BAD_REQUEST,
    PARTITION_NOT_FOUND,
    TOPIC_NOT_FOUND,
    RestProxyError,
    bad_request,
    endpoint,
    from_kafka_error,
    not_found,
)
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.request_bodies import (
    json_object,
    json_type,
    optional_bool,
    optional_int,
    required_text,
    text,
)
from zurau.rest_proxy.v3_configs import config_fields
from zurau.rest_proxy.v3_resources import V3Links, collection, resource

_UNKNOWN_TOPIC = 3
_INVALID_TOPIC = 17
_REFUSED_AS_BAD_REQUEST = frozenset({17, 35, 36, 37, 38, 39, 40, 42, 44})
"""INVALID_TOPIC_EXCEPTION, UNSUPPORTED_VERSION, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, INVALID_REQUEST,
POLICY_VIOLATION: Confluent answers these 400/40002 with the broker's message."""

_TOPIC_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_MAX_TOPIC_NAME = 249
_METADATA_MAX_VERSION = 12
_AUTHORIZED_OPERATIONS_UNSET = -(2**31)
_GROWTH_WAIT_S = 5.0



# ---------------------------------------------------------------------------------- errors


def _broker_message(e: KafkaError) -> str:
    """The broker's own message when it sent one, else Kafka's name of the error."""
    if e.message and e.message != type(e).__name__:
        return e.message
    return describe_error(e)


def refused(e: KafkaError) -> RestProxyError:
    """A Kafka error from a topic operation as Confluent answers it (module docstring)."""
    if e.code in _REFUSED_AS_BAD_REQUEST:
        return RestProxyError(400, KAFKA_BAD_REQUEST, _broker_message(e))
    return from_kafka_error(e)


def topic_not_found(name: str) -> RestProxyError:
    return not_found(f"Topic {name} cannot be found.", TOPIC_NOT_FOUND)


def partition_not_found(topic: str, partition: int) -> RestProxyError:
    return not_found(f"Partition {partition} of topic {topic} cannot be found.", PARTITION_NOT_FOUND)


def _config_not_found(cluster_id: str, topic: str, name: str) -> RestProxyError:
    return not_found(f"Config {name} cannot be found for TOPIC {topic} in cluster {cluster_id}.")


def could_be_topic(name: str) -> bool:
    """Whether ``name`` is a legal Kafka topic name (anything else is not found, unasked)."""
    return 0 < len(name) <= _MAX_TOPIC_NAME and name not in (".", "..") and set(name) <= _TOPIC_NAME_CHARS


def _illegal_topic_name(name: str) -> str:
    shown = name if len(name) <= 60 else name[:57] + "..."
    if name in (".", ".."):
        return 'Invalid topic name: a topic cannot be named "." or "..".'
    if len(name) > _MAX_TOPIC_NAME:
        return f"Invalid topic name: it is longer than {_MAX_TOPIC_NAME} characters ({len(name)}): {shown}"
    return (
        f"Invalid topic name {shown!r}: it holds a character other than ASCII alphanumerics, '.', '_' and '-'."
    )


# ---------------------------------------------------------------------------------- request bodies


@dataclass(frozen=True)
class TopicRequest:
    """A CreateTopic body, checked (module docstring)."""

    name: str
    partitions: int | None
    replication_factor: int | None
    assignments: tuple[tuple[int, tuple[int, ...]], ...]
    configs: tuple[tuple[str, str | None], ...]
    validate_only: bool

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> TopicRequest:
        name = required_text(body.get("topic_name"), "topic_name")
        if not could_be_topic(name):  # as Confluent checks before asking (Kafka's Topic.validate)
            raise RestProxyError(400, KAFKA_BAD_REQUEST, _illegal_topic_name(name))
        return cls(
            name=name,
            partitions=optional_int(body.get("partitions_count"), "int32", "partitions_count"),
            replication_factor=optional_int(body.get("replication_factor"), "int16", "replication_factor"),
            assignments=_parse_assignments(body.get("replicas_assignments")),
            configs=_parse_create_configs(body.get("configs")),
            validate_only=optional_bool(body.get("validate_only"), "validate_only"),
        )


def _parse_assignments(raw: Any) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``{"<partition>": [broker, ...]}`` sorted by partition (empty or null: none given)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise bad_request(f"replicas_assignments must be an object, not {json_type(raw)}")
    out: list[tuple[int, tuple[int, ...]]] = []
    for key, brokers in raw.items():
        partition = parse_kafka_int(key, "int32", f"replicas_assignments key {key!r}")
        if not isinstance(brokers, list):
            raise bad_request(f"replicas_assignments[{key!r}] must be an array of broker ids")
        ids = tuple(kafka_int(b, "int32", f"replicas_assignments[{key!r}] broker id") for b in brokers)
        out.append((partition, ids))
    return tuple(sorted(out))


def _parse_create_configs(raw: Any) -> tuple[tuple[str, str | None], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad_request(f"configs must be an array, not {json_type(raw)}")
    seen: set[str] = set()
    out: list[tuple[str, str | None]] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise bad_request(f"configs[{i}] must be an object, not {json_type(entry)}")
        name = required_text(entry.get("name"), f"configs[{i}].name")
        if name in seen:
            raise bad_request(f"config {name} is given more than once")
        seen.add(name)
        out.append((name, text(entry.get("value"), f"configs[{i}].value")))
    return tuple(out)


def _parse_alter_ops(body: Mapping[str, Any]) -> list[AlterConfigOp]:
    data = body.get("data")
    if not isinstance(data, list):
        raise bad_request("data is required and must be an array of {name, value, operation}")
    ops: list[AlterConfigOp] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise bad_request(f"data[{i}] must be an object, not {json_type(entry)}")
        name = required_text(entry.get("name"), f"data[{i}].name")
        operation = entry.get("operation")
        if operation is None or operation == "SET":
            ops.append(AlterConfigOp(name, AlterOp.SET, text(entry.get("value"), f"data[{i}].value")))
        elif operation == "DELETE":
            ops.append(AlterConfigOp(name, AlterOp.DELETE))
        else:
            raise bad_request(f"data[{i}].operation must be SET or DELETE, not {str(operation)[:40]!r}")
    return ops


def _path_int(request: Request, key: str) -> int:
    return parse_kafka_int(request.path_params[key], "int32", key)


# ---------------------------------------------------------------------------------- answers


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status_code=status, media_type="application/json", headers=headers)


def _no_content() -> Response:
    return Response(status_code=204)


def topic_json(
    links: V3Links,
    name: str,
    *,
    is_internal: bool,
    partitions_count: int,
    replication_factor: int,
    authorized_operations: Sequence[str] | None = None,
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "cluster_id": links.cluster_id,
        "topic_name": name,
        "is_internal": is_internal,
        "replication_factor": replication_factor,
        "partitions_count": partitions_count,
        "partitions": links.related("topics", name, "partitions"),
        "configs": links.related("topics", name, "configs"),
        "partition_reassignments": links.related("topics", name, "partitions", "-", "reassignment"),
    }
    if authorized_operations is not None:
        fields["authorized_operations"] = list(authorized_operations)
    return resource("KafkaTopic", links.url("topics", name), links.crn(("topic", name)), fields)


def _topic_from_metadata(links: V3Links, t: TopicMetadata, ops: Sequence[str] | None = None) -> dict[str, Any]:
    return topic_json(
        links,
        t.name,
        is_internal=t.is_internal,
        partitions_count=len(t.partitions),
        replication_factor=len(t.partitions[0].replicas) if t.partitions else 0,
        authorized_operations=ops,
    )


def partition_json(links: V3Links, topic: str, p: PartitionMetadata) -> dict[str, Any]:
    fields: dict[str, Any] = {"cluster_id": links.cluster_id, "topic_name": topic, "partition_id": p.partition}
    if p.leader >= 0:
        fields["leader"] = links.related("topics", topic, "partitions", p.partition, "replicas", p.leader)
    fields["replicas"] = links.related("topics", topic, "partitions", p.partition, "replicas")
    fields["reassignment"] = links.related("topics", topic, "partitions", p.partition, "reassignment")
    return resource(
        "KafkaPartition",
        links.url("topics", topic, "partitions", p.partition),
        links.crn(("topic", topic), ("partition", p.partition)),
        fields,
    )


def replica_json(links: V3Links, topic: str, p: PartitionMetadata, broker_id: int) -> dict[str, Any]:
    return resource(
        "KafkaReplica",
        links.url("topics", topic, "partitions", p.partition, "replicas", broker_id),
        links.crn(("topic", topic), ("partition", p.partition), ("replica", broker_id)),
        {
            "cluster_id": links.cluster_id,
            "topic_name": topic,
            "partition_id": p.partition,
            "broker_id": broker_id,
            "is_leader": broker_id == p.leader,
            "is_in_sync": broker_id in p.isr,
            "broker": links.related("brokers", broker_id),
        },
    )


def reassignment_json(links: V3Links, tp: TopicPartition, r: PartitionReassignment) -> dict[str, Any]:
    return resource(
        "KafkaReassignment",
        links.url("topics", tp.topic, "partitions", tp.partition, "reassignment"),
        links.crn(("topic", tp.topic), ("partition", tp.partition)) + "/reassignment",
        {
            "cluster_id": links.cluster_id,
            "topic_name": tp.topic,
            "partition_id": tp.partition,
            "adding_replicas": list(r.adding_replicas),
            "removing_replicas": list(r.removing_replicas),
            "replicas": links.related("topics", tp.topic, "partitions", tp.partition, "replicas"),
        },
    )


def config_json(links: V3Links, topic: str, c: ConfigEntry) -> dict[str, Any]:
    return resource(
        "KafkaTopicConfig",
        links.url("topics", topic, "configs", c.name),
        links.crn(("topic", topic), ("config", c.name)),
        {"cluster_id": links.cluster_id, "topic_name": topic, **config_fields(c)},
    )


# ---------------------------------------------------------------------------------- cluster calls


async def find_topic(admin: AdminClient, name: str) -> TopicMetadata:
    """The topic's metadata, or 404/40401 (module docstring)."""
    if not could_be_topic(name):
        raise topic_not_found(name)
    t = (await admin.topic_metadata([name]))[name]
    if t.error_code in (_UNKNOWN_TOPIC, _INVALID_TOPIC):
        raise topic_not_found(name)
    error = t.error
    if error is not None and not t.partitions:
        raise from_kafka_error(error)
    return t


def find_partition(t: TopicMetadata, partition: int) -> PartitionMetadata:
    for p in t.partitions:
        if p.partition == partition:
            return p
    raise partition_not_found(t.name, partition)


async def describe_topic_configs(admin: AdminClient, names: Sequence[str]) -> dict[str, list[ConfigEntry] | KafkaError]:
    """The configs of the topics ``names`` with their synonyms: each topic's sorted by name, or
    its error."""
    if not names:
        return {}
    found = await admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in names], include_synonyms=True)
    return {
        res.name: answer if isinstance(answer, KafkaError) else sorted(answer, key=lambda c: c.name)
        for res, answer in found.items()
    }


async def topic_configs(admin: AdminClient, name: str) -> list[ConfigEntry]:
    """One topic's configs, or 404/40401."""
    if not could_be_topic(name):
        raise topic_not_found(name)
    found = (await describe_topic_configs(admin, [name])).get(name)
    if found is None:
        raise from_kafka_error(for_code(-1)(f"the broker did not describe topic {name}"))
    if isinstance(found, KafkaError):
        if found.code in (_UNKNOWN_TOPIC, _INVALID_TOPIC):
            raise topic_not_found(name)
        raise refused(found)
    return found


async def authorized_operations(admin: AdminClient, names: Sequence[str] | None) -> dict[str, list[str]]:
    """The operations this principal may perform on each topic (Metadata v8+
    ``include_topic_authorized_operations``), as Kafka's admin client lists them (without
    UNKNOWN, ANY and ALL)."""
    conn = await admin.cluster.any_connection()
    try:
        version = conn.version(ApiKey.METADATA, _METADATA_MAX_VERSION, min_version=8)
    except UnsupportedApiError as e:
        raise RestProxyError(400, KAFKA_BAD_REQUEST, f"the brokers cannot list authorized operations: {e}") from None
    call = typed_api.METADATA(
        {
            "topics": None if names is None else [{"name": n} for n in names],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
        }
    )
    resp = await conn.call(call, version=version)
    out: dict[str, list[str]] = {}
    skip = {AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL}
    for t in resp["topics"]:
        bits = t.get("topic_authorized_operations", _AUTHORIZED_OPERATIONS_UNSET)
        if t["name"] is None or bits == _AUTHORIZED_OPERATIONS_UNSET:
            continue
        out[t["name"]] = [op.name for op in AclOperation if op not in skip and bits & (1 << op)]
    return out


async def create_topic(admin: AdminClient, req: TopicRequest) -> CreatedTopic:
    """CreateTopics for one topic: the partition count and replication factor it has (or would
    have, ``validate_only``) as the broker reports them; when it does not say (before v5, or
    when the principal may not describe the topic's configs), the request's own numbers, else 0,
    as Confluent answers."""
    new = NewTopic(
        req.name,
        -1 if req.partitions is None else req.partitions,
        -1 if req.replication_factor is None else req.replication_factor,
        configs=dict(req.configs),
        replica_assignments=dict(req.assignments),
    )
    try:
        answer = (await admin.create_topics_reported([new], validate_only=req.validate_only)).get(req.name)
    except UnsupportedApiError as e:
        raise RestProxyError(400, KAFKA_BAD_REQUEST, f"the brokers cannot create this topic: {e}") from None
    if answer is None:
        raise from_kafka_error(for_code(-1)(f"the broker did not answer for topic {req.name}"))
    if isinstance(answer, KafkaError):
        raise refused(answer)
    partitions, factor = answer.num_partitions, answer.replication_factor
    if partitions < 0:
        partitions = len(req.assignments) if req.assignments else (req.partitions or 0)
    if factor < 0:
        factor = len(req.assignments[0][1]) if req.assignments else (req.replication_factor or 0)
    return CreatedTopic(max(partitions, 0), max(factor, 0))


async def _alter_configs(
    admin: AdminClient, cluster_id: str, topic: str, ops: Sequence[AlterConfigOp], *, validate_only: bool = False
) -> None:
    """IncrementalAlterConfigs on one topic after checking that each config exists."""
    known = {c.name for c in await topic_configs(admin, topic)}
    for op in ops:
        if op.name not in known:
            raise _config_not_found(cluster_id, topic, op.name)
    resource_ = ConfigResource(ResourceType.TOPIC, topic)
    error = (await admin.incremental_alter_configs({resource_: list(ops)}, validate_only=validate_only)).get(resource_)
    if error is not None:
        if error.code == _UNKNOWN_TOPIC:
            raise topic_not_found(topic)
        raise refused(error)


# ---------------------------------------------------------------------------------- routes


def routes(api: ProxyApi) -> list[BaseRoute]:
    async def context(request: Request) -> tuple[AdminClient, V3Links]:
        cluster_id = await api.check_cluster(request)
        clients = await api.clients(request)
        return clients.admin, V3Links(api.base_url(request), cluster_id)

    # ------------------------------------------------------------------ topics
    @endpoint
    async def list_topics(request: Request) -> Response:
        admin, links = await context(request)
        metas = await admin.topic_metadata(None)
        shown = sorted(
            (t for t in metas.values() if not t.is_internal and (t.partitions or not t.error_code)),
            key=lambda t: t.name,
        )
        ops: dict[str, list[str]] | None = None
        params = request.query_params
        if query_flag(params, "include_authorized_operations") or query_flag(params, "includeAuthorizedOperations"):
            ops = await authorized_operations(admin, None)
        items = [_topic_from_metadata(links, t, None if ops is None else ops.get(t.name, [])) for t in shown]
        return _json(collection("KafkaTopicList", links.url("topics"), items))

    @endpoint
    async def create(request: Request) -> Response:
        admin, links = await context(request)
        req = TopicRequest.parse(await json_object(api, request))
        created = await create_topic(admin, req)
        body = topic_json(
            links, req.name, is_internal=False, partitions_count=created.num_partitions,
            replication_factor=created.replication_factor,
        )
        status = 200 if req.validate_only else 201
        return _json(body, status, {"Location": links.url("topics", req.name)})

    @endpoint
    async def get_topic(request: Request) -> Response:
        admin, links = await context(request)
        name = request.path_params["topic_name"]
        t = await find_topic(admin, name)
        ops = None
        if query_flag(request.query_params, "include_authorized_operations"):
            ops = (await authorized_operations(admin, [name])).get(name, [])
        return _json(_topic_from_metadata(links, t, ops))

    @endpoint
    async def update_partition_count(request: Request) -> Response:
        admin, links = await context(request)
        name = request.path_params["topic_name"]
        body = await json_object(api, request)
        if body.get("partitions_count") is None:
            raise bad_request("partitions_count is required")
        count = kafka_int(body["partitions_count"], "int32", "partitions_count")
        if not could_be_topic(name):
            raise topic_not_found(name)
        error = (await admin.create_partitions({name: count})).get(name)
        if error is not None:
            if error.code in (_UNKNOWN_TOPIC, _INVALID_TOPIC):
                raise topic_not_found(name)
            raise refused(error)
        # The partitions exist once the controller accepted them; metadata may show them a moment later.
        deadline = time.monotonic() + _GROWTH_WAIT_S
        t = await find_topic(admin, name)
        while len(t.partitions) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            t = await find_topic(admin, name)
        return _json(_topic_from_metadata(links, t))

    @endpoint
    async def delete_topic(request: Request) -> Response:
        admin, _ = await context(request)
        name = request.path_params["topic_name"]
        if not could_be_topic(name):
            raise topic_not_found(name)
        error = (await admin.delete_topics([name])).get(name)
        if error is not None:
            if error.code == _UNKNOWN_TOPIC:
                raise topic_not_found(name)
            raise refused(error)
        return _no_content()

    # ------------------------------------------------------------------ configs
    @endpoint
    async def list_configs(request: Request) -> Response:
        admin, links = await context(request)
        name = request.path_params["topic_name"]
        configs = await topic_configs(admin, name)
        items = [config_json(links, name, c) for c in configs]
        return _json(collection("KafkaTopicConfigList", links.url("topics", name, "configs"), items))

    @endpoint
    async def list_all_configs(request: Request) -> Response:
        admin, links = await context(request)
        names = await admin.list_topics()
        described = await describe_topic_configs(admin, names)
        items: list[dict[str, Any]] = []
        for name in sorted(described):
            found = described[name]
            if isinstance(found, KafkaError):
                if found.code == _UNKNOWN_TOPIC:  # deleted since it was listed
                    continue
                raise refused(found)
            items.extend(config_json(links, name, c) for c in found)
        return _json(collection("KafkaTopicConfigList", links.url("topics", "-", "configs"), items))

    @endpoint
    async def get_config(request: Request) -> Response:
        admin, links = await context(request)
        topic, name = request.path_params["topic_name"], request.path_params["name"]
        for c in await topic_configs(admin, topic):
            if c.name == name:
                return _json(config_json(links, topic, c))
        raise _config_not_found(links.cluster_id, topic, name)

    @endpoint
    async def update_config(request: Request) -> Response:
        admin, links = await context(request)
        topic, name = request.path_params["topic_name"], request.path_params["name"]
        body = await json_object(api, request)
        value = text(body.get("value"), "value")
        await _alter_configs(admin, links.cluster_id, topic, [AlterConfigOp(name, AlterOp.SET, value)])
        return _no_content()

    @endpoint
    async def reset_config(request: Request) -> Response:
        admin, links = await context(request)
        topic, name = request.path_params["topic_name"], request.path_params["name"]
        await _alter_configs(admin, links.cluster_id, topic, [AlterConfigOp(name, AlterOp.DELETE)])
        return _no_content()

    @endpoint
    async def alter_configs(request: Request) -> Response:
        admin, links = await context(request)
        topic = request.path_params["topic_name"]
        body = await json_object(api, request)
        ops = _parse_alter_ops(body)
        validate_only = optional_bool(body.get("validate_only"), "validate_only")
        await _alter_configs(admin, links.cluster_id, topic, ops, validate_only=validate_only)
        return _no_content()

    # ------------------------------------------------------------------ partitions and replicas
    @endpoint
    async def list_partitions(request: Request) -> Response:
        admin, links = await context(request)
        t = await find_topic(admin, request.path_params["topic_name"])
        items = [partition_json(links, t.name, p) for p in t.partitions]
        return _json(collection("KafkaPartitionList", links.url("topics", t.name, "partitions"), items))

    @endpoint
    async def get_partition(request: Request) -> Response:
        admin, links = await context(request)
        partition = _path_int(request, "partition_id")
        t = await find_topic(admin, request.path_params["topic_name"])
        return _json(partition_json(links, t.name, find_partition(t, partition)))

    @endpoint
    async def partition_offsets(request: Request) -> Response:
        admin, links = await context(request)
        partition = _path_int(request, "partition_id")
        offset_type = request.query_params.get("offset_type", "earliest_and_latest")
        if offset_type != "earliest_and_latest":
            raise bad_request(f"offset_type:{offset_type[:60]} is invalid")
        t = await find_topic(admin, request.path_params["topic_name"])
        p = find_partition(t, partition)
        tp = TopicPartition(t.name, p.partition)
        earliest, latest = await asyncio.gather(
            admin.list_offsets({tp: EARLIEST}), admin.list_offsets({tp: LATEST})
        )
        offsets = []
        for answer in (earliest.get(tp), latest.get(tp)):
            if isinstance(answer, KafkaError):
                if answer.code == _UNKNOWN_TOPIC:
                    raise partition_not_found(t.name, partition)
                raise from_kafka_error(answer)
            if not isinstance(answer, OffsetInfo):
                raise from_kafka_error(for_code(-1)(f"no offsets of {t.name}-{partition} in the answer"))
            offsets.append(answer.offset)
        return _json(
            resource(
                "KafkaPartitionWithOffsets",
                links.url("topics", t.name, "partitions", p.partition, "offset"),
                links.crn(("topic", t.name), ("partition", p.partition), ("offset_type", offset_type)),
                {
                    "cluster_id": links.cluster_id,
                    "topic_name": t.name,
                    "partition_id": p.partition,
                    "earliest_offset": offsets[0],
                    "latest_offset": offsets[1],
                },
            )
        )

    @endpoint
    async def list_replicas(request: Request) -> Response:
        admin, links = await context(request)
        partition = _path_int(request, "partition_id")
        t = await find_topic(admin, request.path_params["topic_name"])
        p = find_partition(t, partition)
        items = [replica_json(links, t.name, p, b) for b in p.replicas]
        self_url = links.url("topics", t.name, "partitions", p.partition, "replicas")
        return _json(collection("KafkaReplicaList", self_url, items))

    @endpoint
    async def get_replica(request: Request) -> Response:
        admin, links = await context(request)
        partition = _path_int(request, "partition_id")
        broker_id = _path_int(request, "broker_id")
        t = await find_topic(admin, request.path_params["topic_name"])
        p = find_partition(t, partition)
        if broker_id not in p.replicas:
            raise not_found(f"Broker {broker_id} holds no replica of partition {partition} of topic {t.name}.")
        return _json(replica_json(links, t.name, p, broker_id))

    # ------------------------------------------------------------------ reassignments
    async def reassignments(admin: AdminClient, links: V3Links, self_url: str, topic: str | None) -> Response:
        if topic is not None:
            await find_topic(admin, topic)
        ongoing = await admin.list_partition_reassignments()
        items = [
            reassignment_json(links, tp, r)
            for tp, r in sorted(ongoing.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
            if topic is None or tp.topic == topic
        ]
        return _json(collection("KafkaReassignmentList", self_url, items))

    @endpoint
    async def list_all_reassignments(request: Request) -> Response:
        admin, links = await context(request)
        return await reassignments(admin, links, links.url("topics", "-", "partitions", "-", "reassignment"), None)

    @endpoint
    async def list_topic_reassignments(request: Request) -> Response:
        admin, links = await context(request)
        topic = request.path_params["topic_name"]
        return await reassignments(admin, links, links.url("topics", topic, "partitions", "-", "reassignment"), topic)

    @endpoint
    async def get_reassignment(request: Request) -> Response:
        admin, links = await context(request)
        partition = _path_int(request, "partition_id")
        t = await find_topic(admin, request.path_params["topic_name"])
        find_partition(t, partition)
        tp = TopicPartition(t.name, partition)
        ongoing = (await admin.list_partition_reassignments([tp])).get(tp)
        if ongoing is None:
            raise not_found(f"Partition {partition} of topic {t.name} has no ongoing reassignment.")
        return _json(reassignment_json(links, tp, ongoing))

    topics = "/v3/clusters/{cluster_id}/topics"
    one = topics + "/{topic_name}"
    part = one + "/partitions/{partition_id}"
    # Literal "-" paths first: they would otherwise match as a topic or partition named "-".
    return [
        Route(topics, list_topics, methods=["GET"]),
        Route(topics, create, methods=["POST"]),
        Route(topics + "/-/configs", list_all_configs, methods=["GET"]),
        Route(topics + "/-/partitions/-/reassignment", list_all_reassignments, methods=["GET"]),
        Route(one, get_topic, methods=["GET"]),
        Route(one, update_partition_count, methods=["PATCH"]),
        Route(one, delete_topic, methods=["DELETE"]),
        Route(one + "/configs", list_configs, methods=["GET"]),
        Route(one + "/configs:alter", alter_configs, methods=["POST"]),
        Route(one + "/configs/{name}", get_config, methods=["GET"]),
        Route(one + "/configs/{name}", update_config, methods=["PUT"]),
        Route(one + "/configs/{name}", reset_config, methods=["DELETE"]),
        Route(one + "/partitions", list_partitions, methods=["GET"]),
        Route(one + "/partitions/-/reassignment", list_topic_reassignments, methods=["GET"]),
        Route(part, get_partition, methods=["GET"]),
        Route(part + "/offset", partition_offsets, methods=["GET"]),
        Route(part + "/reassignment", get_reassignment, methods=["GET"]),
        Route(part + "/replicas", list_replicas, methods=["GET"]),
        Route(part + "/replicas/{broker_id}", get_replica, methods=["GET"]),
    ]


__all__ = ["KAFKA_BAD_REQUEST", "refused", "routes"]
