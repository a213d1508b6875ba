"""Producing records with the v2 API (Confluent's ``ProduceToTopicAction`` and
``ProduceToPartitionAction``).

``POST /topics/{topic_name}`` and ``POST /topics/{topic_name}/partitions/{partition_id}`` take
``{"records": [{"key", "value", "partition"}], "key_schema", "key_schema_id", "value_schema",
"value_schema_id"}`` with ``Content-Type: application/vnd.kafka.<format>.v2+json``, the format
being ``binary`` (base64 keys and values), ``json`` (any JSON), or ``avro``, ``jsonschema``,
``protobuf`` (a schema given inline, registered under ``<topic>-key``/``<topic>-value``, or by
id). A record's ``partition`` is ignored on the partition path. The answer is
``{"key_schema_id", "value_schema_id", "offsets": [{"partition", "offset", "error_code",
"error"}]}``, one offset per record in order; a record Kafka refused has a null partition and
offset and Confluent's code (50002 a Kafka error, 50003 a retriable one, 40101, 40301), and the
answer is still 200 (401/403 when a record failed authentication/authorization), as Confluent's.

Checked before anything is produced (so a request is produced whole or not at all): the content
type (415 ``HTTP 415 Unsupported Media Type``), the ``Accept`` header (the answer is
``application/vnd.kafka.v2+json``, or ``application/json`` when that is what the client prefers;
406 when it takes neither), the topic (404 40401) and partition (404 40402), the body (400 for
bad JSON, 422 for no records), every key and value against its format and schema (Confluent's
422 codes: 42201/42202 a key/value without a schema, 42203 data not matching its schema, 42205 an
invalid schema).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from zurau.client.errors import AuthenticationError, describe_error
from zurau.client.types import RecordMetadata
from zurau.edge_requests import parse_kafka_int
from zurau.protocol.errors import KafkaError
from zurau.rest_proxy.errors import (
    KAFKA_AUTHENTICATION_ERROR,
    KAFKA_AUTHORIZATION_ERROR,
    KAFKA_ERROR,
    KAFKA_RETRIABLE_ERROR,
    RestProxyError,
    bad_request,
    endpoint,
)
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.record_serialization import (
    KEY_SCHEMA_MISSING,
    SCHEMA_FORMATS,
    VALUE_SCHEMA_MISSING,
    RecordSchema,
    RecordSerializer,
    SchemaSpec,
    encode_plain,
    partition_param,
    serializer_for,
    unprocessable,
)
from zurau.rest_proxy.request_bodies import read_json

V2_JSON = "application/vnd.kafka.v2+json"
_CONTENT_TYPE = re.compile(r"^application/vnd\.kafka\.(binary|json|avro|jsonschema|protobuf)\.v2\+json$")
_V2_RESPONSE_TYPES = {V2_JSON: V2_JSON, "application/vnd.kafka+json": V2_JSON, "application/json": "application/json",
                      "application/*": V2_JSON, "*/*": V2_JSON}

# Codes of a record's failure in "offsets" (rest-utils' KafkaExceptionMapper).
_AUTHORIZATION_CODES = {29, 30, 31, 53}


def request_format(request: Request) -> str:
    """The embedded format named by the Content-Type (415 for anything else)."""
    raw = request.headers.get("content-type", "")
    m = _CONTENT_TYPE.match(raw.split(";")[0].strip().lower())
    if m is None:
        raise RestProxyError(415, 415, "HTTP 415 Unsupported Media Type")
    return m.group(1).upper()


def response_type(request: Request) -> str:
    """The media type of the answer, from the Accept header as JAX-RS negotiates it (406 if none fits)."""
    accept = request.headers.get("accept")
    if not accept or not accept.strip():
        return V2_JSON
    ranges: list[tuple[float, int, str]] = []
    for i, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media, q = fields[0].lower(), 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if media and q > 0:
            ranges.append((-q, i, media))
    for _, _, media in sorted(ranges):
        if media in _V2_RESPONSE_TYPES:
            return _V2_RESPONSE_TYPES[media]
    raise RestProxyError(406, 406, "HTTP 406 Not Acceptable")


def _offset_error(e: BaseException) -> tuple[int, str]:
    if isinstance(e, AuthenticationError):
        return KAFKA_AUTHENTICATION_ERROR, str(e)
    if isinstance(e, KafkaError):
        if e.code in _AUTHORIZATION_CODES:
            return KAFKA_AUTHORIZATION_ERROR, describe_error(e)
        if e.code == 58:
            return KAFKA_AUTHENTICATION_ERROR, describe_error(e)
        return (KAFKA_RETRIABLE_ERROR if e.retriable else KAFKA_ERROR), describe_error(e)
    return KAFKA_RETRIABLE_ERROR, str(e) or type(e).__name__


async def _schema(
    serializer: RecordSerializer, fmt: str, topic: str, body: dict[str, Any], side: str
) -> RecordSchema | None:
    schema_id, raw = body.get(f"{side}_schema_id"), body.get(f"{side}_schema")
    if fmt not in SCHEMA_FORMATS:
        return None
    if schema_id is not None and (isinstance(schema_id, bool) or not isinstance(schema_id, int) or schema_id < 0):
        raise bad_request(f"'{side}_schema_id' must be a schema id, not {schema_id!r}")
    if raw is not None and not isinstance(raw, str):
        raise bad_request(f"'{side}_schema' must be the schema as a string")
    if schema_id is None and raw is None:
        return None
    spec = SchemaSpec(format=fmt if schema_id is None else None, schema_id=schema_id, raw_schema=None if schema_id is not None else raw)
    schema, _, _ = await serializer.resolve(topic, spec, side == "key", want_version=False)
    if schema.format != fmt:
        raise unprocessable(42205, f"Invalid schema: schema {schema.schema_id} is {schema.format}, not {fmt}")
    return schema


def _encode(fmt: str, schema: RecordSchema | None, data: Any, side: str) -> bytes | None:
    if fmt not in SCHEMA_FORMATS:
        return encode_plain(fmt, data)
    if data is None:
        return None
    if schema is None:
        if side == "key":
            raise unprocessable(KEY_SCHEMA_MISSING, "Request includes keys but does not include key schema")
        raise unprocessable(VALUE_SCHEMA_MISSING, "Request includes values but does not include value schema")
    return schema.encode(data)


def routes(api: ProxyApi) -> list[BaseRoute]:
    serializer = serializer_for(api)

    async def produce(request: Request, partition: int | None) -> Response:
        fmt = request_format(request)
        media = response_type(request)
        topic = request.path_params["topic_name"]
        clients = await api.clients(request)
        metadata = await clients.admin.cluster.topic(topic)  # UnknownTopicOrPartition: 404 40401
        count = len(metadata.partitions)
        if partition is not None and partition >= count:
            raise RestProxyError(404, 40402, "Partition not found.")
        body = await read_json(api, request)
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object with 'records'")
        records = body.get("records")
        if not isinstance(records, list) or not records:
            raise unprocessable(422, "records may not be empty: the body needs a non-empty array 'records'")
        key_schema = await _schema(serializer, fmt, topic, body, "key")
        value_schema = await _schema(serializer, fmt, topic, body, "value")
        prepared: list[tuple[int | None, bytes | None, bytes | None]] = []
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise bad_request(f"records[{i}] must be an object")
            target = partition if partition is not None else partition_param(record.get("partition"), f"records[{i}].partition")
            key = _encode(fmt, key_schema, record.get("key"), "key")
            value = _encode(fmt, value_schema, record.get("value"), "value")
            prepared.append((target, key, value))
        producer = await clients.producer()
        futures: list[asyncio.Future[RecordMetadata] | BaseException] = []
        for target, key, value in prepared:
            try:
                futures.append(await producer.send(topic, value, key, partition=target))
            except (KafkaError, OSError) as e:
                futures.append(e)
        offsets: list[dict[str, Any]] = []
        status = 200
        for fut in futures:
            try:
                if isinstance(fut, BaseException):
                    raise fut
                md = await fut
                offsets.append({"partition": md.partition, "offset": md.offset, "error_code": None, "error": None})
            except Exception as e:  # noqa: BLE001 - a refused record is an entry in "offsets"
                code, message = _offset_error(e)
                offsets.append({"partition": None, "offset": None, "error_code": code, "error": message})
                if code == KAFKA_AUTHENTICATION_ERROR:
                    status = 401
                elif code == KAFKA_AUTHORIZATION_ERROR and status != 401:
                    status = 403
        answer = {
            "key_schema_id": key_schema.schema_id if key_schema is not None else None,
            "value_schema_id": value_schema.schema_id if value_schema is not None else None,
            "offsets": offsets,
        }
        return JSONResponse(answer, status_code=status, media_type=media)

    @endpoint
    async def to_topic(request: Request) -> Response:
        return await produce(request, None)

    @endpoint
    async def to_partition(request: Request) -> Response:
        raw = request.path_params["partition_id"]
        try:
            partition = parse_kafka_int(raw, "int32", "partition")
        except Exception:  # noqa: BLE001 - a path segment that is no partition number names no partition
            raise RestProxyError(404, 40402, "Partition not found.") from None
        if partition < 0:
            raise RestProxyError(404, 40402, "Partition not found.")
        return await produce(request, partition)

    return [
        Route("/topics/{topic_name}", to_topic, methods=["POST"]),
        Route("/topics/{topic_name}/partitions/{partition_id}", to_partition, methods=["POST"]),
    ]
