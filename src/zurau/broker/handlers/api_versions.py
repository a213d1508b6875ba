"""ApiVersions: the api keys and version ranges this broker serves (derived from the handlers), and
the cluster's features (KIP-584, v3+).

On a controller listener the APIs whose schema is ``broker_only`` are left out (the connection
refuses them there). An ApiVersions request newer than we serve is answered in v0 form by the
connection itself.

Features, by Kafka 4.2's rules (:mod:`zurau.metadata.features`):

* ``supported_features``: this node's range of every feature whose maximum is above 0; to a v3
  request, only those whose minimum is above 0 too (clients before KIP-1022's v4 fail to read a
  minimum of 0; Kafka's ``alterFeatureLevel0``). So v3 shows ``metadata.version`` alone.
* ``finalized_features``: the levels of the metadata image above 0 (min and max level both the
  level, as Kafka writes them), plus ``kraft.version`` from the quorum when it is 1.
* ``finalized_features_epoch``: the offset of the last record in this node's image (Kafka's
  ``image.highestOffsetAndEpoch().offset()``), -1 before it has any.
"""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.metadata.features import KRAFT_VERSION, SUPPORTED_FEATURES
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.codec import schema_for
from zurau.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseFinalizedFeatures,
    ApiVersionsResponseSupportedFeatures,
)

API_KEY = ApiKey.API_VERSIONS


def handle(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    keys = ctx.api_versions
    if ctx.on_controller_listener:
        keys = [k for k in keys if not schema_for(k["api_key"]).broker_only]
    resp: ApiVersionsResponse = {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}
    if ctx.api_version >= 3:
        image = ctx.image
        resp["supported_features"] = supported_features(ctx.api_version)
        resp["finalized_features"] = finalized_features(dict(image.features), kraft_version(ctx))
        resp["finalized_features_epoch"] = image.offset
    return resp


def kraft_version(ctx: RequestContext) -> int:
    quorum = ctx.services.quorum
    return quorum.kraft_version if quorum is not None else 0


def supported_features(api_version: int) -> list[ApiVersionsResponseSupportedFeatures]:
    return [
        {"name": s.name, "min_version": s.min_level, "max_version": s.max_level}
        for s in SUPPORTED_FEATURES.values()
        if s.max_level > 0 and (api_version >= 4 or s.min_level > 0)
    ]


def finalized_features(levels: dict[str, int], kraft: int) -> list[ApiVersionsResponseFinalizedFeatures]:
    if kraft > 0:
        levels[KRAFT_VERSION] = kraft
    return [
        {"name": name, "max_version_level": level, "min_version_level": level}
        for name, level in levels.items()
        if level > 0
    ]
