"""DescribeConfigs: the configs of topics, of this broker, and of its loggers.

Per resource, following Kafka's ``ConfigHelper.describeConfigs``:

* TOPIC (2): the name must be legal (INVALID_TOPIC_EXCEPTION) and exist
  (UNKNOWN_TOPIC_OR_PARTITION). Every topic config is listed with its effective value and source
  (DYNAMIC_TOPIC_CONFIG for an override, else the broker synonym's layer, else DEFAULT_CONFIG).
* BROKER (4): the name is this node's id, or "" for the cluster-wide dynamic defaults (as in Kafka
  only the configs set at that level are listed). This node's configs show their effective values
  as of the current metadata image with their source: DYNAMIC_BROKER_CONFIG (this broker's
  dynamic override), DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster default),
  STATIC_BROKER_CONFIG (server.properties) or DEFAULT_CONFIG, and the lower layers as synonyms;
  ``read_only`` is false for the configs a BROKER resource may change here
  (:func:`zurau.config.dynamic_broker_configs.applied_dynamically`). Any other broker id is
  INVALID_REQUEST ("Unexpected broker id, ..."), as in Kafka: only that broker knows its static
  configs, and the clients (Kafka's Admin, librdkafka, kafka-python) send a BROKER resource to
  the broker it names. Sensitive values are null.
* BROKER_LOGGER (8): the name is this node's id (INVALID_REQUEST otherwise); lists the ``root``
  logger and the ``zurau`` loggers with their effective levels in log4j names (FATAL, ERROR,
  WARN, INFO, DEBUG, TRACE), source DYNAMIC_BROKER_LOGGER_CONFIG. Levels are changed with
  IncrementalAlterConfigs.
* GROUP (32): the name is a group id (empty: INVALID_REQUEST "Group name must not be empty"; the
  group need not exist). Every group config (:mod:`zurau.config.group_configs`) is listed, never
  read-only: an override with source GROUP_CONFIG (8, the Admin API's DYNAMIC_GROUP_CONFIG), any
  other with the broker's default for it and source DEFAULT_CONFIG. Authorized as
  DESCRIBE_CONFIGS on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.
* CLIENT_METRICS (16): the name is a subscription (empty: INVALID_REQUEST "Client metrics
  subscription name must not be empty"; it need not exist). Its three configs (``interval.ms``,
  ``match``, ``metrics``): a set one with source CLIENT_METRICS_CONFIG (7), the others with their
  defaults and DEFAULT_CONFIG (Kafka's ``createClientMetricsConfigEntry``). Authorized as
  DESCRIBE_CONFIGS on the cluster.
* Any other type (unknown): INVALID_REQUEST "Unsupported resource type".

A null or empty ``configuration_keys`` means every config; unknown keys are ignored, as in Kafka.
Synonyms are returned only when asked (v1+), documentation only when asked (v3+).
"""

from __future__ import annotations

import logging

from zurau.broker.handlers._authz import Op, config_denied
from zurau.broker.handlers._common import error_of
from zurau.broker.request_context import RequestContext
from zurau.config import (
    ConfigEntry,
    ConfigSource,
    describe_broker_config,
    describe_group_config,
    describe_topic_config,
)
from zurau.config.client_metrics_configs import describe_entries as describe_client_metrics
from zurau.config.dynamic_broker_configs import applied_dynamically
from zurau.metadata.controller.config_control import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
)
from zurau.metadata.topic_names import validate_topic_name
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidRequestError, UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResources,
    DescribeConfigsResponse,
    DescribeConfigsResponseResults,
    DescribeConfigsResponseResultsConfigs,
)

API_KEY = ApiKey.DESCRIBE_CONFIGS

# -------------------------------------------------------------------------------- loggers
# log4j level names (Kafka's LogLevelConfig.VALID_LOG_LEVELS) and the Python levels they map to.
TRACE = 5
LOG4J_LEVELS = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
                "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": TRACE}  # fmt: skip
ROOT_LOGGER = "root"
LOGGER_PREFIX = "zurau"


def log4j_level(level: int) -> str:
    for name in ("FATAL", "ERROR", "WARN", "INFO", "DEBUG"):
        if level >= LOG4J_LEVELS[name]:
            return name
    return "TRACE"


def broker_loggers() -> dict[str, logging.Logger]:
    """The loggers a BROKER_LOGGER resource exposes: root and every ``zurau`` logger."""
    out: dict[str, logging.Logger] = {ROOT_LOGGER: logging.getLogger()}
    for name, obj in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger) and (
            name == LOGGER_PREFIX or name.startswith(LOGGER_PREFIX + ".")
        ):
            out[name] = obj
    return out


def parse_broker_id(ctx: RequestContext, name: str) -> int:
    try:
        return int(name)
    except ValueError:
        raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None


# -------------------------------------------------------------------------------- entries
def entry_dict(
    e: ConfigEntry, include_synonyms: bool, include_documentation: bool
) -> DescribeConfigsResponseResultsConfigs:
    return {
        "name": e.name,
        "value": None if e.sensitive else e.value_str,
        "read_only": e.read_only,
        "config_source": e.source,
        "is_default": e.is_default,
        "is_sensitive": e.sensitive,
        "synonyms": (
            [
                {"name": s.name, "value": None if e.sensitive else s.value, "source": s.source}
                for s in e.synonyms
            ]
            if include_synonyms
            else []
        ),
        "config_type": e.config_type,
        "documentation": e.doc if include_documentation else None,
    }


def _keys(resource: DescribeConfigsRequestResources) -> list[str] | None:
    keys = resource["configuration_keys"]
    return keys or None  # null or empty: every config


def _describe_topic(
    ctx: RequestContext, resource: DescribeConfigsRequestResources, syn: bool, doc: bool
) -> list[DescribeConfigsResponseResultsConfigs]:
    name = resource["resource_name"]
    validate_topic_name(name)
    t = ctx.image.get(name)
    if t is None:
        raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
    entries = describe_topic_config(ctx.config, t.configs, _keys(resource))
    return [entry_dict(e, syn, doc) for e in entries]


def _describe_group(
    ctx: RequestContext, resource: DescribeConfigsRequestResources, syn: bool, doc: bool
) -> list[DescribeConfigsResponseResultsConfigs]:
    name = resource["resource_name"]
    if not name:
        raise InvalidRequestError("Group name must not be empty")
    entries = describe_group_config(ctx.config, ctx.image.group_config(name), _keys(resource))
    return [entry_dict(e, syn, doc) for e in entries]


def _describe_client_metrics(
    ctx: RequestContext, resource: DescribeConfigsRequestResources, syn: bool, doc: bool
) -> list[DescribeConfigsResponseResultsConfigs]:
    name = resource["resource_name"]
    if not name:
        raise InvalidRequestError("Client metrics subscription name must not be empty")
    entries = describe_client_metrics(ctx.image.client_metrics.get(name, {}), _keys(resource))
    return [
        {
            "name": e["name"],
            "value": e["value"],
            "read_only": False,
            "config_source": e["source"],
            "is_default": e["source"] == ConfigSource.DEFAULT_CONFIG,
            "is_sensitive": False,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in e["synonyms"]] if syn else [],
            "config_type": e["config_type"],
            "documentation": e["doc"] if doc else None,
        }
        for e in entries
    ]


def _describe_broker(
    ctx: RequestContext, resource: DescribeConfigsRequestResources, syn: bool, doc: bool
) -> list[DescribeConfigsResponseResultsConfigs]:
    name = resource["resource_name"]
    cfg = ctx.config
    keys = _keys(resource)
    if not name:
        defaults = set(cfg.dynamic_default_configs)
        wanted = defaults if keys is None else defaults & set(keys)
        entries = describe_broker_config(cfg, wanted, per_broker=False, dynamic=applied_dynamically)
    elif parse_broker_id(ctx, name) == ctx.node_id:
        entries = describe_broker_config(cfg, keys, per_broker=True, dynamic=applied_dynamically)
    else:
        raise InvalidRequestError(
            f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {name}"
        )
    return [entry_dict(e, syn, doc) for e in entries]


def _describe_loggers(
    ctx: RequestContext, resource: DescribeConfigsRequestResources
) -> list[DescribeConfigsResponseResultsConfigs]:
    name = resource["resource_name"]
    if not name:
        raise InvalidRequestError("Broker id must not be empty")
    if parse_broker_id(ctx, name) != ctx.node_id:
        raise InvalidRequestError(f"Unexpected broker id, expected {ctx.node_id} but received {name}")
    keys = _keys(resource)
    out: list[DescribeConfigsResponseResultsConfigs] = []
    for logger_name, logger in broker_loggers().items():
        if keys is not None and logger_name not in keys:
            continue
        out.append(
            {
                "name": logger_name,
                "value": log4j_level(logger.getEffectiveLevel()),
                "read_only": False,
                "config_source": int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG),
                "is_default": False,
                "is_sensitive": False,
                "synonyms": [],
                "config_type": 0,  # UNKNOWN, as Kafka reports for loggers
                "documentation": None,
            }
        )
    return out


def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    syn = bool(req.get("include_synonyms"))
    doc = bool(req.get("include_documentation"))
    results: list[DescribeConfigsResponseResults] = []
    for resource in req["resources"]:
        rtype = resource["resource_type"]
        result: DescribeConfigsResponseResults = {
            "error_code": 0,
            "error_message": None,
            "resource_type": rtype,
            "resource_name": resource["resource_name"],
            "configs": [],
        }
        try:
            if (
                denied := config_denied(ctx, rtype, resource["resource_name"], Op.DESCRIBE_CONFIGS)
            ) is not None:
                raise denied
            if rtype == RESOURCE_TOPIC:
                result["configs"] = _describe_topic(ctx, resource, syn, doc)
            elif rtype == RESOURCE_BROKER:
                result["configs"] = _describe_broker(ctx, resource, syn, doc)
            elif rtype == RESOURCE_BROKER_LOGGER:
                result["configs"] = _describe_loggers(ctx, resource)
            elif rtype == RESOURCE_GROUP:
                result["configs"] = _describe_group(ctx, resource, syn, doc)
            elif rtype == RESOURCE_CLIENT_METRICS:
                result["configs"] = _describe_client_metrics(ctx, resource, syn, doc)
            else:
                raise InvalidRequestError(f"Unsupported resource type: {rtype}")
        except Exception as e:
            result["error_code"], result["error_message"] = error_of(e)
            result["configs"] = []
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}
