"""Metadata: brokers, cluster id, controller, topics with their partitions, leaders and ISRs.

A null topic list (v1+) or an empty one at v0 means every topic. Unknown topics are auto-created
when the request allows it (v4+) and ``auto.create.topics.enable`` is on; the new topic is ready at
once on a single node, so it is returned without LEADER_NOT_AVAILABLE. Leaders, epochs, replicas
and ISRs come from the metadata image (the controller's registration of each partition).

Brokers (KRaft): when the image has broker registrations, the answer lists the live brokers
(unfenced, not in controlled shutdown) with the address of the listener the client connected
through (the first listener of a broker that has none of that name), and their racks. A
partition whose leader is not registered or is fenced has leader -1 and LEADER_NOT_AVAILABLE;
``offline_replicas`` are its replicas on unregistered or fenced brokers. The controller id is the
active controller's. An image without registrations (a single node that does not register) is
answered with this node alone, at its advertised address.

Authorisation (only with an authorizer configured): the list of all topics holds only those the
principal may DESCRIBE (unlisted ones are not logged as denials); a requested topic it may not
DESCRIBE gets TOPIC_AUTHORIZATION_FAILED, exists or not, and auto-creating one needs CREATE on the
cluster or the topic (else TOPIC_AUTHORIZATION_FAILED). ``topic_authorized_operations`` then
holds the operations the principal is allowed on the topic.

Encoding cache: a topic's entry depends only on its ``TopicImage`` (immutable: any change to the
topic makes a new one), the image's broker registrations (leaders, offline replicas), the response
version and, with no authorizer, whether operations were asked for. So the encoded entry is kept,
per version, by topic name together with the two objects it was made from, and reused while both
are the very objects of the current image; the codec appends such ``bytes`` as is. A Metadata
request for 10,000 partitions then costs a lookup per topic, not 10,000 dicts and their encoding.
Entries that depend on the principal (an authorizer with operations asked for) are never cached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypedDict

from zurau.broker.handlers._authz import (
    TOPIC,
    Op,
    allowed,
    allowed_names,
    topic_operations,
    topic_or_cluster_allowed,
)
from zurau.broker.handlers._common import ZERO_UUID, controller_id, error_of
from zurau.broker.request_context import RequestContext
from zurau.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from zurau.metadata.topic_names import validate_topic_name
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.codec import Encoder, compile_struct
from zurau.protocol.errors import (
    KafkaError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    for_code,
)
from zurau.protocol.messages import (
    MetadataRequest,
    MetadataResponseBrokers,
    MetadataResponseTopics,
    MetadataResponseTopicsPartitions,
)
from zurau.protocol.schemas.metadata import SCHEMA as METADATA_SCHEMA
from zurau.protocol.schemas.metadata import TOPIC as TOPIC_STRUCT

API_KEY = ApiKey.METADATA

UNSET_OPERATIONS = -(2**31)


class MetadataAnswer(TypedDict, total=False):
    """A :class:`~zurau.protocol.messages.MetadataResponse` whose topic entries may be given
    pre-encoded (``bytes``, see :mod:`zurau.protocol.codec`): the cached ones are."""

    throttle_time_ms: int
    brokers: list[MetadataResponseBrokers]
    cluster_id: str | None
    controller_id: int
    topics: list[MetadataResponseTopics | bytes]
    cluster_authorized_operations: int
    error_code: int


def _partition_entry(image: MetadataImage, i: int, p: PartitionRegistration) -> MetadataResponseTopicsPartitions:
    error, leader = 0, p.leader
    offline: list[int] = []
    if image.brokers:
        brokers = image.brokers
        offline = [r for r in p.replicas if r not in brokers or brokers[r].fenced]
        reg = brokers.get(p.leader)
        if reg is None or reg.fenced:
            error, leader = LeaderNotAvailableError.code, -1
    return {
        "error_code": error,
        "partition_index": i,
        "leader_id": leader,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": list(p.isr),
        "offline_replicas": offline,
    }


def _topic_entry(
    ctx: RequestContext, image: MetadataImage, t: TopicImage, include_ops: bool
) -> MetadataResponseTopics:
    parts = [_partition_entry(image, i, p) for i, p in sorted(t.partitions.items())]
    return {
        "error_code": 0,
        "name": t.name,
        "topic_id": t.topic_id,
        "is_internal": t.is_internal,
        "partitions": parts,
        "topic_authorized_operations": topic_operations(ctx, t.name) if include_ops else UNSET_OPERATIONS,
    }


# version -> topic name -> (topic image, broker registrations, operations asked, encoded entry)
_CacheEntry = tuple[TopicImage, Mapping[int, Any], bool, bytes]
_encoded: dict[int, dict[str, _CacheEntry]] = {}
_CACHE_SLACK = 1024  # names of deleted topics kept at most, beyond the live ones, before a purge


@functools.cache
def _topic_encoder(version: int) -> Encoder:
    return compile_struct(TOPIC_STRUCT.fields, version, METADATA_SCHEMA.is_flexible(version), "MetadataResponseTopic")[1]


def _encoded_topic_entry(
    ctx: RequestContext, image: MetadataImage, t: TopicImage, include_ops: bool
) -> MetadataResponseTopics | bytes:
    """The topic's entry, encoded for this request's version (cached, see the module
    docstring), or as a dict when it depends on the principal."""
    if include_ops and ctx.services.authorizer is not None:
        return _topic_entry(ctx, image, t, include_ops)
    version = ctx.api_version
    cache = _encoded.get(version)
    if cache is None:
        cache = _encoded[version] = {}
    hit = cache.get(t.name)
    brokers = image.brokers
    if hit is not None and hit[0] is t and hit[2] == include_ops and (hit[1] is brokers or not (hit[1] or brokers)):
        return hit[3]
    out = bytearray()
    _topic_encoder(version)(out, _topic_entry(ctx, image, t, include_ops), [])
    data = bytes(out)
    if len(cache) > len(image.topics_by_name) + _CACHE_SLACK:
        cache.clear()  # forget deleted topics
    cache[t.name] = (t, brokers, include_ops, data)
    return data


def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataAnswer:
    version = ctx.api_version
    include_ops = bool(req.get("include_topic_authorized_operations"))
    requested = req["topics"]
    topics_out: list[MetadataResponseTopics | bytes] = []
    if requested is None or (version == 0 and not requested):
        image = ctx.image
        listed = image.all()
        if ctx.services.authorizer is not None:
            ok = allowed_names(ctx, Op.DESCRIBE, TOPIC, (t.name for t in listed), log=False)
            listed = [t for t in listed if t.name in ok]
        topics_out = [_encoded_topic_entry(ctx, image, t, include_ops) for t in listed]
    else:
        allow_create = req.get("allow_auto_topic_creation", True) and ctx.config.get("auto.create.topics.enable")
        for rt in requested:
            name = rt.get("name")
            topic_id = rt.get("topic_id")
            try:
                if name is None:
                    if topic_id is None or topic_id == ZERO_UUID:
                        raise UnknownTopicIdError("a topic needs a name or an id")
                    t = ctx.image.by_id(topic_id)
                    if t is None:
                        raise UnknownTopicIdError(f"unknown topic id {topic_id}")
                    if not allowed(ctx, Op.DESCRIBE, TOPIC, t.name):
                        raise TopicAuthorizationFailedError("Topic authorization failed.")
                else:
                    validate_topic_name(name)
                    if not allowed(ctx, Op.DESCRIBE, TOPIC, name):
                        raise TopicAuthorizationFailedError("Topic authorization failed.")
                    t = ctx.image.get(name)
                    if t is None:
                        if allow_create and not topic_or_cluster_allowed(ctx, Op.CREATE, name):
                            raise TopicAuthorizationFailedError("Topic authorization failed.")
                        if not allow_create:
                            raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
                        if name == "__consumer_offsets":  # created with the coordinator's settings
                            ctx.groups.ensure_offsets_topic()
                        else:
                            created = ctx.controller.create_topic_now(name, -1, -1, {})
                            if created["error_code"]:
                                raise for_code(created["error_code"])(created["error_message"])
                        t = ctx.image.get(name)
                        if t is None:
                            raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
                topics_out.append(_encoded_topic_entry(ctx, ctx.image, t, include_ops))
            except (KafkaError, Exception) as e:
                code, _msg = error_of(e)
                topics_out.append(
                    {
                        "error_code": code,
                        "name": name,
                        "topic_id": topic_id or ZERO_UUID,
                        "is_internal": False,
                        "partitions": [],
                        "topic_authorized_operations": UNSET_OPERATIONS,
                    }
                )
    image = ctx.image
    return {
        "throttle_time_ms": 0,
        "brokers": _brokers(ctx, image),
        "cluster_id": image.cluster_id,
        "controller_id": controller_id(ctx, image),
        "topics": topics_out,
        "cluster_authorized_operations": UNSET_OPERATIONS,
        "error_code": 0,
    }


def _brokers(ctx: RequestContext, image: MetadataImage) -> list[MetadataResponseBrokers]:
    if not image.brokers:
        host, port = ctx.advertised
        return [{"node_id": ctx.node_id, "host": host, "port": port, "rack": None}]
    out: list[MetadataResponseBrokers] = []
    for b in image.live_brokers():
        address = b.address_for(ctx.listener)
        if address is not None:
            out.append({"node_id": b.id, "host": address[0], "port": address[1], "rack": b.rack})
    return out

