"""IncrementalAlterConfigs: set, delete, append to or subtract from individual configs.

Operations: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (the last two only for LIST configs such as
``cleanup.policy``; they start from the current value, or the default when the topic has no
override, and add missing / remove present comma-separated items). Per resource, as Kafka's
``ConfigAdminManager.preprocess`` and ``ConfigurationControlManager`` check:

* the same config name twice: INVALID_REQUEST "Error due to duplicate config keys : ...";
  a null value for anything but DELETE: INVALID_REQUEST "Null value not supported for : ...";
  an unknown operation: INVALID_REQUEST;
* resource type, duplicate resources, TOPIC, GROUP and BROKER resources: decided by the controller as in
  :mod:`zurau.broker.handlers.alter_configs` (a BROKER resource names any registered broker or
  ``""`` for the cluster default; see :mod:`zurau.metadata.controller.config_control`);
  APPEND/SUBTRACT on a non-LIST config: INVALID_CONFIG "Can't APPEND to key ...";
  the resulting set is validated as a whole (INVALID_CONFIG with Kafka's message) and written as
  ConfigRecords, which the live logs take when they are applied;
* BROKER_LOGGER (name = this node's id): SET a logger's level (FATAL, ERROR, WARN, INFO, DEBUG,
  TRACE) or DELETE it (the logger then inherits its parent's level; the root logger's level cannot
  be deleted). Unknown logger: INVALID_CONFIG "Logger X does not exist!"; bad level:
  INVALID_CONFIG; APPEND/SUBTRACT: INVALID_REQUEST. Levels are not persisted (as in Kafka).

``validate_only`` runs every check and changes nothing.
"""

from __future__ import annotations

import logging

from zurau.broker.handlers._authz import Op, config_denied
from zurau.broker.handlers._common import error_of
from zurau.broker.handlers.describe_configs import LOG4J_LEVELS, ROOT_LOGGER, broker_loggers, parse_broker_id
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.config_control import (
    APPEND,
    DELETE,
    OP_NAMES,
    RESOURCE_BROKER_LOGGER,
    SUBTRACT,
    check_resource_type,
    config_result,
    per_unique_resource,
    preprocess_incremental,
)
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import InvalidConfigError, InvalidRequestError
from zurau.protocol.messages import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestResources,
    IncrementalAlterConfigsRequestResourcesConfigs,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseResponses,
)

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS


def _alter_loggers(
    ctx: RequestContext,
    name: str,
    configs: list[IncrementalAlterConfigsRequestResourcesConfigs],
    validate_only: bool,
) -> None:
    """BROKER_LOGGER resources belong to this broker alone: decided and applied here."""
    preprocess_incremental(configs)
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


async def handle(ctx: RequestContext, req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    """Loggers are answered here; every other resource is the controller's, in one request."""
    validate_only = bool(req["validate_only"])
    forwarded: list[IncrementalAlterConfigsRequestResources] = []

    def decide(r: IncrementalAlterConfigsRequestResources) -> IncrementalAlterConfigsResponseResponses | None:
        if not ctx.on_controller_listener:
            refusal = config_denied(ctx, r["resource_type"], r["resource_name"], Op.ALTER_CONFIGS)
            if refusal is not None:
                return config_result(r, refusal.code, str(refusal))
        if r["resource_type"] != RESOURCE_BROKER_LOGGER:
            forwarded.append(r)
            return None  # the controller's answer goes here
        try:
            check_resource_type(r["resource_type"])
            _alter_loggers(ctx, r["resource_name"], r["configs"], validate_only)
            return config_result(r)
        except Exception as e:
            return config_result(r, *error_of(e))

    decided = per_unique_resource(req["resources"], decide)
    if forwarded:
        answers = iter(await ctx.controller.incremental_alter_configs(forwarded, validate_only))
        decided = [r if r is not None else next(answers) for r in decided]
    out: list[IncrementalAlterConfigsResponseResponses] = [r for r in decided if r is not None]
    return {"throttle_time_ms": 0, "responses": out}
