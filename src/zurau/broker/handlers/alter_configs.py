"""AlterConfigs (legacy): replace the whole set of a topic's config overrides.

Configs left out of a request go back to their defaults (which is why clients prefer
IncrementalAlterConfigs). Per resource, following Kafka's ``ControllerApis`` and
``ConfigurationControlManager``:

* a resource type Kafka does not know: UNSUPPORTED_VERSION ("Unknown resource type N.");
  one it knows but Zurau cannot alter (CLIENT_METRICS, GROUP): INVALID_REQUEST;
* the same resource twice in one request: INVALID_REQUEST "Duplicate resource." (one result,
  nothing applied for it);
* TOPIC: "" is INVALID_REQUEST (no default topic resource), an illegal name
  INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION; the new set is validated as
  a whole (INVALID_CONFIG with Kafka's message), then persisted with ``Broker.set_topic_configs``,
  which also applies it to the live partition logs;
* BROKER: dynamic broker configs are not supported yet: INVALID_REQUEST saying so (configs go in
  ``server.properties``); an id other than this node's or "" is INVALID_REQUEST too;
* BROKER_LOGGER: INVALID_REQUEST, as in Kafka (use IncrementalAlterConfigs).

``validate_only`` runs every check and changes nothing.
"""

from __future__ import annotations

from typing import Any

from zurau.broker.handlers._common import (
    KNOWN_RESOURCE_TYPES,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_TOPIC,
    check_topic_configs,
    duplicated,
    error_of,
)
from zurau.broker.request_context import RequestContext
from zurau.metadata.topic_registry import TopicMetadata, validate_topic_name
from zurau.protocol.errors import InvalidRequestError, UnknownTopicOrPartitionError, UnsupportedVersionError

API_KEY = 33


def result(resource: dict[str, Any], code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
    }


def check_resource_type(rtype: int) -> None:
    if rtype not in KNOWN_RESOURCE_TYPES:
        raise UnsupportedVersionError(f"Unknown resource type {rtype}.")
    if rtype not in (RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
        raise InvalidRequestError(f"Unexpected resource type {rtype}.")


def topic_for_alter(ctx: RequestContext, name: str) -> TopicMetadata:
    if not name:
        raise InvalidRequestError("Default topic resources are not allowed.")
    validate_topic_name(name)
    t = ctx.image.get(name)
    if t is None:
        raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
    return t


def refuse_broker_resource(ctx: RequestContext, name: str) -> None:
    """Dynamic broker configs are not supported yet: always raises INVALID_REQUEST."""
    node = ctx.node_id
    if name and name != str(node):
        raise InvalidRequestError(
            f"Unexpected broker id, expected {node} or empty string, but received {name}"
        )
    raise InvalidRequestError(
        "Dynamic broker configs are not supported by Zurau yet; set broker configs in server.properties "
        "and restart the broker."
    )


def apply_topic_configs(
    ctx: RequestContext, t: TopicMetadata, configs: dict[str, Any], validate_only: bool
) -> None:
    check_topic_configs(ctx.config, configs)
    if not validate_only:
        ctx.controller.set_topic_configs(t.name, {k: v for k, v in configs.items() if v is not None})


def _alter(ctx: RequestContext, resource: dict[str, Any], validate_only: bool) -> None:
    rtype = resource["resource_type"]
    name = resource["resource_name"]
    check_resource_type(rtype)
    if rtype == RESOURCE_BROKER_LOGGER:
        raise InvalidRequestError(
            "AlterConfigs does not support the resource type BROKER_LOGGER; use IncrementalAlterConfigs."
        )
    if rtype == RESOURCE_BROKER:
        refuse_broker_resource(ctx, name)
    t = topic_for_alter(ctx, name)
    configs = {c["name"]: c["value"] for c in resource["configs"]}
    apply_topic_configs(ctx, t, configs, validate_only)


def handle(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    resources = req["resources"]
    validate_only = bool(req["validate_only"])
    dups = duplicated([(r["resource_type"], r["resource_name"]) for r in resources])
    out: list[dict[str, Any]] = []
    reported: set[tuple[int, str]] = set()
    for r in resources:
        key = (r["resource_type"], r["resource_name"])
        if key in dups:
            if key not in reported:
                reported.add(key)
                out.append(result(r, InvalidRequestError.code, "Duplicate resource."))
            continue
        try:
            _alter(ctx, r, validate_only)
            out.append(result(r))
        except Exception as e:
            out.append(result(r, *error_of(e)))
    return {"throttle_time_ms": 0, "responses": out}
