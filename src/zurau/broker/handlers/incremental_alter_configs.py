"""IncrementalAlterConfigs: set, delete, append to or subtract from individual configs.

Operations: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (the last two only for LIST configs such as
``cleanup.policy``; they start from the current value, or the default when the topic has no
override, and add missing / remove present comma-separated items). Per resource, as Kafka's
``ConfigAdminManager.preprocess`` and ``ConfigurationControlManager`` check:

* the same config name twice: INVALID_REQUEST "Error due to duplicate config keys : ...";
  a null value for anything but DELETE: INVALID_REQUEST "Null value not supported for : ...";
  an unknown operation: INVALID_REQUEST;
* resource type, duplicate resources, TOPIC and BROKER resources: as in
  :mod:`zurau.broker.handlers.alter_configs` (dynamic broker configs are refused with
  INVALID_REQUEST); APPEND/SUBTRACT on a non-LIST config: INVALID_CONFIG "Can't APPEND to key ...";
  the resulting set is validated as a whole (INVALID_CONFIG with Kafka's message), persisted and
  applied to the live logs;
* BROKER_LOGGER (name = this node's id): SET a logger's level (FATAL, ERROR, WARN, INFO, DEBUG,
  TRACE) or DELETE it (the logger then inherits its parent's level; the root logger's level cannot
  be deleted). Unknown logger: INVALID_CONFIG "Logger X does not exist!"; bad level:
  INVALID_CONFIG; APPEND/SUBTRACT: INVALID_REQUEST. Levels are not persisted (as in Kafka).

``validate_only`` runs every check and changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from zurau.broker.handlers._common import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, duplicated, error_of
from zurau.broker.handlers.alter_configs import (
    apply_topic_configs,
    check_resource_type,
    refuse_broker_resource,
    result,
    topic_for_alter,
)
from zurau.broker.handlers.describe_configs import LOG4J_LEVELS, ROOT_LOGGER, broker_loggers, parse_broker_id
from zurau.broker.request_context import RequestContext
from zurau.config import TOPIC_CONFIGS, ConfigType, format_value
from zurau.protocol.errors import InvalidConfigError, InvalidRequestError

API_KEY = 44

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _preprocess(configs: list[dict[str, Any]]) -> None:
    dups = duplicated([c["name"] for c in configs])
    if dups:
        raise InvalidRequestError(f"Error due to duplicate config keys : {','.join(sorted(dups))}")
    nulls = [c["name"] for c in configs if c["config_operation"] != DELETE and c["value"] is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    for c in configs:
        if c["config_operation"] not in OP_NAMES:
            raise InvalidRequestError(
                f"Unknown operation type {c['config_operation']} for config {c['name']}"
            )


def _list_items(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _topic_changes(
    ctx: RequestContext, current: dict[str, str], configs: list[dict[str, Any]]
) -> dict[str, str]:
    new = dict(current)
    defaults = ctx.config.topic_defaults()
    for c in configs:
        name, op, value = c["name"], c["config_operation"], c["value"]
        if op == SET:
            new[name] = value
        elif op == DELETE:
            new.pop(name, None)
        else:
            d = TOPIC_CONFIGS.get(name)
            if d is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            if d.type is not ConfigType.LIST:
                raise InvalidConfigError(f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
            items = _list_items(new[name] if name in new else format_value(d, defaults.get(name, d.default)))
            if op == APPEND:
                items += [v for v in _list_items(value) if v not in items]
            else:
                drop = set(_list_items(value))
                items = [v for v in items if v not in drop]
            new[name] = ",".join(items)
    return new


def _alter_loggers(
    ctx: RequestContext, name: str, configs: list[dict[str, Any]], validate_only: bool
) -> None:
    if not name:
        raise InvalidRequestError("Broker id must not be empty")
    if parse_broker_id(ctx, name) != ctx.node_id:
        raise InvalidRequestError(f"Unexpected broker id, expected {ctx.node_id} but received {name}")
    loggers = broker_loggers()
    changes: list[tuple[logging.Logger, int]] = []
    for c in configs:
        logger_name, op, value = c["name"], c["config_operation"], c["value"]
        if op in (APPEND, SUBTRACT):
            raise InvalidRequestError(
                f"{OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource"
            )
        logger = loggers.get(logger_name)
        if logger is None:
            raise InvalidConfigError(f"Logger {logger_name} does not exist!")
        if op == DELETE:
            if logger_name == ROOT_LOGGER:
                raise InvalidRequestError("Removing the log level of the root logger is not allowed")
            changes.append((logger, logging.NOTSET))
        else:
            level = LOG4J_LEVELS.get(str(value).upper())
            if level is None:
                raise InvalidConfigError(
                    f"Cannot set the log level of {logger_name} to {value} as it is not a supported log level. "
                    f"Valid log levels are {', '.join(LOG4J_LEVELS)}"
                )
            changes.append((logger, level))
    if not validate_only:
        for logger, level in changes:
            logger.setLevel(level)


def _alter(ctx: RequestContext, resource: dict[str, Any], validate_only: bool) -> None:
    rtype = resource["resource_type"]
    name = resource["resource_name"]
    configs = resource["configs"]
    check_resource_type(rtype)
    _preprocess(configs)
    if rtype == RESOURCE_BROKER_LOGGER:
        _alter_loggers(ctx, name, configs, validate_only)
        return
    if rtype == RESOURCE_BROKER:
        refuse_broker_resource(ctx, name)
    t = topic_for_alter(ctx, name)
    apply_topic_configs(ctx, t, _topic_changes(ctx, t.configs, configs), validate_only)


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
