"""ApiVersions: the api keys and version ranges this broker serves (derived from the handlers).

On a controller listener the APIs whose schema is ``broker_only`` are left out (the connection
refuses them there). An ApiVersions request newer than we serve is answered in v0 form by the
connection itself.
"""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.codec import schema_for
from zurau.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_KEY = ApiKey.API_VERSIONS


def handle(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    keys = ctx.api_versions
    if ctx.on_controller_listener:
        keys = [k for k in keys if not schema_for(k["api_key"]).broker_only]
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}
