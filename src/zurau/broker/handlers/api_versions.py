"""ApiVersions: the api keys and version ranges this broker serves (derived from the handlers).

An ApiVersions request newer than we serve is answered in v0 form by the connection itself.
"""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_KEY = ApiKey.API_VERSIONS


def handle(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    return {"error_code": 0, "api_keys": ctx.api_versions, "throttle_time_ms": 0}
