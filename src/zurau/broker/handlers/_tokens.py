"""What the delegation token handlers share (KIP-48).

Kafka's ``allowTokenRequests``: Create, Renew, Expire and DescribeDelegationToken are refused
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a connection authenticated with a delegation token, on a
PLAINTEXT listener, and on an SSL listener whose client presented no certificate (one-way TLS,
principal ``User:ANONYMOUS``). Only SASL-authenticated and TLS-client-authenticated connections may
ask for tokens.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from zurau.broker.auth.session import ANONYMOUS
from zurau.broker.request_context import RequestContext
from zurau.protocol.errors import DelegationTokenRequestNotAllowedError

#: the controller's renew or expire: (hmac, period in ms, caller or None) -> (error code, expiry)
TokenPeriodChange = Callable[[bytes, int, Any], Awaitable[tuple[int, int]]]


def token_requests_allowed(ctx: RequestContext) -> bool:
    session = ctx.session
    if session is None or session.security is None:
        return False  # a listener without security is PLAINTEXT
    if session.token_authenticated:
        return False
    protocol = session.security.protocol
    return not (protocol == "PLAINTEXT" or (protocol == "SSL" and session.principal == ANONYMOUS))


async def change_token_period(
    ctx: RequestContext, change: TokenPeriodChange, hmac: bytes, period_ms: int
) -> dict[str, int]:
    """Renew or Expire: the response (``error_code``, ``expiry_timestamp_ms``) of ``change``.

    A request on a controller listener was forwarded by a node that checked its caller already,
    so the controller is told no caller; otherwise the connection must be allowed to ask for
    tokens, and its principal is the caller whose ownership (or renewer right) the controller
    checks."""
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
    code, expiry = await change(hmac, period_ms, caller)
    return {"error_code": code, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}
