"""AlterConfigs (legacy): replace the whole set of a topic's, a group's or a broker's dynamic
config overrides.

Configs left out of a request go back to their defaults (which is why clients prefer
IncrementalAlterConfigs). The request goes to the controller, which checks per resource, as
Kafka's ``ConfigurationControlManager`` does: unknown resource types (UNSUPPORTED_VERSION), types
it cannot alter (INVALID_REQUEST), duplicate resources ("Duplicate resource."), the topic
(default resource, illegal name, unknown topic) or the group (non-empty name), the new set
validated as a whole (INVALID_CONFIG with Kafka's message; :mod:`zurau.config.group_configs` for
groups); a BROKER resource (a registered broker id, or "" for the cluster default) gets the
dynamic broker config checks of :mod:`zurau.metadata.controller.config_control`; BROKER_LOGGER
is INVALID_REQUEST, as in Kafka (use IncrementalAlterConfigs). Accepted changes become ConfigRecords; live logs take them when they
are applied. ``validate_only`` runs every check and changes nothing.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import Op, config_denied
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.config_control import config_result
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsRequestResources,
    AlterConfigsResponse,
    AlterConfigsResponseResponses,
)

API_KEY = ApiKey.ALTER_CONFIGS


async def handle(ctx: RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse:
    resources = req["resources"]
    denied: list[AlterConfigsResponseResponses] = []
    if ctx.services.authorizer is not None and not ctx.on_controller_listener:
        ok: list[AlterConfigsRequestResources] = []
        for r in resources:
            refusal = config_denied(ctx, r["resource_type"], r["resource_name"], Op.ALTER_CONFIGS)
            if refusal is None:
                ok.append(r)
            else:
                denied.append(config_result(r, refusal.code, str(refusal)))
        resources = ok
    answers = await ctx.controller.alter_configs(resources, bool(req["validate_only"])) if resources else []
    return {"throttle_time_ms": 0, "responses": answers + denied}
