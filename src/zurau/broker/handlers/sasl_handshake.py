"""SaslHandshake: the client names its SASL mechanism; the answer lists the enabled ones.

The connection's :class:`~zurau.broker.auth.session.SecuritySession` decides (see there): on a
listener without SASL the answer is ILLEGAL_SASL_STATE; an unknown mechanism gets
UNSUPPORTED_SASL_MECHANISM and the connection closes; v0 switches the connection to raw tokens.
"""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import IllegalSaslStateError
from zurau.protocol.messages import SaslHandshakeRequest, SaslHandshakeResponse

API_KEY = ApiKey.SASL_HANDSHAKE


def handle(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    if ctx.session is None:
        return {"error_code": IllegalSaslStateError.code, "mechanisms": []}
    return ctx.session.handshake(req["mechanism"], ctx.api_version)
