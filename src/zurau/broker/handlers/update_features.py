"""UpdateFeatures (``kafka-features.sh upgrade|downgrade|disable``, ``zurau features``): handed to
the controller (forwarded to the active one in a cluster), which checks every update and writes
the new levels as ``FeatureLevelRecord``s, all or none; see
:mod:`zurau.metadata.controller.feature_control` for the rules and messages. Needs ALTER on the
cluster, as in Kafka (a request on a controller listener comes from another node and is not
checked again).

Versions: v0's ``allow_downgrade`` is a SAFE_DOWNGRADE; v1 carries the upgrade type and
``validate_only``. The request has one outcome (Kafka 4): the top-level error, repeated for every
feature in ``results`` up to v1 (v2 has no results).
"""

from __future__ import annotations

from zurau.broker.handlers._authz import CLUSTER_AUTHORIZATION_FAILED, Op, cluster_allowed
from zurau.broker.request_context import RequestContext
from zurau.metadata.controller.feature_control import (
    SAFE_DOWNGRADE,
    UPGRADE,
    FeatureUpdate,
    FeatureUpdateOutcome,
)
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import UpdateFeaturesRequest, UpdateFeaturesResponse

API_KEY = ApiKey.UPDATE_FEATURES


async def handle(ctx: RequestContext, req: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    updates = [
        FeatureUpdate(
            u["feature"],
            u["max_version_level"],
            (SAFE_DOWNGRADE if u["allow_downgrade"] else UPGRADE)
            if ctx.api_version == 0
            else u["upgrade_type"],
        )
        for u in req["feature_updates"]
    ]
    if not ctx.on_controller_listener and not cluster_allowed(ctx, Op.ALTER):
        outcome = FeatureUpdateOutcome(CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    else:
        outcome = await ctx.controller.update_features(updates, ctx.api_version >= 1 and req["validate_only"])
    resp: UpdateFeaturesResponse = {
        "throttle_time_ms": 0,
        "error_code": outcome.error_code,
        "error_message": outcome.error_message,
    }
    if ctx.api_version < 2:
        resp["results"] = [
            {"feature": u.feature, "error_code": outcome.error_code, "error_message": outcome.error_message}
            for u in updates
        ]
    return resp
