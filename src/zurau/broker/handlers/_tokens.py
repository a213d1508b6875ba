"""What the delegation token handlers share (KIP-48).

Kafka's ``allowTokenRequests``: Create, Renew, Expire and DescribeDelegationToken are refused
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a connection authenticated with a delegation token, on a
PLAINTEXT listener, and on an SSL listener whose client presented no certificate (one-way TLS,
principal ``User:ANONYMOUS``). Only SASL-authenticated and TLS-client-authenticated connections may
ask for tokens.
"""

from __future__ import annotations

from zurau.broker.auth.session import ANONYMOUS
from zurau.broker.request_context import RequestContext


def token_requests_allowed(ctx: RequestContext) -> bool:
    session = ctx.session
    if session is None or session.security is None:
        return False  # a listener without security is PLAINTEXT
    if session.token_authenticated:
        return False
    protocol = session.security.protocol
    return not (protocol == "PLAINTEXT" or (protocol == "SSL" and session.principal == ANONYMOUS))
