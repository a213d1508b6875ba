"""ExpireDelegationToken (KIP-48): decided by the controller
(:mod:`zurau.metadata.controller.delegation_token_control`), after the connection check of
:func:`~zurau.broker.handlers._tokens.token_requests_allowed`. A negative period removes the token
at once; connections already authenticated with it stay open until their session ends (see
:mod:`zurau.broker.auth.session`), new logins with it fail."""

from __future__ import annotations

from typing import cast

from zurau.broker.handlers._tokens import change_token_period
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import ExpireDelegationTokenRequest, ExpireDelegationTokenResponse

API_KEY = ApiKey.EXPIRE_DELEGATION_TOKEN


async def handle(ctx: RequestContext, req: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse:
    change = ctx.controller.expire_delegation_token
    return cast(
        ExpireDelegationTokenResponse,
        await change_token_period(ctx, change, bytes(req["hmac"]), req["expiry_time_period_ms"]),
    )
