"""Confluent's v2 consumer API over HTTP (the instances themselves: :mod:`.v2_consumer_instances`).

* ``POST /consumers/{group}`` ``{"name", "format", "auto.offset.reset", "auto.commit.enable",
  "fetch.min.bytes", "consumer.request.timeout.ms"}`` (all optional; ``id`` is the deprecated
  name) -> ``{"instance_id", "base_uri"}``; the base URI uses ``host.name`` when set, else the
  host the client addressed. A name already used in the group: 409/40902.
* ``DELETE /consumers/{group}/instances/{instance}`` -> 204 (the member leaves its group).
* ``.../subscription``: ``POST {"topics": [...]}`` or ``{"topic_pattern": "regex"}`` (204),
  ``GET`` -> ``{"topics": [...]}``, ``DELETE`` (204).
* ``.../assignments``: ``POST {"partitions": [{"topic", "partition"}]}`` (204), ``GET``.
* ``.../positions``: ``POST {"offsets": [{"topic", "partition", "offset"}], "timestamps":
  [{"topic", "partition", "timestamp": ISO-8601}]}``; ``.../positions/beginning`` and
  ``.../positions/end``: ``POST {"partitions": [...]}`` (each 204; a partition the instance is
  not assigned: 409/40903).
* ``GET .../records?timeout=ms&max_bytes=n`` -> ``[{"topic", "key", "value", "partition",
  "offset"}]`` in the instance's format (:mod:`.record_deserialization`). The ``Accept`` header
  names the format (``application/vnd.kafka.{binary,json,avro,jsonschema,protobuf}.v2+json``;
  ``application/vnd.kafka.v2+json`` means binary, as in Confluent's proxy); another Kafka format
  than the instance's is 406/40601, no Kafka type at all 406. A wildcard (or no ``Accept``)
  reads the instance's format (Confluent reads binary there, refusing other instances). A read
  before any subscription or assignment is 409/40903 (Kafka's consumer refuses to poll then); a
  record not in the instance's format 408/40801 (Confluent's code), and it stays first in line.
* ``POST .../offsets`` ``{"offsets": [{"topic", "partition", "offset"}]}`` commits each
  ``offset + 1`` (the offset given is the last record processed); no body, or no ``offsets``,
  commits everything read so far. Answers ``[]``. A ``metadata`` string is accepted but not
  stored (the committed offsets answer ``""``).
* ``GET .../offsets`` with a body ``{"partitions": [...]}`` -> ``{"offsets": [{"topic",
  "partition", "offset", "metadata"}]}`` for the partitions with a committed offset (no body:
  404/40402, as Confluent).

Answers are ``application/vnd.kafka.v2+json``. An unknown group/instance pair is 404/40403.
Bodies are checked before anything is done: malformed JSON is 400, a field of the wrong type or
out of range 422/42200 (or 400 for numbers outside Kafka's types), a consumer setting Kafka
would refuse 422/42204, ``fetch.min.bytes`` below -1 400/40001.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from zurau.client.admin import EARLIEST, LATEST
from zurau.client.types import TopicPartition
from zurau.edge_requests import kafka_int, parse_kafka_int
from zurau.rest_proxy.errors import (
    CONSUMER_FORMAT_MISMATCH,
    INVALID_CONSUMER_CONFIG,
    PARTITION_NOT_FOUND,
    RestProxyError,
    endpoint,
    not_found,
)
from zurau.rest_proxy.proxy_api import USER_STATE, ProxyApi
from zurau.rest_proxy.record_deserialization import deserializer, parse_format
from zurau.rest_proxy.request_bodies import query_int, read_json, required_text
from zurau.rest_proxy.v2_consumer_instances import (
    SERVICE,
    ConsumerInstance,
    ConsumerInstances,
    InstanceSettings,
)

V2_JSON = "application/vnd.kafka.v2+json"
ACCEPT_FORMATS = {
    "application/vnd.kafka.binary.v2+json": "binary",
    "application/vnd.kafka.json.v2+json": "json",
    "application/vnd.kafka.avro.v2+json": "avro",
    "application/vnd.kafka.jsonschema.v2+json": "jsonschema",
    "application/vnd.kafka.protobuf.v2+json": "protobuf",
    "application/vnd.kafka.v2+json": "binary",
}
_WILDCARDS = ("*/*", "application/*")
_INSTANCE = "/consumers/{group}/instances/{instance}"


def v2_json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status_code=status, media_type=V2_JSON)


def no_content() -> Response:
    return Response(status_code=204)


def invalid(message: str) -> RestProxyError:
    """A body field of the wrong type or value (Jackson's mapping errors: 422/42200)."""
    return RestProxyError(422, 42200, message)


# ---------------------------------------------------------------------------- body parsing
async def json_body(request: Request, api: ProxyApi, *, required: bool) -> dict[str, Any] | None:
    """The request's JSON object; None for an empty body unless ``required`` (then 422)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and not (ctype == "application/json" or ctype.startswith("application/vnd.kafka.")):
        raise RestProxyError(415, 415, f"HTTP 415 Unsupported Media Type: {ctype}")
    needed = (lambda: invalid("the request needs a JSON body")) if required else None
    body = await read_json(api, request, if_empty=needed)
    if body is None and not required:
        return None
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object")
    return body


def _optional_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid(f"{name} must be a string")
    return value


def _optional_int(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,20}", value.strip()):
        return parse_kafka_int(value, "int32", name)  # Jackson takes numbers in strings too
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{name} must be an integer")
    return kafka_int(value, "int32", name)


def instance_settings(body: dict[str, Any]) -> InstanceSettings:
    fmt = parse_format(body.get("format") if body.get("format") is not None else "binary")
    reset = _optional_str(body, "auto.offset.reset")
    if reset is not None and reset.lower() not in ("earliest", "latest", "none"):
        raise RestProxyError(
            422,
            INVALID_CONSUMER_CONFIG,
            f"Invalid consumer configuration: Invalid value {reset} for configuration auto.offset.reset: "
            "String must be one of: latest, earliest, none",
        )
    commit_raw = body.get("auto.commit.enable")
    if commit_raw is None:
        auto_commit = True
    elif isinstance(commit_raw, bool):
        auto_commit = commit_raw
    elif isinstance(commit_raw, str) and commit_raw.strip().lower() in ("true", "false"):
        auto_commit = commit_raw.strip().lower() == "true"
    else:
        raise RestProxyError(
            422,
            INVALID_CONSUMER_CONFIG,
            f"Invalid consumer configuration: Invalid value {commit_raw} for configuration enable.auto.commit: "
            "Expected value to be either true or false",
        )
    min_bytes = _optional_int(body, "fetch.min.bytes")
    if min_bytes is not None and min_bytes < -1:
        raise RestProxyError(
            400,
            40001,
            "Invalid consumer configuration. It does not abide by the constraints: "
            f"Invalid value {min_bytes} for configuration fetch.min.bytes: Value must be at least -1",
        )
    wait = _optional_int(body, "consumer.request.timeout.ms")
    if wait is not None and wait < 0:
        raise invalid("consumer.request.timeout.ms must be at least 0")
    return InstanceSettings(
        format=fmt,
        auto_offset_reset=(reset or "latest").lower(),
        auto_commit=auto_commit,
        fetch_min_bytes=min_bytes,
        request_timeout_ms=wait,
    )


def _items(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise invalid(f"{name} must be a list of objects")
    return value


def _topic_partition(item: dict[str, Any], where: str) -> TopicPartition:
    topic = required_text(item.get("topic"), f"{where}: topic", error=invalid)
    partition = item.get("partition")
    if partition is None:
        raise invalid(f"{where}: partition is required")
    return TopicPartition(topic, kafka_int(partition, "int32", f"{where}: partition", minimum=0))


def _offset(item: dict[str, Any], where: str) -> int:
    offset = item.get("offset")
    if offset is None:
        raise invalid(f"{where}: offset is required")
    return kafka_int(offset, "int64", f"{where}: offset", minimum=0)


def _partitions(body: dict[str, Any] | None, name: str = "partitions") -> list[TopicPartition]:
    if body is None:
        return []
    return [_topic_partition(p, f"{name}[{i}]") for i, p in enumerate(_items(body, name))]


def _timestamp_ms(raw: Any, where: str) -> int:
    """An ``Instant`` as Jackson reads it: ISO-8601 text, or a number of seconds since the epoch."""
    if isinstance(raw, str):
        text = raw.strip()
        try:
            when = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" and text else text)
        except ValueError:
            raise invalid(f"{where}: timestamp must be ISO-8601 (2024-01-31T12:00:00Z), not {raw[:40]!r}") from None
        if when.tzinfo is None:
            raise invalid(f"{where}: timestamp needs a time zone (Z or an offset)")
        return int(when.timestamp() * 1000)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and 0 <= raw < 2**42:
        return int(raw * 1000)
    raise invalid(f"{where}: timestamp must be ISO-8601 text")


def accepted_format(request: Request, instance: ConsumerInstance) -> None:
    """406 unless ``Accept`` allows the instance's format (see the module docstring)."""
    header = request.headers.get("accept", "").strip()
    if not header:
        return
    kafka_types: list[str] = []
    for part in header.split(","):
        media = part.split(";")[0].strip().lower()
        if media in _WILDCARDS:
            return
        fmt = ACCEPT_FORMATS.get(media)
        if fmt == instance.format:
            return
        if fmt is not None:
            kafka_types.append(media)
    if kafka_types:
        raise RestProxyError(
            406,
            CONSUMER_FORMAT_MISMATCH,
            "The requested embedded data format does not match the deserializer for this consumer instance "
            f"(format {instance.format}; Accept: {', '.join(kafka_types)})",
        )
    raise RestProxyError(406, 406, "HTTP 406 Not Acceptable")


def base_uri(api: ProxyApi, request: Request, group: str, name: str) -> str:
    base = urlsplit(api.base_url(request))
    host = api.config.host_name
    netloc = base.netloc
    if host:
        port = base.port or api.config.port
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    path = f"{base.path.rstrip('/')}/consumers/{quote(group, safe='')}/instances/{quote(name, safe='')}"
    return urlunsplit((base.scheme, netloc, path, "", ""))


# ---------------------------------------------------------------------------- routes
def routes(api: ProxyApi) -> list[BaseRoute]:
    found = api.services.get(SERVICE)
    instances = found if isinstance(found, ConsumerInstances) else ConsumerInstances(api.config)
    api.services[SERVICE] = instances
    formats = deserializer(api.services, api.config.schema_registry_url)

    def instance_of(request: Request) -> ConsumerInstance:
        return instances.get(request.path_params["group"], request.path_params["instance"], request.scope.get(USER_STATE))

    @endpoint
    async def create(request: Request) -> Response:
        group = request.path_params["group"]
        body = await json_body(request, api, required=False) or {}
        settings = instance_settings(body)
        formats.check_format(settings.format)
        name = _optional_str(body, "id") or _optional_str(body, "name") or instances.new_name()
        if "/" in name:
            raise invalid("the instance name must not contain '/': it is a segment of the instance's URLs")
        clients = await api.clients(request)
        await instances.create(group, name, settings, clients.consumer_config, formats, request.scope.get(USER_STATE))
        return v2_json({"instance_id": name, "base_uri": base_uri(api, request, group, name)})

    @endpoint
    async def delete(request: Request) -> Response:
        await instances.delete(request.path_params["group"], request.path_params["instance"], request.scope.get(USER_STATE))
        return no_content()

    @endpoint
    async def subscribe(request: Request) -> Response:
        inst = instance_of(request)
        body = await json_body(request, api, required=True) or {}
        topics_raw = body.get("topics")
        pattern_raw = body.get("topic_pattern")
        topics: list[str] | None = None
        pattern: re.Pattern[str] | None = None
        if topics_raw is not None:
            if not isinstance(topics_raw, list) or not all(isinstance(t, str) and t for t in topics_raw):
                raise invalid("topics must be a list of topic names")
            topics = topics_raw
        elif pattern_raw is not None:
            if not isinstance(pattern_raw, str) or not pattern_raw:
                raise invalid("topic_pattern must be a regular expression")
            try:
                pattern = re.compile(pattern_raw)
            except re.error as e:
                raise invalid(f"topic_pattern is not a regular expression: {e}") from None
        else:
            raise invalid("give topics or topic_pattern")
        async with inst.use():
            await inst.subscribe(topics, pattern)
        return no_content()

    @endpoint
    async def get_subscription(request: Request) -> Response:
        inst = instance_of(request)
        async with inst.use():
            return v2_json({"topics": inst.subscription()})

    @endpoint
    async def unsubscribe(request: Request) -> Response:
        inst = instance_of(request)
        async with inst.use():
            await inst.unsubscribe()
        return no_content()

    @endpoint
    async def assign(request: Request) -> Response:
        inst = instance_of(request)
        body = await json_body(request, api, required=True)
        partitions = _partitions(body)
        async with inst.use():
            inst.assign(partitions)
        return no_content()

    @endpoint
    async def get_assignments(request: Request) -> Response:
        inst = instance_of(request)
        async with inst.use():
            tps = inst.assignment()
        return v2_json({"partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in tps]})

    @endpoint
    async def seek(request: Request) -> Response:
        inst = instance_of(request)
        body = await json_body(request, api, required=True) or {}
        offsets: dict[TopicPartition, int] = {}
        for i, item in enumerate(_items(body, "offsets")):
            where = f"offsets[{i}]"
            offsets[_topic_partition(item, where)] = _offset(item, where)
        timestamps: dict[TopicPartition, int] = {}
        for i, item in enumerate(_items(body, "timestamps")):
            where = f"timestamps[{i}]"
            if item.get("timestamp") is None:
                raise invalid(f"{where}: timestamp is required")
            timestamps[_topic_partition(item, where)] = _timestamp_ms(item["timestamp"], where)
        async with inst.use():
            await inst.seek(offsets, timestamps)
        return no_content()

    def seek_to(where: int) -> Any:
        @endpoint
        async def handler(request: Request) -> Response:
            inst = instance_of(request)
            body = await json_body(request, api, required=True)
            partitions = _partitions(body)
            async with inst.use():
                await inst.seek_to(partitions, where)
            return no_content()

        return handler

    @endpoint
    async def records(request: Request) -> Response:
        inst = instance_of(request)
        accepted_format(request, inst)
        timeout = query_int(request, "timeout")
        max_bytes = query_int(request, "max_bytes")
        async with inst.use():
            out = await inst.read(timeout, max_bytes)
        media = f"application/vnd.kafka.{inst.format}.v2+json"
        return Response(json.dumps(out), media_type=media)

    @endpoint
    async def commit(request: Request) -> Response:
        inst = instance_of(request)
        body = await json_body(request, api, required=False)
        offsets: dict[TopicPartition, int] | None = None
        if body is not None and body.get("offsets") is not None:
            offsets = {}
            for i, item in enumerate(_items(body, "offsets")):
                where = f"offsets[{i}]"
                _optional_str(item, "metadata")
                offsets[_topic_partition(item, where)] = _offset(item, where) + 1
        async with inst.use():
            await inst.commit(offsets)
        return v2_json([])

    @endpoint
    async def committed(request: Request) -> Response:
        inst = instance_of(request)
        body = await json_body(request, api, required=False)
        if body is None:
            raise not_found("Partition not found.", PARTITION_NOT_FOUND)
        partitions = _partitions(body)
        async with inst.use():
            found = await inst.committed(partitions)
        out = [
            {"topic": tp.topic, "partition": tp.partition, "offset": found[tp], "metadata": ""}
            for tp in partitions
            if tp in found
        ]
        return v2_json({"offsets": out})

    return [
        Route("/consumers/{group}", create, methods=["POST"]),
        Route(_INSTANCE, delete, methods=["DELETE"]),
        Route(_INSTANCE + "/subscription", subscribe, methods=["POST"]),
        Route(_INSTANCE + "/subscription", get_subscription, methods=["GET"]),
        Route(_INSTANCE + "/subscription", unsubscribe, methods=["DELETE"]),
        Route(_INSTANCE + "/assignments", assign, methods=["POST"]),
        Route(_INSTANCE + "/assignments", get_assignments, methods=["GET"]),
        Route(_INSTANCE + "/positions", seek, methods=["POST"]),
        Route(_INSTANCE + "/positions/beginning", seek_to(EARLIEST), methods=["POST"]),
        Route(_INSTANCE + "/positions/end", seek_to(LATEST), methods=["POST"]),
        Route(_INSTANCE + "/records", records, methods=["GET"]),
        Route(_INSTANCE + "/offsets", commit, methods=["POST"]),
        Route(_INSTANCE + "/offsets", committed, methods=["GET"]),
    ]



