"""SaslAuthenticate: one SASL token each way, after SaslHandshake v1.

The connection's :class:`~zurau.broker.auth.session.SecuritySession` runs the mechanism; a failure
is answered SASL_AUTHENTICATION_FAILED with the reason and the connection is closed after
``connection.failed.authentication.delay.ms``. v1+ answers carry ``session_lifetime_ms``
(``connections.max.reauth.ms``; 0 when re-authentication is off).
"""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import IllegalSaslStateError
from zurau.protocol.messages import SaslAuthenticateRequest, SaslAuthenticateResponse

API_KEY = ApiKey.SASL_AUTHENTICATE


def handle(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    if ctx.session is None:
        return {"error_code": IllegalSaslStateError.code, "error_message": "no SASL on this connection",
                "auth_bytes": b"", "session_lifetime_ms": 0}
    return ctx.session.authenticate(bytes(req["auth_bytes"]), ctx.api_version)
