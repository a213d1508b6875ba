"""RenewDelegationToken (KIP-48): decided by the controller
(:mod:`zurau.metadata.controller.delegation_token_control`), after the connection check of
:func:`~zurau.broker.handlers._tokens.token_requests_allowed`. The caller must own or renew the
token; on a controller listener the forwarding node has checked that already."""

from __future__ import annotations

from typing import cast

from zurau.broker.handlers._tokens import change_token_period
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import RenewDelegationTokenRequest, RenewDelegationTokenResponse

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN


async def handle(ctx: RequestContext, req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
    change = ctx.controller.renew_delegation_token
    return cast(
        RenewDelegationTokenResponse,
        await change_token_period(ctx, change, bytes(req["hmac"]), req["renew_period_ms"]),
    )
