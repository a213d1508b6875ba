"""RenewDelegationToken (KIP-48): decided by the controller
(:mod:`zurau.metadata.controller.delegation_token_control`), after the connection check of
:func:`~zurau.broker.handlers._tokens.token_requests_allowed`. The caller must own or renew the
token; on a controller listener the forwarding node has checked that already."""

from __future__ import annotations

from zurau.broker.handlers._tokens import token_requests_allowed
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import DelegationTokenRequestNotAllowedError
from zurau.protocol.messages import RenewDelegationTokenRequest, RenewDelegationTokenResponse

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN


async def handle(ctx: RequestContext, req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
    if ctx.on_controller_listener:
        caller = None
    elif not token_requests_allowed(ctx):
        return {
            "error_code": DelegationTokenRequestNotAllowedError.code,
            "expiry_timestamp_ms": -1,
            "throttle_time_ms": 0,
        }
    else:
        caller = ctx.principal
    code, expiry = await ctx.controller.renew_delegation_token(
        bytes(req["hmac"]), req["renew_period_ms"], caller
    )
    return {"error_code": code, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}
